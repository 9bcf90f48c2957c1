package client

import "time"

// The types below mirror api/openapi.yaml's schemas (TestClientMatchesSpec
// fails when they drift). Amounts are decimal strings ("10.50"), as on the
// wire, so that no amount passes through a float; dates are "2006-01-02".

// Status is the answer of Healthz and Readyz.
type Status struct {
	Status string `json:"status"`
}

// Stats is the answer of DebugStats: the group-commit counters of one
// server process.
type Stats struct {
	Batching     bool  `json:"batching"`
	Batches      int64 `json:"batches"`
	Invoices     int64 `json:"invoices"`
	Retries      int64 `json:"retries"`
	MaxBatch     int   `json:"max_batch"`
	Predicted    int64 `json:"predicted"`
	Mispredicted int64 `json:"mispredicted"`
}

// SeriesRequest creates a numbering series.
type SeriesRequest struct {
	Code    string `json:"code"`
	DocType string `json:"doc_type"`
	Format  string `json:"format"` // e.g. "CH1/{FY}/{SEQ:5}"
	Shop    string `json:"shop,omitempty"`
	// Opening declares, for a series moved here mid-year, the serials
	// issued before by other software: numbering continues after them.
	Opening *Opening `json:"opening,omitempty"`
}

// Opening is a SeriesRequest's declaration of serials 1..LastSerial of one
// financial year issued before invoiced (docs/openings.md).
type Opening struct {
	FY              string `json:"fy"`                // "2026-27"
	LastSerial      int64  `json:"last_serial"`       // 1233: the first number issued here is 1234
	LastInvoiceDate string `json:"last_invoice_date"` // no invoice here may be dated earlier
	LastNumber      string `json:"last_number"`       // what the format renders for LastSerial
}

// Series is a numbering series with, per financial year used, its last
// serial.
type Series struct {
	Code      string       `json:"code"`
	DocType   string       `json:"doc_type"`
	Format    string       `json:"format"`
	Shop      string       `json:"shop"`
	Capacity  int64        `json:"capacity"`
	CreatedAt time.Time    `json:"created_at"`
	Years     []SeriesYear `json:"years"`
}

// SeriesYear is a series' use in one financial year.
type SeriesYear struct {
	FY              string `json:"fy"`
	LastSerial      int64  `json:"last_serial"`
	LastNumber      string `json:"last_number"`
	LastInvoiceDate string `json:"last_invoice_date"`
}

// SeriesList is the answer of ListSeries.
type SeriesList struct {
	Series []Series `json:"series"`
}

// IssueRequest is the body of IssueInvoice.
type IssueRequest struct {
	InvoiceDate string `json:"invoice_date,omitempty"` // default today in IST
	// Buyer is the recipient: nil for an unregistered buyer who gives
	// nothing, which a tax invoice of taxable value ₹50,000 or more may not
	// be (CGST Rule 46(e): then Buyer with Name and Address, and ShipTo).
	Buyer *Buyer `json:"buyer,omitempty"`
	// ShipTo is the address of delivery; nil for none.
	ShipTo        *ShipTo     `json:"ship_to,omitempty"`
	PlaceOfSupply string      `json:"place_of_supply,omitempty"`
	Items         []ItemInput `json:"items"`
	Original      *Original   `json:"original,omitempty"`
}

// Buyer is the recipient of an invoice. A registered buyer (GSTIN) needs
// its Address (CGST Rule 46(d)); the server answers 422
// particulars_missing (ErrParticularsMissing) without it.
type Buyer struct {
	GSTIN   string   `json:"gstin,omitempty"`
	Name    string   `json:"name,omitempty"`
	Address *Address `json:"address,omitempty"`
}

// Address is a postal address: Line1, City and (in India) PIN are
// required; State is the two-digit GST state code, which for a registered
// buyer the server takes from the GSTIN when it is empty.
type Address struct {
	Line1 string `json:"line1"`
	Line2 string `json:"line2,omitempty"`
	City  string `json:"city"`
	PIN   string `json:"pin,omitempty"`
	State string `json:"state,omitempty"`
}

// ShipTo is the address of delivery (CGST Rule 46(e)), its State required.
type ShipTo struct {
	Name    string  `json:"name,omitempty"`
	Address Address `json:"address"`
}

