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
