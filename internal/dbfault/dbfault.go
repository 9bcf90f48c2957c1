// Package dbfault answers whether a database error means "the database is
// not available now" rather than "the request was wrong": the HTTP layer
// answers them 503 with Retry-After, and group commit does not retry a
// batch member by member for them. The knowledge is db.Classify's; this
// package remains until its callers read the class themselves.
package dbfault

import "github.com/invoiced/invoiced/internal/db"

// Unavailable reports whether err is of class db.Unavailable (no
// connection, no answer in time, the session ended) or db.OutcomeUnknown
// (the answer to a COMMIT was lost).
func Unavailable(err error) bool {
	c := db.Classify(err)
	return c == db.Unavailable || c == db.OutcomeUnknown
}
