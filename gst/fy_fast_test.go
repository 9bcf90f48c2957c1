package gst

import (
	"fmt"
	"testing"
)

// FY.String and FY.Short write what their Sprintf forms write, for every
// year an int can hold near the supported ones and at the edges.
func TestFYStringIsSprintf(t *testing.T) {
	t.Parallel()
	for _, f := range append([]int{-101, -1, 0, 1, 99, 100, 999, 1000, 9998, 9999, 10000, 123456}, rangeInts(1990, 2200)...) {
		if got, want := FY(f).String(), fmt.Sprintf("%d-%02d", f, (f+1)%100); got != want {
			t.Errorf("FY(%d).String() = %q, want %q", f, got, want)
		}
		if got, want := FY(f).Short(), fmt.Sprintf("%02d-%02d", f%100, (f+1)%100); got != want {
			t.Errorf("FY(%d).Short() = %q, want %q", f, got, want)
		}
	}
}

func rangeInts(lo, hi int) []int {
	var out []int
	for i := lo; i <= hi; i++ {
		out = append(out, i)
	}
	return out
}
