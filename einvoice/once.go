package einvoice

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// RegisterOnce asks r to register p and returns the one registration of p's
// document key, whether this call or an earlier one made it: a duplicate
// answer (2150) is recovered — by IRN through Get when the IRP named it,
// else by document through Lookup — and checked against p (Matches), never
// registered as new. When the IRP no longer shows the details (KindGone,
// KindNotFound) it returns a Partial registration made from what the
// duplicate answer said, if it said it.
//
// It fails with Register's errors, with KindMismatch when the IRP's
// registration of the key is of another document, and with the recovery
// calls' errors otherwise (KindDuplicate's own error when nothing could be
// recovered: the document is registered, ask again later).
func RegisterOnce(ctx context.Context, r Registrar, p *Payload) (*Registration, error) {
	reg, err := r.Register(ctx, p)
	if err == nil {
		return reg, nil
	}
	var dup *Error
	if !errors.As(err, &dup) || dup.Kind != KindDuplicate {
		return nil, err
	}
	key, kerr := KeyOf(p)
	if kerr != nil {
		return nil, fmt.Errorf("einvoice: %w", kerr)
	}
	if d := dup.Duplicate; d != nil && d.IRN != "" {
		reg, err = r.Get(ctx, key.GSTIN, d.IRN)
	} else {
		reg, err = r.Lookup(ctx, key)
	}
	switch {
	case err == nil:
		if err := Matches(reg, p); err != nil {
			return nil, err
		}
		return reg, nil
	case (KindOf(err) == KindGone || KindOf(err) == KindNotFound) && dup.Duplicate != nil && dup.Duplicate.IRN != "":
		d := dup.Duplicate
		return &Registration{IRN: d.IRN, AckNo: d.AckNo, AckDate: d.AckDate}, nil
	case KindOf(err) == KindGone || KindOf(err) == KindNotFound:
		// Registered (the duplicate says so), but nothing to show for it.
		return nil, dup
	}
	return nil, err
}

// Matches returns nil when reg, a registration the IRP shows for p's key,
// is of the document p describes: same type, number, date, supplier and
// buyer GSTINs and invoice value as signed by the IRP. It returns an *Error
// of KindMismatch naming the differences otherwise. A registration without
// its signed invoice (Partial) cannot be compared and matches.
func Matches(reg *Registration, p *Payload) error {
	s := reg.Signed
	if s == nil {
		return nil
	}
	var diffs []string
	check := func(field, got, want string) {
		if got != want {
			diffs = append(diffs, fmt.Sprintf("%s %q, this document %q", field, got, want))
		}
	}
	check("DocDtls.Typ", string(s.DocDtls.Typ), string(p.DocDtls.Typ))
	check("DocDtls.No", strings.ToUpper(s.DocDtls.No), strings.ToUpper(p.DocDtls.No))
	check("DocDtls.Dt", s.DocDtls.Dt, p.DocDtls.Dt)
	check("SellerDtls.Gstin", s.SellerDtls.Gstin, p.SellerDtls.Gstin)
	check("BuyerDtls.Gstin", s.BuyerDtls.Gstin, p.BuyerDtls.Gstin)
	if !s.ValDtls.TotInvVal.Equal(p.ValDtls.TotInvVal) {
		check("ValDtls.TotInvVal", s.ValDtls.TotInvVal.String(), p.ValDtls.TotInvVal.String())
	}
	if len(diffs) == 0 {
		return nil
	}
	return &Error{Op: OpRegister, Kind: KindMismatch,
		Err: fmt.Errorf("the IRP's registration %s is of another document: %s", reg.IRN, strings.Join(diffs, "; "))}
}
