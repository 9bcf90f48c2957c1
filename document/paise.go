package document

import (
	"math"
	"math/bits"
	"slices"

	"github.com/shopspring/decimal"
)

// An item's amounts in paise, with integer arithmetic instead of
// shopspring/decimal's math/big, which allocates at every step (the cost
// is in docs/bench.md, "The batch route's CPU per invoice"). The operands
// are small enough for machine integers in every real case (quantity ×
// unit price below 2^63 ten-millionths of a rupee, i.e. a line below ₹922
// crore), and the results are the same decimals, value and exponent:
// decimal.Round(2) rounds half away from zero and every operand is
// non-negative, so it is (x + d/2) / d. A line beyond that takes the
// decimal path. TestPaiseMatchesDecimal checks the two paths agree.

// paise is a line's amounts in paise.
type paise struct {
	taxable, cgst, sgst, igst, total int64
}

// units returns s, a plain non-negative decimal string that parseAmount
// accepted (at most places decimals), as an integer of 10^-places units,
// and false when that does not fit an int64.
func units(s string, places int) (int64, bool) {
	var u uint64
	frac := -1
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			frac = 0
			continue
		}
		if frac >= 0 {
			frac++
		}
		hi, lo := bits.Mul64(u, 10)
		if hi != 0 {
			return 0, false
		}
		u = lo + uint64(s[i]-'0')
		if u < lo {
			return 0, false
		}
	}
	for frac = max(frac, 0); frac < places; frac++ {
		hi, lo := bits.Mul64(u, 10)
		if hi != 0 {
			return 0, false
		}
		u = lo
	}
	if u > math.MaxInt64 {
		return 0, false
	}
	return int64(u), true
}

// validRateHundredths holds validRates in hundredths of a percent.
var validRateHundredths = func() []int64 {
	out := make([]int64, len(ValidRates))
	for i, v := range ValidRates {
		u, ok := units(v, 2)
		if !ok {
			panic("invoice: rate " + v)
		}
		out[i] = u
	}
	return out
}()

// linePaise returns the amounts of a line of quantity q, unit price p and
// GST rate r (decimal strings parseAmount accepted, with at most
// maxQuantityDigits, maxPriceDigits and 2 places). ok is false when r is
// not a GST rate or the operands do not fit machine integers: the caller
// then judges and computes the line with decimals. A line it computes is
// below maxAmount (its taxable value is below 2^63 / 10^5 paise).
func linePaise(q, p, r string, interState bool) (out paise, ok bool) {
	qu, ok1 := units(q, maxQuantityDigits)
	pu, ok2 := units(p, maxPriceDigits)
	ru, ok3 := units(r, 2)
	if !ok1 || !ok2 || !ok3 || !slices.Contains(validRateHundredths, ru) {
		return paise{}, false
	}
	// quantity × price in 10^-(3+4) rupees; paise are 10^5 of them.
	hi, x := bits.Mul64(uint64(qu), uint64(pu))
	if hi != 0 || x > math.MaxInt64-50_000 {
		return paise{}, false
	}
	out.taxable = int64((x + 50_000) / 100_000) // < 2^63 / 10^5
	// taxable × rate in 10^-4 paise-percent: below 2^63/10^5 × 4000.
	t := out.taxable * ru
	if interState {
		out.igst = (t + 5_000) / 10_000 // ÷ 100 %, in paise
	} else {
		out.cgst = (t + 10_000) / 20_000 // half of it
		out.sgst = out.cgst
	}
	out.total = out.taxable + out.cgst + out.sgst + out.igst
	return out, true
}

// inPaise returns n paise as the decimal Round(2) makes (exponent -2).
func inPaise(n int64) decimal.Decimal { return decimal.New(n, -2) }

// setAmounts sets it's amounts from a, as prepareItem's decimal path sets
// them: exponent -2, and decimal.Zero for the taxes the place of supply
// does not levy.
func (it *Item) setAmounts(a paise, interState bool) {
	it.Taxable, it.Total = inPaise(a.taxable), inPaise(a.total)
	if interState {
		it.IGST, it.CGST, it.SGST = inPaise(a.igst), decimal.Zero, decimal.Zero
	} else {
		half := inPaise(a.cgst)
		it.CGST, it.SGST, it.IGST = half, half, decimal.Zero
	}
}

// totalsOf returns the totals of lines whose amounts in paise are sums,
// as the decimal additions from decimal.Zero make them: exponent -2 for
// the amounts any line has (taxable, total, and the taxes of the place of
// supply), decimal.Zero for the others.
func totalsOf(sums paise, interState bool) Totals {
	t := Totals{Taxable: inPaise(sums.taxable), Total: inPaise(sums.total), CGST: decimal.Zero, SGST: decimal.Zero, IGST: decimal.Zero}
	if interState {
		t.IGST = inPaise(sums.igst)
	} else {
		t.CGST, t.SGST = inPaise(sums.cgst), inPaise(sums.sgst)
	}
	return t
}
