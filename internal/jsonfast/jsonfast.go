// Package jsonfast holds the byte-level JSON code of the hot paths, each
// piece held to encoding/json by its tests and fuzz tests: the scan of a
// request body's shape before it is decoded (Scanner, Scan), finding one
// member of an object without decoding it (Member), reading the plain case
// of JSON in one pass (Plain), and writing a string as json.Marshal does
// (AppendString). It knows nothing of HTTP: api words
// its errors.
package jsonfast

import (
	"encoding/json"
	"unicode/utf8"
)

// AppendString appends s as json.Marshal writes a string and returns the
// extended buffer: printable ASCII other than '"', '\\', '<', '>' and '&'
// (which encoding/json escapes) is copied as is; any other string goes
// through encoding/json itself. It never fails.
func AppendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
