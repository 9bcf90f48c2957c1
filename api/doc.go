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
//
// What a request costs follows what it asks for: bodies grow with the
// bytes received and every buffer is taken from one budget of in-flight
// bytes (budget.go); lists are pages bounded by bytes, read under a list
// slot of the expensive-read budget (pages.go, slots.go); reads plan index
// walks whatever the statistics (internal/db's ReadTx). Every route is
// registered through the guard chain of its class (guards.go).
package api