// Original is the invoice a credit note, debit note or revised invoice
// corrects.
type Original struct {
	Number      string `json:"number"`
	InvoiceDate string `json:"invoice_date"`
	// External declares an original not issued by invoiced (by other
	// software, or before the move); Reason says why and is kept.
	External bool   `json:"external,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// ItemInput is one line of an IssueRequest.
type ItemInput struct {
	Description string `json:"description"`
	HSN         string `json:"hsn"`
	Quantity    string `json:"quantity"`
	UnitPrice   string `json:"unit_price"`
	GSTRate     string `json:"gst_rate"`
}

// Item is one line of an issued invoice, with its computed amounts.
type Item struct {
	Description string `json:"description"`
	HSN         string `json:"hsn"`
	Quantity    string `json:"quantity"`
	UnitPrice   string `json:"unit_price"`
	GSTRate     string `json:"gst_rate"`
	Taxable     string `json:"taxable"`
	CGST        string `json:"cgst"`
	SGST        string `json:"sgst"`
	IGST        string `json:"igst"`
	Total       string `json:"total"`
}

// Totals are an invoice's amounts.
type Totals struct {
	Taxable string `json:"taxable"`
	CGST    string `json:"cgst"`
	SGST    string `json:"sgst"`
	IGST    string `json:"igst"`
	Total   string `json:"total"`
}

// Invoice is an issued (or cancelled) invoice.
type Invoice struct {
	ID            string     `json:"id"` // "CH1-2026-7"
	Number        string     `json:"number"`
	Serial        int64      `json:"serial"`
	FY            string     `json:"fy"`
	Series        string     `json:"series"`
	DocType       string     `json:"doc_type"`
	InvoiceDate   string     `json:"invoice_date"`
	IssuedAt      time.Time  `json:"issued_at"`
	Status        string     `json:"status"` // issued or cancelled
	PublicID      string     `json:"public_id"`
	ReceiptURL    string     `json:"receipt_url"` // absolute under the server's --public-url, else the path /r/{public_id}
	Buyer         *Buyer     `json:"buyer,omitempty"`
	ShipTo        *ShipTo    `json:"ship_to,omitempty"`
	PlaceOfSupply string     `json:"place_of_supply"`
	Original      *Original  `json:"original,omitempty"`
	Totals        Totals     `json:"totals"`
	Items         []Item     `json:"items"`
	CancelledAt   *time.Time `json:"cancelled_at,omitempty"`
	CancelReason  string     `json:"cancel_reason,omitempty"`
	// EInvoice is its registration at the IRP (docs/e-invoice.md); nil
	// from a server before e-invoicing.
	EInvoice *EInvoice `json:"e_invoice,omitempty"`

	// Replayed is true when the answer replayed an earlier attempt's
	// (Idempotent-Replayed: true): the same invoice, issued once.
	Replayed bool `json:"-"`
}

// The statuses of an e-invoice registration (EInvoice.Status).
const (
	EInvoicePending       = "pending"        // queued or in flight; an IRN may exist already
	EInvoiceRegistered    = "registered"     // IRN, Ack No., Ack date and signed QR code set
	EInvoiceFailed        = "failed"         // refused by the IRP: no IRN; Error says why
	EInvoiceCancelled     = "cancelled"      // the invoice is cancelled and no live IRN remains
	EInvoiceNotApplicable = "not_applicable" // B2C, a document the IRP does not register, or e-invoicing off
)

// EInvoice is an invoice's registration at the IRP, the Invoice
// Registration Portal (docs/e-invoice.md). A Rule 48(4) tax invoice prints
// IRN and the QR code of SignedQRCode.
type EInvoice struct {
	Status       string     `json:"status"`
	IRN          string     `json:"irn,omitempty"`
	AckNo        string     `json:"ack_no,omitempty"`
	AckDate      *time.Time `json:"ack_date,omitempty"`
	SignedQRCode string     `json:"signed_qr_code,omitempty"` // the IRP's signed JWT
	Error        string     `json:"error,omitempty"`          // why it failed, or what the last attempt met
}

// InvoiceList is one page of ListInvoices: at most the limit asked for and
// at most 4 MiB of invoices, so a page may be short with more to come.
type InvoiceList struct {
	Invoices []Invoice `json:"invoices"`
	// NextCursor is the cursor of the next page; nil on the last.
	NextCursor *string `json:"next_cursor"`
}

// CancelRequest is the body of CancelInvoice.
type CancelRequest struct {
	Reason string `json:"reason"`
	// EInvoiceReason is the IRP's reason when the invoice's IRN is
	// cancelled (EInvoiceReasonDuplicate, …); empty means other.
	EInvoiceReason string `json:"e_invoice_reason,omitempty"`
}

// The IRP's reasons for cancelling an IRN (CancelRequest.EInvoiceReason).
const (
	EInvoiceReasonDuplicate      = "duplicate"
	EInvoiceReasonDataEntry      = "data_entry_mistake"
	EInvoiceReasonOrderCancelled = "order_cancelled"
	EInvoiceReasonOther          = "other"
)

// Audit is the JSON serial audit of one series-year (docs/reports.md).
type Audit struct {
	Summary map[string]any `json:"summary"`
	Rows    []AuditRow     `json:"rows"`
}

// AuditRow is one number of an Audit.
type AuditRow struct {
	Serial       int64     `json:"serial"`
	Number       string    `json:"number"`
	InvoiceDate  string    `json:"invoice_date"`
	IssuedAt     time.Time `json:"issued_at"`
	Status       string    `json:"status"`
	CancelReason string    `json:"cancel_reason,omitempty"`
	BuyerGSTIN   string    `json:"buyer_gstin,omitempty"`
	Taxable      string    `json:"taxable,omitempty"`
	CGST         string    `json:"cgst,omitempty"`
	SGST         string    `json:"sgst,omitempty"`
	IGST         string    `json:"igst,omitempty"`
	Total        string    `json:"total,omitempty"`
	Hash         string    `json:"hash,omitempty"`
	// The rest of what the chain seals (docs/chain.md), so that a third
	// party can recompute it from the export alone.
	BuyerName      string `json:"buyer_name,omitempty"`
	PlaceOfSupply  string `json:"place_of_supply,omitempty"`
	OriginalNumber string `json:"original_number,omitempty"`
	OriginalDate   string `json:"original_date,omitempty"`
	CancelledAt    string `json:"cancelled_at,omitempty"`
	IssuePosition  int64  `json:"issue_position,omitempty"`
	CancelPosition int64  `json:"cancel_position,omitempty"`
	CancelHash     string `json:"cancel_hash,omitempty"`
	ID             string `json:"id,omitempty"`        // the invoice's id in the API
	PublicID       string `json:"public_id,omitempty"` // its receipt link's id
	// BuyerAddress and ShipTo are the addresses every part written (nil
	// when none); either makes the row's chain records version 2.
	BuyerAddress *AuditAddress `json:"buyer_address,omitempty"`
	ShipTo       *AuditShipTo  `json:"ship_to,omitempty"`
	// IRN and AckNo are the invoice's registration at the IRP ("" when it
	// has none).
	IRN   string `json:"irn,omitempty"`
	AckNo string `json:"ack_no,omitempty"`
	Items []Item `json:"items,omitempty"` // the lines as the chain seals them
}

// AuditAddress is a buyer's address in an AuditRow, every part written.
type AuditAddress struct {
	Line1 string `json:"line1"`
	Line2 string `json:"line2"`
	City  string `json:"city"`
	PIN   string `json:"pin"`
	State string `json:"state"`
}

// AuditShipTo is an address of delivery in an AuditRow.
type AuditShipTo struct {
	Name  string `json:"name"`
	Line1 string `json:"line1"`
	Line2 string `json:"line2"`
	City  string `json:"city"`
	PIN   string `json:"pin"`
	State string `json:"state"`
}

// PeriodLock is a month locked after its GSTR-1 was filed: no invoice
// dated in it may be issued or cancelled.
type PeriodLock struct {
	FP       string    `json:"fp"` // "112026"
	LockedAt time.Time `json:"locked_at"`
	LockedBy string    `json:"locked_by"`
}

// PeriodEvent is one lock or unlock of a month.
type PeriodEvent struct {
	FP     string    `json:"fp"`
	Action string    `json:"action"` // "lock" or "unlock"
	At     time.Time `json:"at"`
	By     string    `json:"by"`
	Reason string    `json:"reason,omitempty"` // an unlock's
}

// Periods is the seller's locked months (newest first) and every lock and
// unlock (oldest first).
type Periods struct {
	Locks   []PeriodLock  `json:"locks"`
	History []PeriodEvent `json:"history"`
}

// DocIssue is GSTR-1 Table 13 for a return period.
type DocIssue struct {
	GSTIN    string        `json:"gstin"`
	FP       string        `json:"fp"`
	DocIssue DocIssueTable `json:"doc_issue"`
}

// DocIssueTable is DocIssue's doc_issue section.
type DocIssueTable struct {
	DocDet []DocDet `json:"doc_det"`
}

// DocDet is one nature of document (doc_num) of a DocIssue.
type DocDet struct {
	DocNum int            `json:"doc_num"`
	Docs   []DocIssueDocs `json:"docs"`
}

// DocIssueDocs is one series' range in a DocDet.
type DocIssueDocs struct {
	Num      int    `json:"num"`
	From     string `json:"from"`
	To       string `json:"to"`
	TotNum   int    `json:"totnum"`
	Cancel   int    `json:"cancel"`
	NetIssue int    `json:"net_issue"`
}

// BatchItem is one invoice of IssueBatch: an IssueRequest with its own
// idempotency key.
type BatchItem struct {
	// IdempotencyKey identifies the item across retries (1 to 255
	// printable ASCII characters, distinct within the batch); IssueBatch
	// makes one when it is empty.
	IdempotencyKey string      `json:"idempotency_key"`
	InvoiceDate    string      `json:"invoice_date,omitempty"`
	Buyer          *Buyer      `json:"buyer,omitempty"`
	ShipTo         *ShipTo     `json:"ship_to,omitempty"`
	PlaceOfSupply  string      `json:"place_of_supply,omitempty"`
	Items          []ItemInput `json:"items"`
	Original       *Original   `json:"original,omitempty"`
}

// BatchRequest is the body of IssueBatch.
type BatchRequest struct {
	Invoices []BatchItem `json:"invoices"`
}

// BatchResults is the answer of IssueBatch: one result per item, in
// request order.
type BatchResults struct {
	Results []BatchResult `json:"results"`
}

// BatchResult is the outcome of one item of a batch: Status 201 with
// Invoice (Replayed when an earlier send issued it), or the status and
// error the single-invoice route would have answered.
type BatchResult struct {
	Status   int          `json:"status"`
	Replayed bool         `json:"replayed,omitempty"`
	Invoice  *Invoice     `json:"invoice,omitempty"`
	Error    *ResultError `json:"error,omitempty"`
}

// ResultError is the error of a refused batch item.
type ResultError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Err returns the item's refusal as an *Error (Status, Code, Message),
// or nil when the item was issued.
func (r BatchResult) Err() *Error {
	if r.Status >= 200 && r.Status < 300 {
		return nil
	}
	e := &Error{Status: r.Status}
	if r.Error != nil {
		e.Code, e.Message = r.Error.Code, r.Error.Message
	}
	return e
}

// Event types a webhook subscribes to.
const (
	EventInvoiceIssued    = "invoice.issued"
	EventInvoiceCancelled = "invoice.cancelled"
	// The invoice's registration at the IRP changed (Invoice.EInvoice).
	EventEInvoiceRegistered = "invoice.e_invoice_registered"
	EventEInvoiceFailed     = "invoice.e_invoice_failed"
	EventEInvoiceCancelled  = "invoice.e_invoice_cancelled"
)

// WebhookRequest registers a webhook.
type WebhookRequest struct {
	URL    string   `json:"url"`    // absolute http(s)
	Events []string `json:"events"` // EventInvoiceIssued, EventInvoiceCancelled, EventEInvoice…
}

// Webhook is a registered webhook. Secret, the key of its signatures, is
// set only in the answer of CreateWebhook.
type Webhook struct {
	ID        string    `json:"id"` // "wh_…"
	URL       string    `json:"url"`
	Events    []string  `json:"events"`
	CreatedAt time.Time `json:"created_at"`
	Secret    string    `json:"secret,omitempty"`
}

// WebhookList is the answer of ListWebhooks.
type WebhookList struct {
	Webhooks []Webhook `json:"webhooks"`
}

// Event is one change delivered to webhooks and listed by ListEvents.
type Event struct {
	ID        string    `json:"id"` // "CH1-2026-7.issued": deduplicate deliveries by it
	Type      string    `json:"type"`
	CreatedAt time.Time `json:"created_at"`
	Data      EventData `json:"data"`
}

// EventData is an Event's payload: the invoice as GetInvoice returns it,
// as issued for invoice.issued, cancelled for invoice.cancelled, as it is
// now for the e-invoice events.
type EventData struct {
	Invoice Invoice `json:"invoice"`
}

// EventList is one page of ListEvents.
type EventList struct {
	Events []Event `json:"events"`
	// NextAfter is the page's last event id when more events follow now
	// (a page holds at most the limit and at most 4 MiB); nil when the
	// page ends the log for now.
	NextAfter *string `json:"next_after"`
}
