// Package inwords writes amounts of rupees in English words with Indian
// numbering (thousand, lakh, crore), as Indian invoices print the total:
// "Rupees One Lakh Twenty Three Thousand Four Hundred Fifty Six and
// Seventy Eight Paise Only".
package inwords

import (
	"strings"

	"github.com/shopspring/decimal"
)

var (
	ones = [...]string{"", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine", "Ten",
		"Eleven", "Twelve", "Thirteen", "Fourteen", "Fifteen", "Sixteen", "Seventeen", "Eighteen", "Nineteen"}
	tens = [...]string{"", "", "Twenty", "Thirty", "Forty", "Fifty", "Sixty", "Seventy", "Eighty", "Ninety"}
)

// Number returns n in words with Indian grouping: 0 is "Zero", 123456 is
// "One Lakh Twenty Three Thousand Four Hundred Fifty Six", and groups above
// a crore repeat ("One Lakh Crore" for 10^12). n must not be negative.
func Number(n int64) string {
	if n < 0 {
		panic("inwords: negative number")
	}
	if n == 0 {
		return "Zero"
	}
	var parts []string
	appendWords(&parts, n)
	return strings.Join(parts, " ")
}

// appendWords appends the words of n > 0.
func appendWords(parts *[]string, n int64) {
	if c := n / 10_000_000; c > 0 {
		appendWords(parts, c)
		*parts = append(*parts, "Crore")
		n %= 10_000_000
	}
	for _, g := range []struct {
		size int64
		name string
	}{{100_000, "Lakh"}, {1000, "Thousand"}, {100, "Hundred"}} {
		if q := n / g.size; q > 0 {
			appendBelowHundred(parts, q)
			*parts = append(*parts, g.name)
			n %= g.size
		}
	}
	appendBelowHundred(parts, n)
}

// appendBelowHundred appends the words of 0 ≤ n < 100 (nothing for 0).
func appendBelowHundred(parts *[]string, n int64) {
	switch {
	case n == 0:
	case n < 20:
		*parts = append(*parts, ones[n])
	default:
		*parts = append(*parts, tens[n/10])
		if n%10 > 0 {
			*parts = append(*parts, ones[n%10])
		}
	}
}

// Rupees returns amount, rounded half-up to the paisa, in words:
// "Rupees Ten Only", "Rupees Ten and Fifty Paise Only", "Fifty Paise
// Only", "Rupees Zero Only". amount must not be negative.
func Rupees(amount decimal.Decimal) string {
	paise := amount.Round(2).Shift(2).IntPart()
	r, p := paise/100, paise%100
	switch {
	case r > 0 && p > 0:
		return "Rupees " + Number(r) + " and " + Number(p) + " Paise Only"
	case p > 0:
		return Number(p) + " Paise Only"
	default:
		return "Rupees " + Number(r) + " Only"
	}
}
