package freetext

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestProblem(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "Masala chai", "Chai & Co <Pune>", "चाय की दुकान", "क्\u200dष", "ര\u200cമ", "நன்றி", "₹ 10", "Café", "👩\u200d🍳", "a\u00a0b"} {
		if p := Problem(s); p != "" {
			t.Errorf("%q refused: %s", s, p)
		}
	}
	for _, s := range []string{"a\x00", "a\tb", "a\nb", "\x1b[2J", "a\x7f", "a\u0085", "\u009b", "\u202e", "\u202a", "\u2066", "\u2069",
		"\u200e", "\u200f", "\u061c", "\u200b", "\u2060", "\ufeff", "\u00ad", "\u2028", "\u2029", "\U000e0041", "\ue000", "\U0010ffff",
		"Ch\u200dai", "\u200dक", "क\u200d", "क\u200d\u200dष", "\xff", "a\xc3"} {
		if p := Problem(s); p == "" {
			t.Errorf("%q accepted", s)
		} else if !strings.Contains(p, "byte") {
			t.Errorf("%q: %q does not say where", s, p)
		}
	}
}

// FuzzProblem: Problem never panics, and whatever it accepts is valid
// UTF-8 without control characters.
func FuzzProblem(f *testing.F) {
	f.Add("चाय\u200d")
	f.Add("\x1b]8;;x\x07")
	f.Fuzz(func(t *testing.T, s string) {
		if Problem(s) != "" {
			return
		}
		if !utf8.ValidString(s) {
			t.Fatalf("%q accepted: invalid UTF-8", s)
		}
		for _, r := range s {
			if r < 0x20 || (r >= 0x7f && r < 0xa0) || unicode.In(r, unicode.Bidi_Control) {
				t.Fatalf("%q accepted with U+%04X", s, r)
			}
		}
	})
}

func TestVisible(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"चाय":             "चाय",
		"\x1b[31mred":     `\x1b[31mred`,
		"a\u202eb":        `a\u202eb`,
		"Ch\u200dai":      `Ch\u200dai`,
		"bad\xff":         `bad\xff`,
		"line\nbreak\x00": `line\nbreak\x00`,
	} {
		if got := Visible(in); got != want {
			t.Errorf("Visible(%q) = %q, want %q", in, got, want)
		}
	}
}
