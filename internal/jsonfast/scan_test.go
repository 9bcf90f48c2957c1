package jsonfast

import (
	"errors"
	"fmt"
	"testing"
)

// TestScanInChunksAgreesWithWhole: a body scanned as it arrives, cut at
// any byte, fails or passes exactly as the body scanned whole, also when
// a cut falls inside a string, an escape or a key.
func TestScanInChunksAgreesWithWhole(t *testing.T) {
	t.Parallel()
	limits := Limits{ByKey: map[string]int{"invoices": 3, "items": 2}, Other: 1}
	for _, body := range []string{
		`{"invoices":[{"items":[{},{}]},{"items":[{}]}]}`,
		`{"invoices":[{"items":[{},{},{}]}]}`,
		`{"invoices":[{"items":[]},{"items":[]},{"items":[]},{"items":[]}]}`,
		`{"invoices":[{"a\"b":"x\\\"y","items":[1,2]}],"other":[1,2]}`,
		`{"invoices":[{"items":["a,b","c"]}]}`,
		`{"k":"v","K":"w"}`,
		`{"\u0069tems":[]}`,
		`[[[[[[[[[1]]]]]]]]]`,
		`{"items":[{"x":[1]},{"y":[2]}],"z":1}`,
		`{"s":"unterminated`,
	} {
		want := fmt.Sprint(NewScanner(limits).Scan([]byte(body)))
		for cut := 1; cut < len(body); cut++ {
			sc := NewScanner(limits)
			err := sc.Scan([]byte(body[:cut]))
			if err == nil {
				err = sc.Scan([]byte(body))
			}
			if got := fmt.Sprint(err); got != want {
				t.Errorf("%s cut at %d: %s, whole: %s", body, cut, got, want)
			}
		}
	}
	var long *ArrayTooLong
	if err := NewScanner(limits).Scan([]byte(`{"invoices":[{"items":[{"a":1},{"b":2},{"c":3}]}]}`)); !errors.As(err, &long) || long.Key != "items" || long.Max != 2 {
		t.Fatalf("items past its limit: %v, want the array items named with its limit 2", err)
	}
}

// TestScanRefusesOneKeyTooMany: an object of MaxKeys keys passes, one of
// MaxKeys+1 is a TooManyKeys ShapeError naming the key too many, also
// when more keys follow it.
func TestScanRefusesOneKeyTooMany(t *testing.T) {
	t.Parallel()
	object := func(n int, tail string) []byte {
		b := []byte("{")
		for i := range n {
			if i > 0 {
				b = append(b, ',')
			}
			b = fmt.Appendf(b, `"k%d":1`, i)
		}
		return append(b, tail+"}"...)
	}
	if err := Scan(object(MaxKeys, ""), 10); err != nil {
		t.Fatalf("%d keys: %v", MaxKeys, err)
	}
	for _, tail := range []string{"", `,"k0x":1`} {
		body := object(MaxKeys+1, tail)
		var se *ShapeError
		err := Scan(body, 10)
		if !errors.As(err, &se) || se.Problem != TooManyKeys || se.Key != fmt.Sprintf("k%d", MaxKeys) {
			t.Errorf("%s: %v, want TooManyKeys at k%d", body, err, MaxKeys)
		}
	}
}
