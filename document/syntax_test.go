package document

import (
	"regexp"
	"testing"
)

// The regular expressions isDigits and isAmount replace.
var (
	hsnRE    = regexp.MustCompile(`^[0-9]{4,8}$`)
	stateRE  = regexp.MustCompile(`^[0-9]{2}$`)
	amountRE = regexp.MustCompile(`^[0-9]{1,15}(\.[0-9]+)?$`)
)

// FuzzSyntaxMatchesRegexp checks the hand-written syntax checks against the
// regular expressions, for any string.
func FuzzSyntaxMatchesRegexp(f *testing.F) {
	for _, s := range []string{"", "0", "12", "123", "1234", "99999999", "123456789", "12a4", "07\n", "1.", ".5",
		"10.50", "123456789012345", "1234567890123456", "123456789012345.1", "1.2.3", "1e3", "-1", " 1", "١٢٣٤"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isDigits(s, 4, 8), hsnRE.MatchString(s); got != want {
			t.Errorf("isDigits(%q, 4, 8) = %v, the HSN expression %v", s, got, want)
		}
		if got, want := isDigits(s, 2, 2), stateRE.MatchString(s); got != want {
			t.Errorf("isDigits(%q, 2, 2) = %v, the state expression %v", s, got, want)
		}
		if got, want := isAmount(s), amountRE.MatchString(s); got != want {
			t.Errorf("isAmount(%q) = %v, the amount expression %v", s, got, want)
		}
	})
}
