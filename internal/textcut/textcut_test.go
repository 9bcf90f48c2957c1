package textcut

import "testing"

func TestTo(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"", 3, ""},
		{"abc", 3, "abc"},
		{"abcd", 3, "abc…"},
		{"aé", 2, "a…"}, // é is two bytes: cut before it, not inside it
		{"éé", 3, "é…"},
		{"é", 1, "…"},
	} {
		if got := To(c.s, c.n); got != c.want {
			t.Errorf("To(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}
