package document

import (
	"strconv"

	"github.com/shopspring/decimal"
)

// pow10 holds 10^0 … 10^18, every power of ten an int64 holds.
var pow10 = func() (p [19]int64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// Money returns d rounded half away from zero to two places, with both
// places written ("21.00", "-0.05", never "-0.00"): exactly what
// d.StringFixed(2) returns. Amounts whose coefficient has at most 16 digits
// and exponent is between -20 and 0, which is every amount Prepare works
// out, are formatted with integer arithmetic instead of math/big (issuing
// formats five to ten amounts per invoice; docs/bench.md has the cost).
func Money(d decimal.Decimal) string {
	exp := d.Exponent()
	if exp > 0 || exp < -20 || d.NumDigits() > 16 {
		return d.StringFixed(2)
	}
	c := d.CoefficientInt64()
	var cents int64
	if exp >= -2 {
		cents = c * pow10[exp+2] // at most 18 digits
	} else {
		div := pow10[-exp-2]
		q, r := c/div, c%div
		if r < 0 {
			r = -r
		}
		if 2*r >= div {
			if c < 0 {
				q--
			} else {
				q++
			}
		}
		cents = q
	}
	neg := cents < 0
	if neg {
		cents = -cents
	}
	b := make([]byte, 0, 24)
	if neg {
		b = append(b, '-')
	}
	b = strconv.AppendInt(b, cents/100, 10)
	f := cents % 100
	return string(append(b, '.', byte('0'+f/10), byte('0'+f%10)))
}
