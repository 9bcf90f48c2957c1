package qrsvg

import (
	"strings"
	"testing"
)

// finderAt reports whether rows hold a finder pattern (7×7: a dark ring, a
// light ring, a dark 3×3 core) with its top-left module at (x, y).
func finderAt(rows [][]bool, x, y int) bool {
	for dy := range 7 {
		for dx := range 7 {
			ring := max(abs(dx-3), abs(dy-3))
			if rows[y+dy][x+dx] != (ring != 2) {
				return false
			}
		}
	}
	return true
}

func abs(n int) int { return max(n, -n) }

// TestModulesAreAQRCode: the code of an IRP-sized signed QR (a JWT of
// about 1,100 characters) is square, 17 + 4 × version modules wide, with
// the three finder patterns and the timing patterns a reader locks on to.
func TestModulesAreAQRCode(t *testing.T) {
	t.Parallel()
	text := "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9." + strings.Repeat("eyJkYXRhIjoie1wiU2VsbGVyR3N0aW5cIjpcIjI3QUFQRlUwOTM5RjFaVlwifSJ9", 16) + ".sig"
	rows, err := Modules(text)
	if err != nil {
		t.Fatal(err)
	}
	n := len(rows)
	if (n-17)%4 != 0 || n < 21 || n > 177 {
		t.Fatalf("%d modules wide: no QR version", n)
	}
	for _, r := range rows {
		if len(r) != n {
			t.Fatalf("not square: a row of %d in %d", len(r), n)
		}
	}
	if !finderAt(rows, 0, 0) || !finderAt(rows, n-7, 0) || !finderAt(rows, 0, n-7) || finderAt(rows, n-7, n-7) {
		t.Fatal("finder patterns missing, or one at the bottom right")
	}
	for i := 8; i < n-8; i++ {
		if rows[6][i] != (i%2 == 0) || rows[i][6] != (i%2 == 0) {
			t.Fatalf("timing pattern broken at %d", i)
		}
	}
	svg, err := SVG(text, `IRN "x" & <y>`)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(svg, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 `) || !strings.Contains(svg, `aria-label="IRN &quot;x&quot; &amp; &lt;y&gt;"`) || !strings.HasSuffix(svg, `"/></svg>`) {
		t.Fatalf("svg: %.200s…", svg)
	}
	if again, _ := SVG(text, `IRN "x" & <y>`); again != svg {
		t.Fatal("the same text drew a different code")
	}
	if _, err := Modules(strings.Repeat("x", 4000)); err == nil {
		t.Fatal("a text too long for any QR code was drawn")
	}
}
