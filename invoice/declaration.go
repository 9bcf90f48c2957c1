package invoice

import (
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/series"
)

// DeclarationRecord returns the chain record that seals declaration d of
// series s of the seller with gstin (a settlement of an offline device's
// lease, docs/offline.md): at d's position, kind declared, serial and
// number of the last serial declared, original_number the first's,
// invoice_date the date Table 13 reports them on, issued_at and
// recorded_at the declaration's time, reason "declared by <who>, device
// <device>: <the reason>", no buyer, items or amounts (0.00), prev the
// record before. docs/chain.md documents it.
func DeclarationRecord(gstin string, s gst.Series, d series.Declaration, prev []byte) document.Record {
	return document.Record{
		GSTIN: gstin, FY: d.FY, Series: s.Code, DocType: s.DocType, Position: d.Position, Kind: series.KindDeclared,
		Serial: d.Last, Number: d.LastNumber, OriginalNumber: d.FirstNumber, InvoiceDate: d.DeclaredOn,
		IssuedAt: d.DeclaredAt, RecordedAt: d.DeclaredAt,
		Reason: "declared by " + d.DeclaredBy + ", device " + d.DeviceID + ": " + d.Reason,
		Prev:   prev,
	}
}

// DeclarationSeal returns the series.Seal of the seller with gstin: the
// hash of DeclarationRecord.
func DeclarationSeal(gstin gst.GSTIN) series.Seal {
	return func(s gst.Series, d series.Declaration, prev []byte) []byte {
		return DeclarationRecord(string(gstin), s, d, prev).Hash()
	}
}
