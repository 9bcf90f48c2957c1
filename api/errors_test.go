package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"
	"github.com/labstack/echo/v4"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err      error
		status   int
		code     string
		internal bool
	}{
		{errors.New("boom: secret detail"), 500, "internal_error", true},
		{fmt.Errorf("x: %w", &pgconn.PgError{Code: "23505"}), 500, "internal_error", true},
		{fmt.Errorf("x: %w", &pgconn.PgError{Code: "08006"}), 503, "database_unavailable", false},
		{fmt.Errorf("x: %w", &pgconn.PgError{Code: "57P01"}), 503, "database_unavailable", false},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), 503, "database_unavailable", false},
		{fmt.Errorf("x: %w", puddle.ErrClosedPool), 503, "database_unavailable", false},
		{fmt.Errorf("invoice: begin: %w", pgconn.ErrConnClosed), 503, "database_unavailable", false},
		{fmt.Errorf("read: %w", io.ErrUnexpectedEOF), 503, "database_unavailable", false},
		{series.ErrLockTimeout, 503, "series_busy", false},
		{invoice.ErrKeyReused, 422, "idempotency_key_reused", false},
		{invoice.ErrKeyInProgress, 409, "idempotency_key_in_progress", false},
		{series.ErrDateOutOfOrder, 409, "date_out_of_order", false},
		{invoice.ErrNotFound, 404, "invoice_not_found", false},
		{apikey.ErrForbidden, 403, "forbidden", false},
		{apikey.ErrUnauthorized, 401, "unauthorized", false},
		{errNotJSON, 415, "unsupported_media_type", false},
		{errBodyTooLarge, 413, "body_too_large", false},
		{echo.ErrNotFound, 404, "not_found", false},
		{echo.ErrMethodNotAllowed, 405, "method_not_allowed", false},
		{echo.ErrStatusRequestEntityTooLarge, 413, "body_too_large", false},
	}
	for _, tc := range cases {
		p, internal := classify(tc.err)
		if p.status != tc.status || p.code != tc.code || internal != tc.internal {
			t.Errorf("%v: got %d %s internal=%v, want %d %s %v", tc.err, p.status, p.code, internal, tc.status, tc.code, tc.internal)
		}
		if internal && p.message != errInternal.Message {
			t.Errorf("%v: internal message %q leaks", tc.err, p.message)
		}
	}
	if len(statusOf) != 11 || statusOf[0] != http.StatusInternalServerError {
		t.Fatalf("status table %v", statusOf)
	}
}

func TestInternalErrorLogged(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	s := New(Config{Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	s.e.GET("/boom", func(c echo.Context) error { panic("secret detail") })
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/boom", nil)
	req.Header.Set(headerRequestID, "req-123")
	s.Handler().ServeHTTP(rec, req)
	if rec.Code != 500 || rec.Body.String() != `{"error":{"code":"internal_error","message":"an internal error occurred; it has been logged"}}` {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	id := rec.Header().Get(headerRequestID)
	if log := buf.String(); !strings.Contains(log, "request_id="+id) || !strings.Contains(log, "client_request_id=req-123") || !strings.Contains(log, "secret detail") {
		t.Fatalf("log %q", log)
	}
}
