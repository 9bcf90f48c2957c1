package document

import (
	"encoding/json"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/shopspring/decimal"
)

// decimals returns decimals of every shape appendDecimal treats: zero,
// negative, integers, fractions with and without trailing zeros, leading
// zeros after the point, positive exponents, and coefficients at and
// beyond the int64 fast path.
func decimals(r *rand.Rand) []decimal.Decimal {
	ds := []decimal.Decimal{
		decimal.Zero, decimal.New(0, -2), decimal.New(0, 3), decimal.New(5, -2), decimal.New(-5, -2),
		decimal.New(100, -2), decimal.New(-100, -2), decimal.New(12345, -1), decimal.New(7, 2),
		decimal.New(1, -40), decimal.New(1, -41), decimal.New(math.MaxInt64, -3), decimal.New(math.MinInt64, -3),
		decimal.New(999999999999999999, -18), decimal.New(-999999999999999999, -5),
		decimal.NewFromBigInt(new(big.Int).Lsh(big.NewInt(1), 80), -4), decimal.RequireFromString("18.00"),
		decimal.RequireFromString("0.0010"), decimal.RequireFromString("-0.5"),
	}
	for range 2000 {
		c := r.Int64N(1 << uint(r.IntN(63)))
		if r.IntN(2) == 0 {
			c = -c
		}
		ds = append(ds, decimal.New(c, int32(r.IntN(50)-44)))
	}
	return ds
}

// TestAppendDecimalIsString proves appendDecimal writes decimal.String's
// bytes: the chain's canonical form and the stored items depend on them.
func TestAppendDecimalIsString(t *testing.T) {
	t.Parallel()
	for _, d := range decimals(rand.New(rand.NewPCG(1, 2))) {
		if got, want := decimalString(d), d.String(); got != want {
			t.Errorf("decimalString(%s × 10^%d) = %q, want %q", d.Coefficient(), d.Exponent(), got, want)
		}
	}
}

// TestItemsJSONIsMarshal proves itemsJSON writes json.Marshal's bytes, for
// strings that need escaping (quotes, HTML, control characters, non-ASCII,
// invalid UTF-8) as well as plain ones.
func TestItemsJSONIsMarshal(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	ds := decimals(r)
	strs := []string{"", "Masala chai", `a "quoted" \ back`, "<b>&amp;</b>", "a<b", "b>a", "x&y", "tab\tnew\nline\x00", "चाय ₹10",
		"\u2028\u2029", "bad \xff utf8", "9963", "~!@#$%^*()_+{}|:?/.,;'[]=-`"}
	pick := func() decimal.Decimal { return ds[r.IntN(len(ds))] }
	check := func(items []Item) {
		t.Helper()
		want, err := json.Marshal(items)
		if err != nil {
			t.Fatal(err)
		}
		got, err := itemsJSON(items)
		if err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			t.Fatalf("itemsJSON = %s\nwant       %s", got, want)
		}
	}
	check(nil)
	check([]Item{})
	for range 500 {
		items := make([]Item, 1+r.IntN(4))
		for i := range items {
			items[i] = Item{Description: strs[r.IntN(len(strs))], HSN: strs[r.IntN(len(strs))],
				Quantity: pick(), UnitPrice: pick(), GSTRate: pick(), Taxable: pick(),
				CGST: pick(), SGST: pick(), IGST: pick(), Total: pick()}
		}
		check(items)
	}
}

// FuzzItemsJSON checks itemsJSON and appendDecimal against the library
// functions they replace, for any description and decimal.
func FuzzItemsJSON(f *testing.F) {
	f.Add("Masala chai", "0902", int64(12345), int32(-2))
	f.Add("<&>\"\\\x01é\xff", "", int64(-1), int32(-30))
	f.Add("", "x", int64(math.MinInt64), int32(3))
	f.Fuzz(func(t *testing.T, desc, hsn string, c int64, exp int32) {
		d := decimal.New(c, exp%64)
		if got, want := decimalString(d), d.String(); got != want {
			t.Fatalf("decimalString(%d × 10^%d) = %q, want %q", c, exp%64, got, want)
		}
		items := []Item{{Description: desc, HSN: hsn, Quantity: d, UnitPrice: d, GSTRate: d, Taxable: d, CGST: d, SGST: d, IGST: d, Total: d}}
		want, err := json.Marshal(items)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := itemsJSON(items); err != nil || got != string(want) {
			t.Fatalf("itemsJSON = %s, %v\nwant       %s", got, err, want)
		}
	})
}
