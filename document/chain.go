package document

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"github.com/invoiced/invoiced/gst"
)

// Record kinds in a chain.
const (
	KindIssue  = "issue"
	KindCancel = "cancel"
)

// Versions of the canonical form below; the version is the first field of
// every record. A record is written in ChainVersionAddresses when its
// invoice carries a buyer's address or an address of delivery, which that
// version seals too, and in ChainVersion1 otherwise: byte for byte the form
// of every record written before addresses existed, so recorded hashes
// stay valid and a till or server that knows only version 1 computes the
// same hash for such an invoice (docs/chain.md).
const (
	ChainVersion1         = "1"
	ChainVersionAddresses = "2"
)

// Record is one link of a series-year's chain, in the fields its hash
// covers. docs/chain.md documents the canonical form for third parties.
type Record struct {
	GSTIN       string
	FY          gst.FY
	Series      string
	DocType     gst.DocType
	Position    int64 // 1-based within the series-year
	Kind        string
	Serial      int64
	Number      string
	InvoiceDate time.Time
	IssuedAt    time.Time
	RecordedAt  time.Time // IssuedAt for an issue, the cancellation time for a cancel
	BuyerGSTIN  string
	BuyerName   string
	// BuyerAddress and ShipTo are the buyer's address and the address of
	// delivery, nil when the invoice has none; either makes the record
	// ChainVersionAddresses.
	BuyerAddress *Address
	ShipTo       *ShipTo
	// PlaceOfSupply is the state code of the place of supply.
	PlaceOfSupply  string
	OriginalNumber string    // the invoice a note corrects; empty otherwise
	OriginalDate   time.Time // zero when there is no original
	Items          []Item
	Totals         Totals
	Reason         string // cancellation reason; empty for an issue
	Prev           []byte // previous record's hash; nil for the first
}

// Canonical returns the record's canonical form: fields in a fixed order,
// each name=value with the value percent-encoded (every byte outside
// A-Z a-z 0-9 - . _ ~ as %XX, upper-case hex), joined by '&'.
func (r Record) Canonical() string {
	return r.canonicalWith(r.contentPart(MoneyOf(r.Totals)))
}

// canonicalWith returns the canonical form with content as its content
// part (contentPart), computed before when the caller could.
func (r Record) canonicalWith(content string) string {
	var b strings.Builder
	b.Grow(len(content) + 320)
	r.writeHead(&b)
	b.WriteByte('&')
	b.WriteString(content)
	writeTail(&b, r.Reason, r.Prev)
	return b.String()
}

// writeHead writes the fields v to recorded_at: the ones that depend on
// where the record sits in its chain.
func (r Record) writeHead(b *strings.Builder) {
	writeFields(b, [][2]string{
		{"v", r.Version()},
		{"gstin", r.GSTIN},
		{"fy", r.FY.String()},
		{"series", r.Series},
		{"doc_type", string(r.DocType)},
		{"position", strconv.FormatInt(r.Position, 10)},
		{"kind", r.Kind},
		{"serial", strconv.FormatInt(r.Serial, 10)},
		{"number", r.Number},
		{"invoice_date", r.InvoiceDate.Format(time.DateOnly)},
		{"issued_at", Timestamp(r.IssuedAt)},
		{"recorded_at", Timestamp(r.RecordedAt)},
	})
}

// Version returns the version of r's canonical form: ChainVersionAddresses
// when r holds a buyer's address or an address of delivery,
// ChainVersion1 otherwise.
func (r Record) Version() string {
	if r.BuyerAddress != nil || r.ShipTo != nil {
		return ChainVersionAddresses
	}
	return ChainVersion1
}

// contentPart returns the fields buyer_gstin to total, which depend only on
// the invoice's content: issuers compute it before taking the counter lock.
// money is MoneyOf(r.Totals), which the caller may have already.
func (r Record) contentPart(money [5]string) string {
	items := canonicalItems(r.Items)
	var b strings.Builder
	// Escaping writes at most three bytes for one; most are written as is.
	b.Grow(len(items) + len(items)/2 + 320)
	fields := make([][2]string, 0, 13)
	fields = append(fields, [2]string{"buyer_gstin", r.BuyerGSTIN}, [2]string{"buyer_name", r.BuyerName})
	if r.Version() == ChainVersionAddresses {
		buyer, ship := "", ""
		if a := r.BuyerAddress; a != nil {
			buyer = canonicalParts(a.Line1, a.Line2, a.City, a.PIN, a.State)
		}
		if st := r.ShipTo; st != nil {
			ship = canonicalParts(st.Name, st.Address.Line1, st.Address.Line2, st.Address.City, st.Address.PIN, st.Address.State)
		}
		fields = append(fields, [2]string{"buyer_address", buyer})
		fields = append(fields, [2]string{"ship_to", ship})
	}
	writeFields(&b, append(fields, [][2]string{
		{"place_of_supply", r.PlaceOfSupply},
		{"original_number", r.OriginalNumber},
		{"original_date", civil(r.OriginalDate)},
		{"items", items},
		{"taxable", money[0]},
		{"cgst", money[1]},
		{"sgst", money[2]},
		{"igst", money[3]},
		{"total", money[4]},
	}...))
	return b.String()
}

