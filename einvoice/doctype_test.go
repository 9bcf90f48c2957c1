package einvoice_test

import (
	"testing"
	"time"

	"github.com/invoiced/invoiced/einvoice"
	"github.com/invoiced/invoiced/gst"
)

// TestIRN pins the IRN of gst.md's example
// (printf '01AAAAA9999A19N2019-20INVABC01234' | sha256sum), and that the
// year comes from the date and the number is upper-cased.
func TestIRN(t *testing.T) {
	t.Parallel()
	const want = "353c2677715ae97aa876a37262a38381a75c1d1184f6a803f703bb395971925f"
	for _, c := range []struct {
		name string
		key  einvoice.DocKey
	}{
		{"the example", einvoice.DocKey{GSTIN: "01AAAAA9999A19N", Type: einvoice.TypeInvoice, Number: "ABC01234", Date: time.Date(2020, 1, 3, 0, 0, 0, 0, time.UTC)}},
		{"first day of the year", einvoice.DocKey{GSTIN: "01AAAAA9999A19N", Type: einvoice.TypeInvoice, Number: "ABC01234", Date: time.Date(2019, 4, 1, 0, 0, 0, 0, time.UTC)}},
		{"lower case number", einvoice.DocKey{GSTIN: "01AAAAA9999A19N", Type: einvoice.TypeInvoice, Number: "abc01234", Date: time.Date(2020, 3, 31, 0, 0, 0, 0, time.UTC)}},
	} {
		if got := c.key.IRN(); got != want {
			t.Errorf("%s: IRN = %s; want %s", c.name, got, want)
		}
	}
	other := einvoice.DocKey{GSTIN: "01AAAAA9999A19N", Type: einvoice.TypeCreditNote, Number: "ABC01234", Date: time.Date(2020, 1, 3, 0, 0, 0, 0, time.UTC)}
	if other.IRN() == want {
		t.Error("a credit note of the same number has the invoice's IRN")
	}
	next := einvoice.DocKey{GSTIN: "01AAAAA9999A19N", Type: einvoice.TypeInvoice, Number: "ABC01234", Date: time.Date(2020, 4, 1, 0, 0, 0, 0, time.UTC)}
	if next.IRN() == want {
		t.Error("the same number in the next year has the same IRN")
	}
}

func TestDocTypeOf(t *testing.T) {
	t.Parallel()
	want := map[gst.DocType]einvoice.DocType{gst.Invoice: "INV", gst.CreditNote: "CRN", gst.DebitNote: "DBN"}
	for _, d := range gst.DocTypes() {
		got, ok := einvoice.DocTypeOf(d)
		if w, registered := want[d]; got != w || ok != registered || ok != got.Valid() {
			t.Errorf("DocTypeOf(%s) = %q, %v; want %q, %v", d, got, ok, w, registered)
		}
	}
}

func TestDates(t *testing.T) {
	t.Parallel()
	d := time.Date(2026, 3, 31, 0, 0, 0, 0, time.UTC)
	if s := einvoice.FormatDate(d); s != "31/03/2026" {
		t.Errorf("FormatDate = %s", s)
	}
	if got, err := einvoice.ParseDate("31/03/2026"); err != nil || !got.Equal(d) {
		t.Errorf("ParseDate = %v, %v", got, err)
	}
	for _, bad := range []string{"31/02/2026", "2026-03-31", "1/3/2026", ""} {
		if _, err := einvoice.ParseDate(bad); err == nil {
			t.Errorf("ParseDate(%q) succeeded", bad)
		}
	}
}
