package api

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/labstack/echo/v4"
)

var requestIDShape = regexp.MustCompile(`^[0-9a-f]{32}$`)

// TestRequestIDsAreRandom: the server's request ids are 128 random bits,
// so that consecutive ids say nothing about how many requests others
// made; a client's own X-Request-Id is logged beside the server's, not
// instead of it.
func TestRequestIDsAreRandom(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	s := New(Config{Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	s.e.GET("/boom", func(c echo.Context) error { panic("secret detail") })
	seen := map[string]bool{}
	for range 50 {
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
		id := rec.Header().Get(headerRequestID)
		if !requestIDShape.MatchString(id) || seen[id] {
			t.Fatalf("request id %q: want 32 hex characters, never repeated", id)
		}
		seen[id] = true
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/boom", nil)
	req.Header.Set(headerRequestID, "pos-7\x1b[31m")
	s.Handler().ServeHTTP(rec, req)
	id := rec.Header().Get(headerRequestID)
	if !requestIDShape.MatchString(id) {
		t.Fatalf("with a client's X-Request-Id the answer carries %q, want the server's own", id)
	}
	req = httptest.NewRequest("GET", "/boom", nil)
	req.Header.Set(headerRequestID, "pos-till-7")
	rec = httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	id = rec.Header().Get(headerRequestID)
	if log := buf.String(); !strings.Contains(log, "request_id="+id) || !strings.Contains(log, "client_request_id=pos-till-7") {
		t.Fatalf("log %q lacks request_id=%s and client_request_id=pos-till-7", log, id)
	}
	if strings.Contains(buf.String(), "\x1b") {
		t.Fatalf("a client's unprintable X-Request-Id reached the log: %q", buf.String())
	}
}

// TestNoSniffEverywhere: every answer, success or error, JSON, YAML or
// HTML, says X-Content-Type-Options: nosniff.
func TestNoSniffEverywhere(t *testing.T) {
	t.Parallel()
	s := New(Config{})
	for _, r := range []struct{ method, path string }{
		{"GET", "/healthz"}, {"GET", "/openapi.yaml"}, {"GET", "/nowhere"}, {"DELETE", "/healthz"},
		{"GET", "/v1/series"}, {"GET", "/r/not-an-id"}, {"POST", "/v1/series"},
	} {
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest(r.method, r.path, nil))
		if got := rec.Header().Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s %s (%d): X-Content-Type-Options %q", r.method, r.path, rec.Code, got)
		}
	}
}

// TestReceiptCannotBeFramed: the receipt page forbids framing, in CSP and
// in the older header.
func TestReceiptCannotBeFramed(t *testing.T) {
	t.Parallel()
	e := setup(t)
	inv := e.mustIssue("CH1", "")
	for _, path := range []string{"/r/" + inv.PublicID, "/r/aaaaaaaaaaaaaaaaaaaaaaaaaa"} {
		r := e.do("GET", path, "", "")
		if csp := r.header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s: Content-Security-Policy %q lacks frame-ancestors 'none'", path, csp)
		}
		if xfo := r.header.Get("X-Frame-Options"); xfo != "DENY" {
			t.Errorf("%s: X-Frame-Options %q, want DENY", path, xfo)
		}
	}
	if r := e.do("GET", "/r/"+inv.PublicID, "", ""); r.status != http.StatusOK {
		t.Fatalf("receipt: %d", r.status)
	}
}

// TestErrorMessagesClipWhatTheyEcho: messages that quote what the client
// sent stay short and valid UTF-8 however long it was.
func TestErrorMessagesClipWhatTheyEcho(t *testing.T) {
	t.Parallel()
	e := setup(t)
	long := strings.Repeat("ज", 20000) // 3 bytes each: cuts must respect characters
	for name, r := range map[string]resp{
		"unknown field": e.do("POST", "/v1/series/CH1/invoices", e.all, `{"`+long+`":1}`),
		"buyer GSTIN":   e.do("POST", "/v1/series/CH1/invoices", e.all, `{"buyer":{"gstin":"`+long+`"},"items":[{"description":"x","hsn":"0902","quantity":"1","unit_price":"1","gst_rate":"5"}]}`),
		"series format": e.do("POST", "/v1/series", e.all, `{"code":"X1","doc_type":"invoice","format":"`+strings.Repeat("A", 7000)+`"}`),
		"doc type":      e.do("POST", "/v1/series", e.all, `{"code":"X1","doc_type":"`+strings.Repeat("é", 3000)+`","format":"X1/{SEQ:4}"}`),
		"series code":   e.do("GET", "/v1/series/"+strings.Repeat("C", 3000)+"/invoices", e.all, ""),
	} {
		if r.status < 400 || r.status >= 500 {
			t.Errorf("%s: status %d", name, r.status)
		}
		var body errorBody
		if err := json.Unmarshal(r.body, &body); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if m := body.Error.Message; len(m) > maxMessageBytes+len("…") || !utf8.ValidString(m) || strings.ContainsRune(m, utf8.RuneError) {
			t.Errorf("%s: message of %d bytes (valid UTF-8: %v): %.80q…", name, len(m), utf8.ValidString(m), m)
		}
	}
}
