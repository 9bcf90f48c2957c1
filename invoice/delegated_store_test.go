package invoice

import (
	"errors"
	"slices"
	"testing"
)

// TestKeyArgsNamesEachKeysInvoiceByPosition: keys of several sellers,
// series and years, not in invoice order, each name the 1-based position
// of their own invoice (same seller, series, year and serial); a key whose
// invoice is not in the batch sends the batch the ordinary way.
func TestKeyArgsNamesEachKeysInvoiceByPosition(t *testing.T) {
	t.Parallel()
	w := &writes{invoices: []invoiceRow{
		{sellerID: 1, seriesID: 10, fy: 2026, serial: 7},
		{sellerID: 1, seriesID: 10, fy: 2026, serial: 8},
		{sellerID: 2, seriesID: 10, fy: 2026, serial: 7}, // another seller's series of the same id
		{sellerID: 1, seriesID: 11, fy: 2026, serial: 7},
		{sellerID: 1, seriesID: 10, fy: 2025, serial: 7},
	}}
	w.keys = []keyRow{
		{sellerID: 1, seriesID: 11, fy: 2026, serial: 7, key: "d", requestHash: []byte{4}},
		{sellerID: 2, seriesID: 10, fy: 2026, serial: 7, key: "c", requestHash: []byte{3}},
		{sellerID: 1, seriesID: 10, fy: 2025, serial: 7, key: "e", requestHash: []byte{5}},
		{sellerID: 1, seriesID: 10, fy: 2026, serial: 8, key: "b", requestHash: []byte{2}},
	}
	pos, keys, hashes, err := keyArgs(w)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int32{4, 3, 5, 2}; !slices.Equal(pos, want) {
		t.Fatalf("positions %v, want %v", pos, want)
	}
	if want := []string{"d", "c", "e", "b"}; !slices.Equal(keys, want) {
		t.Fatalf("keys %v, want %v", keys, want)
	}
	for i, h := range hashes {
		if int(h[0]) != int(pos[i]) {
			t.Fatalf("key %q carries hash %v, want its own", keys[i], h)
		}
	}
	w.keys = append(w.keys, keyRow{sellerID: 1, seriesID: 10, fy: 2026, serial: 9, key: "lost"})
	if _, _, _, err := keyArgs(w); !errors.Is(err, errPredictRefused) {
		t.Fatalf("a key of no invoice in the batch: %v, want errPredictRefused", err)
	}
}
