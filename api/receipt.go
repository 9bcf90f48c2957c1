package api

import (
	"bytes"
	"errors"
	"html/template"
	"net/http"

	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/series"
	"github.com/labstack/echo/v4"
)

const mimeHTML = "text/html; charset=utf-8"

// The printable receipt page, GET /r/{public_id}: no key needed, the
// unguessable public id is the capability. Free text is refused on input
// when it holds bidi controls (internal/freetext); each piece is also set
// in its own <bdi>, so that text stored before that rule cannot reorder
// what follows it on the page.

var receiptTmpl = template.Must(template.New("receipt").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>{{.Title}} {{.Inv.Number}}</title>
<style>
body{font-family:system-ui,sans-serif;max-width:42em;margin:1em auto;padding:0 1em;color:#111}
table{border-collapse:collapse;width:100%}th,td{padding:.25em .4em;border-bottom:1px solid #ccc;text-align:left}
td.n,th.n{text-align:right}.cancelled{border:3px solid #b00;color:#b00;font-weight:bold;padding:.5em;text-align:center;font-size:1.4em}
.tot td{font-weight:bold}@media print{body{margin:0}}
</style>
</head>
<body>
{{if .Cancelled}}<div class="cancelled">CANCELLED{{with .Inv.CancelReason}}: <bdi>{{.}}</bdi>{{end}}</div>{{end}}
<h1>{{.Title}}</h1>
<p><strong><bdi>{{.Seller.Name}}</bdi></strong><br>GSTIN {{.Seller.GSTIN}}</p>
<p>Number <strong>{{.Inv.Number}}</strong><br>Date {{.Inv.InvoiceDate}}<br>Place of supply {{.Inv.PlaceOfSupply}}</p>
{{with .Inv.Buyer}}<p>Buyer: <bdi>{{.Name}}</bdi>{{with .GSTIN}}<br>GSTIN {{.}}{{end}}</p>{{end}}
{{with .Inv.Original}}<p>Against {{.Number}} dated {{.InvoiceDate}}</p>{{end}}
<table>
<thead><tr><th>Item</th><th>HSN</th><th class="n">Qty</th><th class="n">Price</th><th class="n">GST %</th><th class="n">Taxable</th><th class="n">Total</th></tr></thead>
<tbody>
{{range .Inv.Items}}<tr><td><bdi>{{.Description}}</bdi></td><td>{{.HSN}}</td><td class="n">{{.Quantity}}</td><td class="n">{{.UnitPrice}}</td><td class="n">{{.GSTRate}}</td><td class="n">{{.Taxable}}</td><td class="n">{{.Total}}</td></tr>
{{end}}</tbody>
</table>
<table>
<tr><td>Taxable value</td><td class="n">₹ {{.Inv.Totals.Taxable}}</td></tr>
<tr><td>CGST</td><td class="n">₹ {{.Inv.Totals.CGST}}</td></tr>
<tr><td>SGST</td><td class="n">₹ {{.Inv.Totals.SGST}}</td></tr>
<tr><td>IGST</td><td class="n">₹ {{.Inv.Totals.IGST}}</td></tr>
<tr class="tot"><td>Total</td><td class="n">₹ {{.Inv.Totals.Total}}</td></tr>
</table>
<p><small>Issued {{.Inv.IssuedAt}}</small></p>
</body>
</html>
`))

var receiptErrorTmpl = template.Must(template.New("receipt-error").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="robots" content="noindex"><title>{{.Title}}</title></head>
<body><h1>{{.Title}}</h1><p>{{.Message}}</p></body></html>
`))

type receiptView struct {
	Title     string
	Seller    series.Seller
	Inv       invoiceJSON
	Cancelled bool
}

// titles names each document type on its receipt.
var titles = map[series.DocType]string{
	series.Invoice:        "Tax Invoice",
	series.BillOfSupply:   "Bill of Supply",
	series.CreditNote:     "Credit Note",
	series.DebitNote:      "Debit Note",
	series.RevisedInvoice: "Revised Invoice",
	series.ReceiptVoucher: "Receipt Voucher",
	series.PaymentVoucher: "Payment Voucher",
	series.RefundVoucher:  "Refund Voucher",
}

// validPublicID reports whether v can be a public id: 26 characters of
// lower-case base32.
func validPublicID(v string) bool {
	if len(v) != 26 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !('a' <= c && c <= 'z' || '2' <= c && c <= '7') {
			return false
		}
	}
	return true
}

// receipt serves GET /r/{public_id}: the printable receipt, or an HTML
// error page (404 for an unknown id).
func (s *Server) receipt(c echo.Context) error {
	h := c.Response().Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Robots-Tag", "noindex")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
	id := c.Param("public_id")
	if !validPublicID(id) {
		return s.receiptError(c, invoice.ErrNotFound)
	}
	ctx := c.Request().Context()
	peer := peerAddr(c.Request())
	if !s.failures.allow(peer, s.now()) {
		return s.receiptError(c, errRateLimited)
	}
	inv, err := invoice.GetByPublicID(ctx, s.pool, id)
	if errors.Is(err, invoice.ErrNotFound) {
		s.failures.charge(peer, s.now())
	}
	if err != nil {
		return s.receiptError(c, err)
	}
	seller, err := series.SellerByID(ctx, s.pool, inv.SellerID)
	if err != nil {
		return s.receiptError(c, err)
	}
	title := titles[inv.DocType]
	if title == "" {
		title = inv.DocType.Nature()
	}
	var buf bytes.Buffer
	v := receiptView{Title: title, Seller: seller, Inv: renderInvoice(inv), Cancelled: inv.Status == invoice.StatusCancelled}
	if err := receiptTmpl.Execute(&buf, v); err != nil {
		return err
	}
	return c.Blob(http.StatusOK, mimeHTML, buf.Bytes())
}

// receiptError answers err as an HTML page, with the status classify gives
// it; internal errors are logged through handleError's rules.
func (s *Server) receiptError(c echo.Context, err error) error {
	p, internal := classify(err)
	if internal {
		return err // JSON 500, logged
	}
	title := "Receipt not found"
	msg := "There is no receipt at this address."
	if p.status != http.StatusNotFound {
		title, msg = "Receipt unavailable", p.message
	}
	switch p.status {
	case http.StatusServiceUnavailable:
		c.Response().Header().Set("Retry-After", retryAfterSeconds)
	case http.StatusTooManyRequests:
		c.Response().Header().Set("Retry-After", retryAfterTooManySeconds)
	}
	var buf bytes.Buffer
	if err := receiptErrorTmpl.Execute(&buf, struct{ Title, Message string }{title, msg}); err != nil {
		return err
	}
	return c.Blob(p.status, mimeHTML, buf.Bytes())
}
