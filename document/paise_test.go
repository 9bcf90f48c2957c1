package document

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shopspring/decimal"
)

// sameAmounts fails t unless a and b hold the same amounts, value and
// exponent (what Money, the items' JSON and the chain then write).
func sameAmounts(t *testing.T, what string, a, b Item) {
	t.Helper()
	x := []decimal.Decimal{a.Taxable, a.CGST, a.SGST, a.IGST, a.Total}
	y := []decimal.Decimal{b.Taxable, b.CGST, b.SGST, b.IGST, b.Total}
	for i := range x {
		if !x[i].Equal(y[i]) || x[i].Exponent() != y[i].Exponent() {
			t.Fatalf("%s: amount %d (taxable, cgst, sgst, igst, total): paise %s (exponent %d), decimals %s (exponent %d)",
				what, i, x[i], x[i].Exponent(), y[i], y[i].Exponent())
		}
	}
}

// checkPaise checks that a line computed in paise, when linePaise takes
// it, has the amounts the decimal path gives, and that an invoice of such
// lines has the same totals.
func checkPaise(t *testing.T, q, p, r string) {
	t.Helper()
	for _, inter := range []bool{false, true} {
		in := ItemInput{Description: "x", HSN: "0902", Quantity: q, UnitPrice: p, GSTRate: r}
		fast, a, ok, err := prepareItem(in, inter)
		if err != nil || !ok {
			return // refused, or judged with decimals only
		}
		slow := Item{Quantity: fast.Quantity, UnitPrice: fast.UnitPrice, GSTRate: fast.GSTRate}
		if err := slow.decimalAmounts(inter); err != nil {
			t.Fatalf("%s × %s at %s%%: paise %+v, decimals refuse: %v", q, p, r, a, err)
		}
		sameAmounts(t, fmt.Sprintf("%s × %s at %s%% (inter-state %v)", q, p, r, inter), fast, slow)
	}
}

// The amounts in paise are the decimal path's, value and exponent, at
// every rounding boundary and for random lines up to the path's limit.
func TestPaiseMatchesDecimal(t *testing.T) {
	t.Parallel()
	for _, c := range [][3]string{
		{"1", "0.0500", "5"}, {"1", "0.005", "18"}, {"3", "0.3333", "28"}, {"0.001", "0.0001", "0.1"},
		{"2", "10.00", "5"}, {"1", "15", "0.25"}, {"7.5", "99.9999", "7.5"}, {"999", "9999.9999", "40"},
		{"1", "0.01", "1.5"}, {"1", "0.1", "3"}, {"1", "0.3", "0.25"}, {"1", "0.02", "0.25"}, {"1", "1", "0"},
		{"922337203685.477", "10000", "28"}, {"999999999999999.999", "9", "18"}, {"1", "999999999999999.9999", "5"},
	} {
		checkPaise(t, c[0], c[1], c[2])
	}
	rng := rand.New(rand.NewPCG(15, 15))
	amount := func(maxInt int64, places int) string {
		s := fmt.Sprint(rng.Int64N(maxInt))
		if n := rng.IntN(places + 1); n > 0 {
			s += "."
			for range n {
				s += fmt.Sprint(rng.IntN(10))
			}
		}
		return s
	}
	for range 20000 {
		checkPaise(t, amount([]int64{10, 1000, 1e9}[rng.IntN(3)], maxQuantityDigits),
			amount([]int64{100, 1e5, 1e12}[rng.IntN(3)], maxPriceDigits), ValidRates[rng.IntN(len(ValidRates))])
	}
}

// FuzzPaise: wherever linePaise computes a line, the decimals agree.
func FuzzPaise(f *testing.F) {
	f.Add("2", "10.00", "5")
	f.Add("0.001", "0.0050", "0.25")
	f.Fuzz(func(t *testing.T, q, p, r string) {
		checkPaise(t, q, p, r)
	})
}

// An invoice of lines computed in paise has the totals the decimal
// additions give, value and exponent, both places of supply.
func TestPaiseTotals(t *testing.T) {
	t.Parallel()
	lines := []ItemInput{
		{Description: "a", HSN: "0902", Quantity: "2", UnitPrice: "10.00", GSTRate: "5"},
		{Description: "b", HSN: "2106", Quantity: "0.333", UnitPrice: "15.0050", GSTRate: "18"},
		{Description: "c", HSN: "2106", Quantity: "1", UnitPrice: "0", GSTRate: "0"},
	}
	for _, inter := range []bool{false, true} {
		var sums paise
		var want Totals
		for i, in := range lines {
			it, a, ok, err := prepareItem(in, inter)
			if err != nil || !ok {
				t.Fatalf("line %d: ok %v, %v", i, ok, err)
			}
			sums = paise{sums.taxable + a.taxable, sums.cgst + a.cgst, sums.sgst + a.sgst, sums.igst + a.igst, sums.total + a.total}
			if i == 0 {
				z := decimal.Zero
				want = Totals{Taxable: z, CGST: z, SGST: z, IGST: z, Total: z}
			}
			want = Totals{want.Taxable.Add(it.Taxable), want.CGST.Add(it.CGST), want.SGST.Add(it.SGST), want.IGST.Add(it.IGST), want.Total.Add(it.Total)}
		}
		got := totalsOf(sums, inter)
		sameAmounts(t, fmt.Sprintf("totals (inter-state %v)", inter),
			Item{Taxable: got.Taxable, CGST: got.CGST, SGST: got.SGST, IGST: got.IGST, Total: got.Total},
			Item{Taxable: want.Taxable, CGST: want.CGST, SGST: want.SGST, IGST: want.IGST, Total: want.Total})
	}
}
