package testfactory_test

import (
	"testing"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/series"
)

func TestDefaultsAndOptions(t *testing.T) {
	t.Parallel()
	pool := dbtest.New(t)
	seller := testfactory.Seller(t, pool, nil)
	if seller.ID == 0 || string(seller.GSTIN) != testfactory.SellerGSTIN || seller.Name != testfactory.SellerName {
		t.Fatalf("default seller %+v", seller)
	}
	other := testfactory.Seller(t, pool, &testfactory.SellerOpts{GSTIN: "29AAGCB7383J1Z4", Name: "Bangalore Traders",
		Contact: gst.Contact{Phone: "080 1234 5678"}})
	if other.ID == seller.ID || string(other.GSTIN) != "29AAGCB7383J1Z4" || other.Phone != "080 1234 5678" {
		t.Fatalf("seller with options %+v", other)
	}
	s := testfactory.Series(t, pool, seller, nil)
	if s.SellerID != seller.ID || s.Code != "CH1" || s.DocType != gst.Invoice || s.Format.String() != "CH1/{FY}/{SEQ:5}" {
		t.Fatalf("default series %+v", s)
	}
	cn := testfactory.Series(t, pool, seller, &testfactory.SeriesOpts{Code: "CN1", DocType: "credit_note", Format: "CN/{FY}/{SEQ:4}", Shop: "stall"})
	if cn.Code != "CN1" || cn.DocType != gst.CreditNote || cn.Format.String() != "CN/{FY}/{SEQ:4}" || cn.Shop != "stall" {
		t.Fatalf("series with options %+v", cn)
	}

	now := time.Date(2026, 11, 29, 3, 20, 0, 0, time.UTC)
	d := testfactory.Draft(t, seller, s, now, &testfactory.DraftOpts{Key: "k"})
	if d.IdempotencyKey != "k" || string(d.RequestHash) != "h-k" || d.Buyer == nil || d.Buyer.GSTIN != testfactory.Buyer.GSTIN || len(d.Items) != 1 {
		t.Fatalf("default draft %+v", d)
	}
	inv, err := invoice.Issue(t.Context(), pool, seller, s, d, now, series.Options{})
	if err != nil || inv.Number != "CH1/26-27/00001" {
		t.Fatalf("issue the default draft: %v, %q", err, inv.Number)
	}
	req := document.Request{Items: []document.ItemInput{testfactory.Chai("1", "5.00", "0")}}
	if d := testfactory.Draft(t, seller, s, now, &testfactory.DraftOpts{Request: &req}); d.Buyer != nil || d.IdempotencyKey != "" {
		t.Fatalf("draft of a request %+v", d)
	}
}
