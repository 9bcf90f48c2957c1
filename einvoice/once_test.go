package einvoice_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/einvoice"
	"github.com/invoiced/invoiced/einvoice/einvoicetest"
)

// scripted is a Registrar that answers from its fields and counts calls:
// RegisterOnce's logic is over the interface, whatever speaks the protocol.
type scripted struct {
	register        func() (*einvoice.Registration, error)
	lookup, get     func() (*einvoice.Registration, error)
	registers, gets int
	lookups         int
}

func (s *scripted) Register(context.Context, *einvoice.Payload) (*einvoice.Registration, error) {
	s.registers++
	return s.register()
}

func (s *scripted) Lookup(context.Context, einvoice.DocKey) (*einvoice.Registration, error) {
	s.lookups++
	return s.lookup()
}

func (s *scripted) Get(context.Context, string, string) (*einvoice.Registration, error) {
	s.gets++
	return s.get()
}

func (s *scripted) Cancel(context.Context, string, einvoice.CancelRequest) (*einvoice.Cancellation, error) {
	panic("not called")
}

func TestRegisterOnce(t *testing.T) {
	t.Parallel()
	p := einvoicetest.Payload(t, 1, einvoicetest.OtherStateGSTIN)
	key, err := einvoice.KeyOf(p)
	if err != nil {
		t.Fatal(err)
	}
	ackDate := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	signed := func(total string) *einvoice.Registration {
		s := &einvoice.SignedDocument{Irn: key.IRN(), DocDtls: p.DocDtls}
		s.SellerDtls.Gstin, s.BuyerDtls.Gstin, s.ValDtls.TotInvVal = p.SellerDtls.Gstin, p.BuyerDtls.Gstin, einvoice.NumString(total)
		return &einvoice.Registration{IRN: key.IRN(), AckNo: "1", AckDate: ackDate, SignedQRCode: "jwt", Signed: s}
	}
	ok := func(r *einvoice.Registration) func() (*einvoice.Registration, error) {
		return func() (*einvoice.Registration, error) { return r, nil }
	}
	fail := func(k einvoice.Kind) func() (*einvoice.Registration, error) {
		return func() (*einvoice.Registration, error) { return nil, &einvoice.Error{Kind: k} }
	}
	dup := func(withInfo bool) func() (*einvoice.Registration, error) {
		e := &einvoice.Error{Op: einvoice.OpRegister, Kind: einvoice.KindDuplicate}
		if withInfo {
			e.Duplicate = &einvoice.Duplicate{IRN: key.IRN(), AckNo: "7", AckDate: ackDate}
		}
		return func() (*einvoice.Registration, error) { return nil, e }
	}
	total := p.ValDtls.TotInvVal.String()
	for _, c := range []struct {
		name                   string
		r                      *scripted
		wantKind               *einvoice.Kind // nil: success
		partial                bool
		registers, gets, looks int
	}{
		{"registered now", &scripted{register: ok(signed(total))}, nil, false, 1, 0, 0},
		{"duplicate named: recovered by IRN", &scripted{register: dup(true), get: ok(signed(total))}, nil, false, 1, 1, 0},
		{"duplicate unnamed: recovered by document", &scripted{register: dup(false), lookup: ok(signed(total))}, nil, false, 1, 0, 1},
		{"details gone: partial from the duplicate", &scripted{register: dup(true), get: fail(einvoice.KindGone)}, nil, true, 1, 1, 0},
		{"details gone and unnamed: still a duplicate", &scripted{register: dup(false), lookup: fail(einvoice.KindNotFound)}, kind(einvoice.KindDuplicate), false, 1, 0, 1},
		{"another document under the key", &scripted{register: dup(true), get: ok(signed("1.00"))}, kind(einvoice.KindMismatch), false, 1, 1, 0},
		{"lost answer while recovering", &scripted{register: dup(true), get: fail(einvoice.KindUnknown)}, kind(einvoice.KindUnknown), false, 1, 1, 0},
		{"refused", &scripted{register: fail(einvoice.KindRejected)}, kind(einvoice.KindRejected), false, 1, 0, 0},
		{"lost answer", &scripted{register: fail(einvoice.KindUnknown)}, kind(einvoice.KindUnknown), false, 1, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			reg, err := einvoice.RegisterOnce(t.Context(), c.r, p)
			switch {
			case c.wantKind == nil && err != nil:
				t.Fatalf("RegisterOnce: %v", err)
			case c.wantKind != nil && (err == nil || einvoice.KindOf(err) != *c.wantKind):
				t.Fatalf("RegisterOnce = %v, %v; want %s", reg, err, *c.wantKind)
			case c.wantKind == nil && (reg.IRN != key.IRN() || reg.Partial() != c.partial):
				t.Errorf("registration %+v; want IRN %s, partial %v", reg, key.IRN(), c.partial)
			}
			if c.r.registers != c.registers || c.r.gets != c.gets || c.r.lookups != c.looks {
				t.Errorf("calls: register %d get %d lookup %d; want %d %d %d", c.r.registers, c.r.gets, c.r.lookups, c.registers, c.gets, c.looks)
			}
		})
	}
}

func kind(k einvoice.Kind) *einvoice.Kind { return &k }

func TestMatchesNamesTheDifference(t *testing.T) {
	t.Parallel()
	p := einvoicetest.Payload(t, 1, einvoicetest.OtherStateGSTIN)
	s := &einvoice.SignedDocument{DocDtls: p.DocDtls}
	s.SellerDtls.Gstin, s.BuyerDtls.Gstin, s.ValDtls.TotInvVal = p.SellerDtls.Gstin, einvoicetest.BuyerGSTIN, p.ValDtls.TotInvVal
	err := einvoice.Matches(&einvoice.Registration{IRN: "x", Signed: s}, p)
	var e *einvoice.Error
	if !errors.As(err, &e) || e.Kind != einvoice.KindMismatch || !strings.Contains(err.Error(), "BuyerDtls.Gstin") {
		t.Fatalf("Matches = %v; want a mismatch naming BuyerDtls.Gstin", err)
	}
}
