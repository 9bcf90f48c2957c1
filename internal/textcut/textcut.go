// Package textcut shortens text that a client sent before an error message
// echoes it, so that a message stays readable and bounded.
package textcut

import "unicode/utf8"

// Echo is how many bytes of a client's value an error message echoes.
const Echo = 40

// To returns s cut to at most n bytes on a character boundary, with "…"
// appended when it was longer.
func To(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
