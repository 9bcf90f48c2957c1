// Package api is invoiced's HTTP interface for point-of-sale systems: a
// Server whose Handler serves the routes described in openapi.yaml (also
// served at /openapi.yaml), authenticating requests with the API keys of
// package apikey.
//
// Every error answer has the body {"error":{"code":…,"message":…}}; the
// mapping from errors to statuses lives in errors.go alone. Request bodies
// are decoded strictly (decode.go, internal/jsonfast, request_bodies.go): amounts
// are decimal strings, unknown fields are refused, and nothing a client
// sends yields a 5xx. An invoice request is validated and priced before any
// transaction, so a refused request never consumes a number.
package api
