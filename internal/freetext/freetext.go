// Package freetext decides which characters the free-text fields of
// invoiced (seller names, shop labels, buyer names, item descriptions,
// cancellation reasons) may hold. Those texts are printed by the command
// line, rendered on receipts and in spreadsheets, and hashed into the
// chain, so anything that is invisible or that steers a terminal or the
// text direction is refused rather than escaped on every rendering.
package freetext

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Joiners that Indic scripts need inside conjuncts (and emoji sequences
// use): the only format characters allowed, and only between two
// non-ASCII characters, so they cannot hide inside an ASCII word.
const (
	zwnj = '\u200c'
	zwj  = '\u200d'
)

// Problem returns "" when s may be stored as free text, otherwise a short
// description of the first offending character and its byte offset, for an
// error message. Refused: invalid UTF-8; control characters (C0, DEL, C1:
// terminal escapes, newlines, NUL); format characters (Unicode category
// Cf: bidi embeddings, overrides, isolates and marks, zero-width space,
// word joiner, soft hyphen, byte-order mark, tag characters) except ZWNJ
// and ZWJ between non-ASCII characters; line and paragraph separators;
// and private-use and unassigned code points.
func Problem(s string) string {
	prev := rune(-1)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 {
			return fmt.Sprintf("invalid UTF-8 at byte %d", i)
		}
		if !allowed(r, prev, s[i+n:]) {
			return fmt.Sprintf("a control or invisible character (U+%04X) at byte %d", r, i)
		}
		prev = r
		i += n
	}
	return ""
}

func allowed(r, prev rune, rest string) bool {
	switch {
	case r == zwnj || r == zwj:
		next, _ := utf8.DecodeRuneInString(rest)
		return prev >= utf8.RuneSelf && next >= utf8.RuneSelf && next != utf8.RuneError && !unicode.Is(unicode.Cf, next)
	case unicode.Is(unicode.Cc, r), unicode.Is(unicode.Cf, r),
		unicode.Is(unicode.Zl, r), unicode.Is(unicode.Zp, r),
		unicode.Is(unicode.Co, r), unicode.Is(unicode.Cs, r):
		return false
	case r == ' ':
		return true
	}
	return unicode.IsGraphic(r) // assigned letters, marks, numbers, punctuation, symbols, spaces
}

// Visible returns s with every character Problem would refuse written as
// a Go escape (\x1b, \u202e), and invalid bytes as \xNN: for printing text
// stored before these rules (or written to the database directly) on a
// terminal without letting it move the cursor, recolour or reorder the
// output.
func Visible(s string) string {
	if Problem(s) == "" {
		return s
	}
	var b strings.Builder
	prev := rune(-1)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case !allowed(r, prev, s[i+n:]):
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		prev = r
		i += n
	}
	return b.String()
}
