package einvoice_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/einvoice"
)

// TestKindTable checks the answer table's rows that protect the books: the
// zero Kind and anything unknown read as "may have acted", and no kind
// that says "not done" is one where the IRP may hold a registration.
func TestKindTable(t *testing.T) {
	t.Parallel()
	if einvoice.Kind(0) != einvoice.KindUnknown || einvoice.KindUnknown.Outcome() != einvoice.OutcomeUnknown {
		t.Error("the zero Kind is not KindUnknown with an unknown outcome")
	}
	if k := einvoice.Kind(99); k.Outcome() != einvoice.OutcomeUnknown || k.String() != "unknown" {
		t.Errorf("Kind(99) reads as %s/%s; want unknown", k, k.Outcome())
	}
	want := map[einvoice.Kind]einvoice.Outcome{
		einvoice.KindUnknown: einvoice.OutcomeUnknown, einvoice.KindUnavailable: einvoice.OutcomeNotDone,
		einvoice.KindAuth: einvoice.OutcomeNotDone, einvoice.KindRejected: einvoice.OutcomeNotDone,
		einvoice.KindDuplicate: einvoice.OutcomeDone, einvoice.KindNotFound: einvoice.OutcomeUnknown,
		einvoice.KindGone: einvoice.OutcomeDone, einvoice.KindCancelWindowClosed: einvoice.OutcomeNotDone,
		einvoice.KindEWayBillActive: einvoice.OutcomeNotDone, einvoice.KindNotActive: einvoice.OutcomeDone,
		einvoice.KindMismatch: einvoice.OutcomeDone,
	}
	names := map[string]bool{}
	for _, k := range einvoice.Kinds() {
		w, ok := want[k]
		if !ok || k.Outcome() != w {
			t.Errorf("%s: outcome %s; want %s (listed: %v)", k, k.Outcome(), w, ok)
		}
		if names[k.String()] || k.String() == "" {
			t.Errorf("%d: name %q is empty or not unique", int(k), k)
		}
		names[k.String()] = true
	}
	if len(einvoice.Kinds()) != len(want) {
		t.Errorf("%d kinds; the test knows %d", len(einvoice.Kinds()), len(want))
	}
}

func TestKindOfDetails(t *testing.T) {
	t.Parallel()
	d := func(codes ...string) []einvoice.ErrorDetail {
		var out []einvoice.ErrorDetail
		for _, c := range codes {
			out = append(out, einvoice.ErrorDetail{Code: c, Message: "m"})
		}
		return out
	}
	for _, c := range []struct {
		details []einvoice.ErrorDetail
		want    einvoice.Kind
	}{
		{nil, einvoice.KindUnknown},
		{d("2150"), einvoice.KindDuplicate},
		{d("2172", "2150"), einvoice.KindDuplicate}, // registered, whatever else is wrong
		{d("2172"), einvoice.KindRejected},
		{d("2140", "2176"), einvoice.KindRejected},
		{d("2147", "2172"), einvoice.KindUnknown}, // signing failed: it may be registered
		{d("2146"), einvoice.KindUnavailable},
		{d("1005"), einvoice.KindAuth},
		{d("2270"), einvoice.KindCancelWindowClosed},
		{d("2230"), einvoice.KindEWayBillActive},
		{d("9999"), einvoice.KindNotActive},
		{d("2283"), einvoice.KindGone},
		{d("2148"), einvoice.KindNotFound},
		{d(" 2154 "), einvoice.KindNotFound},
	} {
		if got := einvoice.KindOfDetails(c.details); got != c.want {
			t.Errorf("KindOfDetails(%v) = %s; want %s", c.details, got, c.want)
		}
	}
}

func TestKindOf(t *testing.T) {
	t.Parallel()
	e := &einvoice.Error{Op: einvoice.OpRegister, Kind: einvoice.KindDuplicate, Details: []einvoice.ErrorDetail{{Code: "2150", Message: "Duplicate IRN"}}}
	if got := einvoice.KindOf(fmt.Errorf("outbox: %w", e)); got != einvoice.KindDuplicate {
		t.Errorf("KindOf(wrapped duplicate) = %s", got)
	}
	if got := einvoice.KindOf(errors.New("connection reset")); got != einvoice.KindUnknown {
		t.Errorf("KindOf(plain error) = %s; want unknown", got)
	}
	if s := e.Error(); s != "e-invoice register: duplicate: 2150 Duplicate IRN" {
		t.Errorf("Error() = %q", s)
	}
	if !e.HasCode("2150") || e.HasCode("2270") {
		t.Error("HasCode")
	}
	wrapped := &einvoice.Error{Op: einvoice.OpCancel, Kind: einvoice.KindUnknown, HTTPStatus: 502, Err: errors.New("bad gateway")}
	if s := wrapped.Error(); !strings.Contains(s, "(HTTP 502)") || !strings.Contains(s, "bad gateway") {
		t.Errorf("Error() = %q", s)
	}
}