// canonicalParts encodes an address as version 2 seals it: its parts
// (a buyer's address: line1, line2, city, pin, state; an address of
// delivery: name, then those), each percent-encoded, joined by ','.
// Canonical then percent-encodes the value once more, as it does items.
func canonicalParts(parts ...string) string {
	var b strings.Builder
	for i, v := range parts {
		if i > 0 {
			b.WriteByte(',')
		}
		escape(&b, v)
	}
	return b.String()
}

// MoneyOf returns t's amounts as text (Money): taxable, cgst, sgst, igst,
// total, as the chain record and the stored row write them.
func MoneyOf(t Totals) [5]string {
	return [5]string{Money(t.Taxable), Money(t.CGST), Money(t.SGST), Money(t.IGST), Money(t.Total)}
}

// writeTail writes "&reason=…&prev=…".
func writeTail(b *strings.Builder, reason string, prev []byte) {
	b.WriteString("&reason=")
	escape(b, reason)
	b.WriteString("&prev=")
	b.WriteString(hex.EncodeToString(prev))
}

func writeFields(b *strings.Builder, fields [][2]string) {
	for i, f := range fields {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(f[0])
		b.WriteByte('=')
		escape(b, f[1])
	}
}

// IssueHash is IssueRecord(gstin, inv, position, prev).Hash() with the
// content part computed beforehand (Sealed.Content), so that the work done under
// the counter lock is small.
func IssueHash(gstin string, inv *Invoice, position int64, prev []byte, content string) []byte {
	h := sha256.Sum256([]byte(IssueRecord(gstin, *inv, position, prev).canonicalWith(content)))
	return h[:]
}

// contentOf returns the content part of the issue record of draft d, whose
// amounts as text are money (MoneyOf(d.Totals)).
func contentOf(d *Draft, money [5]string) string {
	inv := Invoice{Buyer: d.Buyer, ShipTo: d.ShipTo, PlaceOfSupply: d.PlaceOfSupply, Original: d.Original, Items: d.Items, Totals: d.Totals}
	return IssueRecord("", inv, 0, nil).contentPart(money)
}

// Hash returns SHA-256 of the canonical form.
func (r Record) Hash() []byte {
	h := sha256.Sum256([]byte(r.Canonical()))
	return h[:]
}

// Timestamp formats t as the chain and the API write instants: UTC with
// microseconds, e.g. 2026-11-29T03:20:00.000000Z.
func Timestamp(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000000Z")
}

func civil(d time.Time) string {
	if d.IsZero() {
		return ""
	}
	return d.Format(time.DateOnly)
}

// canonicalItems encodes the lines: per item its fields description, hsn,
// quantity, unit_price, gst_rate (shortest decimal, no trailing zeros),
// taxable, cgst, sgst, igst, total (two places), each percent-encoded and
// joined by ','; items joined by ';'. Canonical then percent-encodes the
// whole value once more.
func canonicalItems(items []Item) string {
	var b strings.Builder
	b.Grow(160 * len(items))
	for i, it := range items {
		if i > 0 {
			b.WriteByte(';')
		}
		for j, v := range []string{it.Description, it.HSN, decimalString(it.Quantity), decimalString(it.UnitPrice), decimalString(it.GSTRate),
			Money(it.Taxable), Money(it.CGST), Money(it.SGST), Money(it.IGST), Money(it.Total)} {
			if j > 0 {
				b.WriteByte(',')
			}
			escape(&b, v)
		}
	}
	return b.String()
}

func escape(b *strings.Builder, s string) {
	const hexdig = "0123456789ABCDEF"
	start := 0 // s[start:i] is unreserved and not written yet
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			continue
		}
		b.WriteString(s[start:i])
		b.WriteByte('%')
		b.WriteByte(hexdig[c>>4])
		b.WriteByte(hexdig[c&15])
		start = i + 1
	}
	b.WriteString(s[start:])
}

// IssueRecord returns the chain record of inv's issue at position.
func IssueRecord(gstin string, inv Invoice, position int64, prev []byte) Record {
	r := Record{
		GSTIN: gstin, FY: inv.FY, Series: inv.SeriesCode, DocType: inv.DocType,
		Position: position, Kind: KindIssue, Serial: inv.Serial, Number: inv.Number,
		InvoiceDate: inv.InvoiceDate, IssuedAt: inv.IssuedAt, RecordedAt: inv.IssuedAt,
		BuyerGSTIN: buyerGSTIN(inv.Buyer), PlaceOfSupply: inv.PlaceOfSupply,
		ShipTo: inv.ShipTo, Items: inv.Items, Totals: inv.Totals, Prev: prev,
	}
	if inv.Buyer != nil {
		r.BuyerName, r.BuyerAddress = inv.Buyer.Name, inv.Buyer.Address
	}
	if inv.Original != nil {
		r.OriginalNumber, r.OriginalDate = inv.Original.Number, inv.Original.InvoiceDate
	}
	return r
}

// CancelRecord returns the chain record of inv's cancellation at position;
// inv must carry CancelledAt and CancelReason.
func CancelRecord(gstin string, inv Invoice, position int64, prev []byte) Record {
	r := IssueRecord(gstin, inv, position, prev)
	r.Kind = KindCancel
	if inv.CancelledAt != nil {
		r.RecordedAt = *inv.CancelledAt
	}
	r.Reason = inv.CancelReason
	return r
}

func buyerGSTIN(b *Buyer) string {
	if b == nil {
		return ""
	}
	return b.GSTIN
}
