// Package dbfault classifies database errors that mean "the database is not
// available now" rather than "the request was wrong": the HTTP layer answers
// them 503 with Retry-After, and group commit does not retry a batch member
// by member for them.
package dbfault

import (
	"context"
	"errors"
	"io"
	"net"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"
)

// Unavailable reports whether err means the database cannot be reached or
// did not answer in time: connection failures and dropped connections,
// SQLSTATE class 08, server shutdown (57P01–57P03), statement cancellation
// (57014), too many connections (53300), and deadlines (pool acquire
// included).
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return len(pg.Code) == 5 && pg.Code[:2] == "08" ||
			pg.Code == "57P01" || pg.Code == "57P02" || pg.Code == "57P03" || pg.Code == "57014" || pg.Code == "53300"
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	// A pooled connection the server dropped fails with "conn closed"
	// (pgconn.ErrConnClosed) before anything was sent: safe to retry.
	return pgconn.Timeout(err) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, puddle.ErrClosedPool) ||
		errors.Is(err, pgconn.ErrConnClosed) || pgconn.SafeToRetry(err) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
