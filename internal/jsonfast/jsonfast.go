// Package jsonfast holds the byte-level JSON writing the hot paths of api
// and invoice share, each piece held to encoding/json's output by its tests.
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
