// Package apikey holds invoiced's API keys: their shape
// ("ik_<prefix>_<secret>"), their scopes and series restrictions, creating,
// listing and revoking them, and authenticating a bearer key to the
// Principal it acts for. The HTTP API (package api), the console and the
// operator's CLI (`invoiced keys`) all use it; how a request's key is
// cached and rate-limited is the API's business.
//
// A key is "ik_" + 8 hex characters (the public prefix, the lookup key) +
// "_" + 32 base32 characters (160 random bits, the secret). Only the
// prefix and the SHA-256 of the secret are stored, so the string Create
// returns is the only copy of the key.
package apikey
