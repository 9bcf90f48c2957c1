package inwords

import (
	"strings"
	"testing"

	"github.com/shopspring/decimal"
)

func TestNumber(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{
		0:              "Zero",
		7:              "Seven",
		19:             "Nineteen",
		20:             "Twenty",
		99:             "Ninety Nine",
		100:            "One Hundred",
		101:            "One Hundred One",
		1000:           "One Thousand",
		1553:           "One Thousand Five Hundred Fifty Three",
		99999:          "Ninety Nine Thousand Nine Hundred Ninety Nine",
		100000:         "One Lakh",
		123456:         "One Lakh Twenty Three Thousand Four Hundred Fifty Six",
		1000000:        "Ten Lakh",
		9999999:        "Ninety Nine Lakh Ninety Nine Thousand Nine Hundred Ninety Nine",
		10000000:       "One Crore",
		12345678:       "One Crore Twenty Three Lakh Forty Five Thousand Six Hundred Seventy Eight",
		1000000000:     "One Hundred Crore",
		1000000000000:  "One Lakh Crore",
		25000000000015: "Twenty Five Lakh Crore Fifteen",
	} {
		if got := Number(n); got != want {
			t.Errorf("Number(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestRupees(t *testing.T) {
	t.Parallel()
	for amount, want := range map[string]string{
		"0":          "Rupees Zero Only",
		"0.50":       "Fifty Paise Only",
		"1":          "Rupees One Only",
		"1553.74":    "Rupees One Thousand Five Hundred Fifty Three and Seventy Four Paise Only",
		"123456.78":  "Rupees One Lakh Twenty Three Thousand Four Hundred Fifty Six and Seventy Eight Paise Only",
		"10000000":   "Rupees One Crore Only",
		"2.005":      "Rupees Two and One Paise Only", // half-up to the paisa
		"1234567.09": "Rupees Twelve Lakh Thirty Four Thousand Five Hundred Sixty Seven and Nine Paise Only",
	} {
		if got := Rupees(decimal.RequireFromString(amount)); got != want {
			t.Errorf("Rupees(%s) = %q, want %q", amount, got, want)
		}
	}
}

// parse reads Number's words back (the inverse, written independently):
// each word is a value or a multiplier; Hundred, Thousand and Lakh apply to
// the value gathered since the last group, Crore to everything before it.
func parse(s string) (int64, bool) {
	values := map[string]int64{}
	for i, w := range ones {
		values[w] = int64(i)
	}
	for i, w := range tens {
		if w != "" {
			values[w] = int64(i) * 10
		}
	}
	if s == "Zero" {
		return 0, true
	}
	var total, group, small int64
	for _, w := range strings.Fields(s) {
		switch w {
		case "Hundred":
			small *= 100
		case "Thousand":
			group += small * 1000
			small = 0
		case "Lakh":
			group += small * 100_000
			small = 0
		case "Crore": // multiplies everything before it
			total = (total + group + small) * 10_000_000
			group, small = 0, 0
		default:
			v, ok := values[w]
			if !ok || v == 0 {
				return 0, false
			}
			small += v
		}
	}
	return total + group + small, true
}

func FuzzNumberRoundTrip(f *testing.F) {
	for _, n := range []int64{0, 1, 19, 100, 123456, 10000000, 12345678, 1000000000000} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, n int64) {
		if n < 0 {
			return
		}
		words := Number(n)
		if got, ok := parse(words); !ok || got != n {
			t.Fatalf("Number(%d) = %q, which reads back as %d (%v)", n, words, got, ok)
		}
	})
}
