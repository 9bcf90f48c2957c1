package document_test

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/docblocks"
)

// TestChainDocWorkedExample pins docs/chain.md's worked examples to the
// code: the canonical record each prints is the one IssueRecord builds for
// the invoice it describes (computed here from the request the document
// states), its hash is the one the document prints, and the document's
// second record chains to that hash. It fails when the document or the
// canonical form changes without the other. Version 1 is an invoice to a
// registered buyer without an address, as every invoice was before
// addresses (PrepareContent: Prepare now refuses it, Rule 46(d)); version
// 2 the same sale with the buyer's address and an address of delivery.
func TestChainDocWorkedExample(t *testing.T) {
	t.Parallel()
	buyer := document.Buyer{GSTIN: "29AAGCB7383J1Z4", Name: "Bangalore Traders"}
	for _, c := range []struct {
		section string
		version string
		prepare func(document.Request, gst.Seller, gst.Series, time.Time) (document.Draft, error)
		buyer   *document.Buyer
		shipTo  *document.ShipTo
	}{
		{"## Worked example", document.ChainVersion1, document.PrepareContent, &buyer, nil},
		{"## Worked example, version 2", document.ChainVersionAddresses,
			func(req document.Request, seller gst.Seller, s gst.Series, now time.Time) (document.Draft, error) {
				return document.Prepare(req, seller, s, now, document.Policy{})
			},
			&document.Buyer{GSTIN: buyer.GSTIN, Name: buyer.Name,
				Address: &document.Address{Line1: "14 Residency Road", City: "Bengaluru", PIN: "560025"}},
			&document.ShipTo{Name: "Bangalore Traders, godown", Address: document.Address{Line1: "Plot 7, KIADB", Line2: "Hoskote", City: "Bengaluru Rural", PIN: "562114", State: "29"}}},
	} {
		t.Run(c.version, func(t *testing.T) {
			t.Parallel()
			example := docblocks.Section(t, filepath.Join("..", "docs", "chain.md"), c.section)
			checkWorkedExample(t, example, c.version, func(req document.Request, seller gst.Seller, s gst.Series, now time.Time) (document.Draft, error) {
				req.Buyer, req.ShipTo = c.buyer, c.shipTo
				return c.prepare(req, seller, s, now)
			})
		})
	}
}

// checkWorkedExample checks one worked example of docs/chain.md (see
// TestChainDocWorkedExample), whose invoice prepare prepares.
func checkWorkedExample(t *testing.T, example, version string, prepare func(document.Request, gst.Seller, gst.Series, time.Time) (document.Draft, error)) {
	t.Helper()
	blocks := docblocks.Blocks(example, "")
	if len(blocks) < 2 {
		t.Fatalf("the worked example has %d code blocks, want the record and its sha256sum", len(blocks))
	}
	docRecord := strings.TrimSpace(blocks[0])
	m := regexp.MustCompile(`(?m)^([0-9a-f]{64})  -$`).FindStringSubmatch(blocks[1])
	if m == nil {
		t.Fatalf("no sha256sum output line in\n%s", blocks[1])
	}
	docHash := m[1]

	// The invoice as the document describes it: the first record of
	// series CH1 in 2026-27 of seller 27AAPFU0939F1ZV (Maharashtra); two
	// masala chai at ₹10.00, 5 % IGST, to Bangalore Traders (Karnataka),
	// issued 2026-11-29 08:50 IST.
	format, err := gst.ParseFormat("CH1/{FY}/{SEQ:5}")
	if err != nil {
		t.Fatal(err)
	}
	docType, err := gst.ParseDocType("invoice")
	if err != nil {
		t.Fatal(err)
	}
	sr := gst.Series{ID: 1, SellerID: 1, Code: "CH1", DocType: docType, Format: format}
	seller := gst.Seller{ID: 1, GSTIN: "27AAPFU0939F1ZV", Name: "Pune Chai Co", StateCode: "27"}
	issuedAt := time.Date(2026, 11, 29, 8, 50, 0, 0, gst.IST)
	d, err := prepare(document.Request{
		PlaceOfSupply: "29",
		Items:         []document.ItemInput{{Description: "Masala chai", HSN: "0902", Quantity: "2", UnitPrice: "10.00", GSTRate: "5"}},
	}, seller, sr, issuedAt)
	if err != nil {
		t.Fatal(err)
	}
	fy := gst.FYOf(d.InvoiceDate)
	number, err := format.Render(fy, 1)
	if err != nil {
		t.Fatal(err)
	}
	inv := document.Invoice{SeriesCode: sr.Code, DocType: sr.DocType, FY: fy, Serial: 1, Number: number,
		InvoiceDate: d.InvoiceDate, IssuedAt: issuedAt, Buyer: d.Buyer, ShipTo: d.ShipTo, PlaceOfSupply: d.PlaceOfSupply,
		Original: d.Original, Items: d.Items, Totals: d.Totals}
	r := document.IssueRecord(string(seller.GSTIN), inv, 1, nil)
	if r.Version() != version {
		t.Fatalf("the example's record is version %s, want %s", r.Version(), version)
	}
	if got := r.Canonical(); got != docRecord {
		t.Fatalf("docs/chain.md's worked example is not the record the code builds:\n doc  %s\n code %s", docRecord, got)
	}
	if got := hex.EncodeToString(r.Hash()); got != docHash {
		t.Fatalf("docs/chain.md prints hash %s, the code hashes the record to %s", docHash, got)
	}
	if sum := sha256.Sum256([]byte(docRecord)); hex.EncodeToString(sum[:]) != docHash {
		t.Fatalf("docs/chain.md's hash %s is not the SHA-256 of its record", docHash)
	}
	if fast := document.FastIssueHash(string(seller.GSTIN), &inv, 1, nil, &d); hex.EncodeToString(fast) != docHash {
		t.Fatalf("the issue path's hash %x differs from the documented %s", fast, docHash)
	}
	if !strings.Contains(example, "`&prev="+docHash+"`") {
		t.Fatalf("docs/chain.md's second record does not chain to %s", docHash)
	}
}
