package gst

import (
	"errors"
	"strings"
	"testing"
)

func TestParseGSTIN(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    GSTIN  // "" when refused
		wantMsg string // part of the message when refused
	}{
		// The valid examples of gst.md.
		{in: "27AAPFU0939F1ZV", want: "27AAPFU0939F1ZV"},
		{in: "29AAGCB7383J1Z4", want: "29AAGCB7383J1Z4"},
		{in: "24AAQCA8719H1ZC", want: "24AAQCA8719H1ZC"},
		{in: "05AAACG2115R1ZN", want: "05AAACG2115R1ZN"},
		{in: "29AABCR1718E1ZL", want: "29AABCR1718E1ZL"},
		// Lower case and surrounding white space are normalised.
		{in: "27aapfu0939f1zv", want: "27AAPFU0939F1ZV"},
		{in: "  27AAPFU0939F1ZV\t\n", want: "27AAPFU0939F1ZV"},
		// The common sample that fails the check.
		{in: "01AABCE2207R1Z5", wantMsg: "check character should be V, not 5"},
		{in: "27AAPFU0939F1ZW", wantMsg: "check character should be V, not W"},
		// Look-alikes: Cyrillic А, fullwidth 2, Latin small ligature.
		{in: "27\u0410APFU0939F1ZV", wantMsg: `non-ASCII character '\u0410'`},
		{in: "\uff127AAPFU0939F1ZV", wantMsg: "non-ASCII"},
		{in: "27AAPFU0939F1Z\xff", wantMsg: "non-ASCII"},
		{in: "27AAPFU0939F1ZV\u00a0", wantMsg: "non-ASCII"}, // no-break space is not trimmed
		// Length.
		{in: "", wantMsg: "empty"},
		{in: "   ", wantMsg: "empty"},
		{in: "27AAPFU0939F1Z", wantMsg: "has 14 characters"},
		{in: "27AAPFU0939F1ZVV", wantMsg: "has 16 characters"},
		{in: "27AAPFU 0939F1ZV", wantMsg: "has 16 characters"},
		// Shape.
		{in: "2AAAPFU0939F1ZV", wantMsg: "character 2 ('A') must be a digit"},
		{in: "27AAPFU0939F0ZV", wantMsg: "character 13 ('0') must be a letter or a digit 1-9"},
		{in: "27AAPFU0939F1-V", wantMsg: "character 14 ('-') must be a letter or digit"},
		{in: "27AAPFU-939F1ZV", wantMsg: "character 8 ('-') must be a letter or digit"},
		// State code.
		{in: "00AAPFU0939F1ZV", wantMsg: "state code 00"},
		{in: "39AAPFU0939F1ZV", wantMsg: "state code 39"},
		{in: "96AAPFU0939F1ZV", wantMsg: "state code 96"},
	}
	for _, tt := range tests {
		g, err := ParseGSTIN(tt.in)
		if tt.want != "" {
			if err != nil || g != tt.want {
				t.Fatalf("ParseGSTIN(%q) = %q, %v; want %q", tt.in, g, err, tt.want)
			}
			continue
		}
		if err == nil || !errors.Is(err, ErrInvalidGSTIN) || !strings.Contains(err.Error(), tt.wantMsg) {
			t.Fatalf("ParseGSTIN(%q) = %q, %v; want ErrInvalidGSTIN containing %q", tt.in, g, err, tt.wantMsg)
		}
	}
}

func TestParseGSTINStateCodes(t *testing.T) {
	t.Parallel()
	for n := 0; n <= 99; n++ {
		first14 := string([]byte{byte('0' + n/10), byte('0' + n%10)}) + "AAPFU0939F1Z"
		c, err := CheckChar(first14)
		if err != nil {
			t.Fatalf("CheckChar(%q): %v", first14, err)
		}
		_, err = ParseGSTIN(first14 + string(c))
		if want := n >= 1 && n <= 38 || n == 97 || n == 99; (err == nil) != want {
			t.Fatalf("state code %02d: ParseGSTIN error %v, want accepted %v", n, err, want)
		}
	}
}

func TestGSTINStateCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		g    GSTIN
		want string
	}{
		{"27AAPFU0939F1ZV", "27"},
		{"05AAACG2115R1ZN", "05"},
		{"", ""},
		{"2", ""},
	}
	for _, tt := range tests {
		if got := tt.g.StateCode(); got != tt.want {
			t.Fatalf("GSTIN(%q).StateCode() = %q, want %q", tt.g, got, tt.want)
		}
	}
}

func TestCheckChar(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want byte // 0 when refused
	}{
		{"27AAPFU0939F1Z", 'V'}, // the worked example: sum 221
		{"29AAGCB7383J1Z", '4'},
		{"01AABCE2207R1Z", 'V'}, // the sample 01AABCE2207R1Z5 has the wrong one
		{"00000000000000", '0'},
		{"27aapfu0939f1z", 0},
		{"27AAPFU0939F1", 0},
		{"27AAPFU0939F1ZV", 0},
		{"27AAPFU0939F/Z", 0},
	}
	for _, tt := range tests {
		got, err := CheckChar(tt.in)
		if tt.want == 0 {
			if !errors.Is(err, ErrInvalidGSTIN) {
				t.Fatalf("CheckChar(%q) = %q, %v; want ErrInvalidGSTIN", tt.in, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Fatalf("CheckChar(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func FuzzParseGSTIN(f *testing.F) {
	for _, s := range []string{
		"27AAPFU0939F1ZV", "29aagcb7383j1z4", " 24AAQCA8719H1ZC ", "01AABCE2207R1Z5",
		"27\u0410APFU0939F1ZV", "", "99ZZZZZZZZZZZZZ", "97000000000010Z",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		g, err := ParseGSTIN(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidGSTIN) {
				t.Fatalf("ParseGSTIN(%q) error %v is not ErrInvalidGSTIN", s, err)
			}
			return
		}
		if len(g) != 15 {
			t.Fatalf("ParseGSTIN(%q) = %q: %d bytes", s, g, len(g))
		}
		for i := range len(g) {
			if c := g[i]; !isASCIIDigit(c) && !isASCIIUpper(c) {
				t.Fatalf("ParseGSTIN(%q) = %q: byte %d is %q", s, g, i, c)
			}
		}
		if again, err := ParseGSTIN(string(g)); err != nil || again != g {
			t.Fatalf("ParseGSTIN(%q) = %q, but it re-parses to %q, %v", s, g, again, err)
		}
		if c, err := CheckChar(string(g[:14])); err != nil || c != g[14] {
			t.Fatalf("ParseGSTIN(%q) = %q, but CheckChar gives %q, %v", s, g, c, err)
		}
	})
}
