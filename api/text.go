package api

import (
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/invoiced/invoiced/internal/apperr"
)

// CheckText returns nil when every query name and value of r, every
// header value of r and every path parameter value (names[i] is
// values[i]'s name) is valid UTF-8 without a NUL. Otherwise it returns an
// apperr.Malformed error (400) whose code names the first bad parameter:
// invalid_<name>, the name lower-cased with '-' as '_' (query number →
// invalid_number, header Lease-Id → invalid_lease_id); invalid_query,
// invalid_header or invalid_path when the name is not 1 to 40 letters,
// digits, '-' or '_'. The message names the parameter, never quotes the
// value. GuardText (guards.go) calls it for every route of both routers,
// the outermost guard, so it runs after routing and before any handler:
// bytes PostgreSQL would refuse (invalid UTF-8 is SQLSTATE 22021, a NUL
// 22P05) are a client error naming the parameter rather than an internal
// error from deep inside a query.
func CheckText(r *http.Request, names, values []string) error {
	for i, v := range values {
		name := ""
		if i < len(names) {
			name = names[i]
		}
		if !cleanText(v) {
			return textError("path", "path parameter", name)
		}
	}
	for name, vs := range r.URL.Query() {
		if !cleanText(name) {
			return textError("query", "query parameter", "")
		}
		for _, v := range vs {
			if !cleanText(v) {
				return textError("query", "query parameter", name)
			}
		}
	}
	for name, vs := range r.Header {
		for _, v := range vs {
			if !cleanText(v) {
				return textError("header", "header", name)
			}
		}
	}
	return nil
}

// cleanText reports whether s is valid UTF-8 without a NUL.
func cleanText(s string) bool {
	return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}

// textError returns the error of parameter name (a where, "path", "query"
// or "header", of kind what) that is not clean text.
func textError(where, what, name string) error {
	code := "invalid_" + where
	if plainName(name) {
		code = "invalid_" + strings.ReplaceAll(strings.ToLower(name), "-", "_")
		return apperr.New(apperr.Malformed, code, what+" "+name+" must be UTF-8 text without NUL bytes")
	}
	return apperr.New(apperr.Malformed, code, "a "+what+" name or value is not UTF-8 text without NUL bytes")
}

// plainName reports whether name is 1 to 40 ASCII letters, digits, '-'
// or '_', fit to be part of an error code.
func plainName(name string) bool {
	if name == "" || len(name) > 40 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
