package api

import (
	"strconv"

	"github.com/invoiced/invoiced/internal/jsonfast"
)

// The batch answer written by hand, because json.Marshal walks each of up
// to 500 rendered invoices by reflection (its cost: docs/bench.md, "Why
// some code is written by hand"). These functions write the same bytes as
// json.Marshal of the same values (fields in declaration order, omitempty
// as tagged, and every string as encoding/json escapes it: a string of
// plain printable ASCII is copied, any other goes through json.Marshal
// itself). FuzzBatchJSON compares the two.

// appendBatchResults appends the JSON of r to b.
func appendBatchResults(b []byte, r batchResultsJSON) []byte {
	b = append(b, `{"results":`...)
	if r.Results == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range r.Results {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendBatchResult(b, &r.Results[i])
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// appendBatchResult appends the JSON of r to b.
func appendBatchResult(b []byte, r *batchResultJSON) []byte {
	b = append(b, `{"status":`...)
	b = strconv.AppendInt(b, int64(r.Status), 10)
	if r.Replayed {
		b = append(b, `,"replayed":true`...)
	}
	if r.Invoice != nil {
		b = append(b, `,"invoice":`...)
		b = appendInvoiceJSON(b, r.Invoice)
	}
	if r.Error != nil {
		b = append(b, `,"error":{"code":`...)
		b = jsonfast.AppendString(b, r.Error.Code)
		b = append(b, `,"message":`...)
		b = jsonfast.AppendString(b, r.Error.Message)
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendInvoiceJSON appends the JSON of inv to b.
func appendInvoiceJSON(b []byte, inv *invoiceJSON) []byte {
	b = appendField(b, `{"id":`, inv.ID)
	b = appendField(b, `,"number":`, inv.Number)
	b = append(b, `,"serial":`...)
	b = strconv.AppendInt(b, inv.Serial, 10)
	b = appendField(b, `,"fy":`, inv.FY)
	b = appendField(b, `,"series":`, inv.Series)
	b = appendField(b, `,"doc_type":`, inv.DocType)
	b = appendField(b, `,"invoice_date":`, inv.InvoiceDate)
	b = appendField(b, `,"issued_at":`, inv.IssuedAt)
	b = appendField(b, `,"status":`, inv.Status)
	b = appendField(b, `,"public_id":`, inv.PublicID)
	b = appendField(b, `,"receipt_url":`, inv.ReceiptURL)
	if inv.Buyer != nil {
		b = appendBuyer(append(b, `,"buyer":`...), inv.Buyer)
	}
	if st := inv.ShipTo; st != nil {
		b = append(b, `,"ship_to":{`...)
		if st.Name != "" {
			b = appendField(b, `"name":`, st.Name)
			b = append(b, ',')
		}
		b = appendAddress(append(b, `"address":`...), &st.Address)
		b = append(b, '}')
	}
	b = appendField(b, `,"place_of_supply":`, inv.PlaceOfSupply)
	if o := inv.Original; o != nil {
		b = appendField(b, `,"original":{"number":`, o.Number)
		b = appendField(b, `,"invoice_date":`, o.InvoiceDate)
		if o.External {
			b = append(b, `,"external":true`...)
		}
		if o.Reason != "" {
			b = appendField(b, `,"reason":`, o.Reason)
		}
		b = append(b, '}')
	}
	t := &inv.Totals
	b = appendField(b, `,"totals":{"taxable":`, t.Taxable)
	b = appendField(b, `,"cgst":`, t.CGST)
	b = appendField(b, `,"sgst":`, t.SGST)
	b = appendField(b, `,"igst":`, t.IGST)
	b = appendField(b, `,"total":`, t.Total)
	b = appendItems(append(b, `},"items":`...), inv.Items)
	if inv.CancelledAt != "" {
		b = appendField(b, `,"cancelled_at":`, inv.CancelledAt)
	}
	if inv.CancelReason != "" {
		b = appendField(b, `,"cancel_reason":`, inv.CancelReason)
	}
	if inv.EInvoice != nil {
		b = appendEInvoice(append(b, `,"e_invoice":`...), inv.EInvoice)
	}
	return append(b, '}')
}

// appendBuyer appends the JSON of the buyer by to b.
func appendBuyer(b []byte, by *buyerJSON) []byte {
	b = append(b, '{')
	comma := false
	if by.GSTIN != "" {
		b = appendField(b, `"gstin":`, by.GSTIN)
		comma = true
	}
	if by.Name != "" {
		if comma {
			b = append(b, ',')
		}
		b = appendField(b, `"name":`, by.Name)
		comma = true
	}
	if by.Address != nil {
		if comma {
			b = append(b, ',')
		}
		b = appendAddress(append(b, `"address":`...), by.Address)
	}
	return append(b, '}')
}

// appendItems appends the JSON of items to b: null when items is nil.
func appendItems(b []byte, items []itemJSON) []byte {
	if items == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range items {
		it := &items[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = appendField(b, `{"description":`, it.Description)
		b = appendField(b, `,"hsn":`, it.HSN)
		b = appendField(b, `,"quantity":`, it.Quantity)
		b = appendField(b, `,"unit_price":`, it.UnitPrice)
		b = appendField(b, `,"gst_rate":`, it.GSTRate)
		b = appendField(b, `,"taxable":`, it.Taxable)
		b = appendField(b, `,"cgst":`, it.CGST)
		b = appendField(b, `,"sgst":`, it.SGST)
		b = appendField(b, `,"igst":`, it.IGST)
		b = appendField(b, `,"total":`, it.Total)
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendEInvoice appends the JSON of e, an invoice's e-invoicing state, to
// b.
func appendEInvoice(b []byte, e *eInvoiceJSON) []byte {
	b = appendField(b, `{"status":`, e.Status)
	for _, f := range [...]struct{ prefix, v string }{{`,"irn":`, e.IRN}, {`,"ack_no":`, e.AckNo},
		{`,"ack_date":`, e.AckDate}, {`,"signed_qr_code":`, e.SignedQRCode}, {`,"error":`, e.Error}} {
		if f.v != "" {
			b = appendField(b, f.prefix, f.v)
		}
	}
	return append(b, '}')
}

// appendAddress appends the JSON of a to b.
func appendAddress(b []byte, a *addressJSON) []byte {
	b = appendField(b, `{"line1":`, a.Line1)
	if a.Line2 != "" {
		b = appendField(b, `,"line2":`, a.Line2)
	}
	b = appendField(b, `,"city":`, a.City)
	if a.PIN != "" {
		b = appendField(b, `,"pin":`, a.PIN)
	}
	b = appendField(b, `,"state":`, a.State)
	return append(b, '}')
}

// appendField appends prefix (the key and what comes before it) and the
// JSON string s.
func appendField(b []byte, prefix, s string) []byte {
	return jsonfast.AppendString(append(b, prefix...), s)
}
