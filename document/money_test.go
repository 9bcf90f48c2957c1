package document_test

import (
	"testing"

	"github.com/invoiced/invoiced/document"
	"github.com/shopspring/decimal"
)

func TestMoney(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"0": "0.00", "21": "21.00", "0.5": "0.50", "1.005": "1.01", "1.0049": "1.00", "-1.005": "-1.01",
		"-0.004": "0.00", "-0.005": "-0.01", "2.675": "2.68", "99999999999999.995": "100000000000000.00",
		"123456789012345678901234567890.125": "123456789012345678901234567890.13", "1e3": "1000.00",
		"0.000000000000000000000000005": "0.00",
	} {
		if got := document.Money(decimal.RequireFromString(in)); got != want {
			t.Errorf("Money(%s) = %s, want %s", in, got, want)
		}
	}
}

// FuzzMoney: Money agrees with shopspring's StringFixed(2) everywhere.
func FuzzMoney(f *testing.F) {
	for _, s := range []struct {
		c   int64
		exp int8
	}{{0, 0}, {2100, -2}, {-5, -3}, {4495, -3}, {-9223372036854775808, -5}, {9223372036854775807, -20}, {1, 5}, {123, -25}} {
		f.Add(s.c, s.exp)
	}
	f.Fuzz(func(t *testing.T, c int64, exp int8) {
		d := decimal.New(c, int32(exp))
		if got, want := document.Money(d), d.StringFixed(2); got != want {
			t.Fatalf("Money(%s) = %s, want %s", d, got, want)
		}
	})
}
