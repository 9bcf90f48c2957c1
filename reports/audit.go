package reports

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/jackc/pgx/v5"
)

// Audit export formats.
const (
	FormatCSV  = "csv"
	FormatJSON = "json"
	FormatXLSX = "xlsx"
)

// ContentType returns the media type of an audit export in format, or ""
// for an unknown format.
func ContentType(format string) string {
	switch format {
	case FormatCSV:
		return "text/csv; charset=utf-8"
	case FormatJSON:
		return "application/json"
	case FormatXLSX:
		return "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
	}
	return ""
}

// Summary is the head of a serial audit: what the whole series-year holds
// and every break found in it. Lists are capped at MaxFindings entries.
type Summary struct {
	SellerGSTIN string `json:"seller_gstin"`
	Series      string `json:"series"`
	DocType     string `json:"doc_type"`
	FY          string `json:"fy"`
	FirstNumber string `json:"first_number"` // lowest serial's number; "" when empty
	LastNumber  string `json:"last_number"`
	Total       int64  `json:"total"` // invoice rows
	Cancelled   int64  `json:"cancelled"`
	NetIssued   int64  `json:"net_issued"`

	Gaps             []SerialRange     `json:"gaps"` // missing serials, up to the counter's last_serial
	DuplicateSerials []int64           `json:"duplicate_serials"`
	DuplicateNumbers []DuplicateNumber `json:"duplicate_numbers"`
	DateRegressions  []DateRegression  `json:"date_regressions"`

	CounterLastSerial int64 `json:"counter_last_serial"`
	MaxSerial         int64 `json:"max_serial"`
	// CounterDrift is counter_last_serial − max_serial: positive when the
	// counter is ahead of the rows, negative when behind; 0 when intact.
	CounterDrift int64 `json:"counter_drift"`

	ChainRecords int64  `json:"chain_records"`
	Chain        string `json:"chain"`  // "ok" or "broken at position N: reason"
	Intact       bool   `json:"intact"` // no finding of any kind
	// ChainLength and ChainHead are the counter row's chain_length and
	// chain_head (lower-case hex; "" when there is none): the values to
	// anchor outside the database (docs/chain.md).
	ChainLength int64  `json:"chain_length"`
	ChainHead   string `json:"chain_head"`
	// Opening declares the serials issued before invoiced (1..last_serial,
	// not gaps) and seals them in the chain's first record; null when the
	// series-year started here (docs/openings.md).
	Opening *OpeningSummary `json:"opening"`
	// Declared are the serials settlements declared spent: printed, or
	// perhaps printed, by a lost offline device and never uploaded
	// (docs/offline.md); not gaps, each sealed by a declared record of
	// the chain. Empty when there are none.
	Declared []DeclaredSummary `json:"declared"`
	// LockedPeriods are the months of the year locked after filing
	// GSTR-1 (docs/periods.md), oldest first.
	LockedPeriods []LockedPeriod `json:"locked_periods"`

	Findings        []Finding `json:"findings"`
	FindingsOmitted int       `json:"findings_omitted"`
}

// Row is one invoice of a serial audit, with every field its chain records
// seal, so that a third party can recompute the chain from the JSON export
// alone (docs/chain.md). Amounts are decimal strings with two places;
// instants are UTC as the chain writes them (document.Timestamp). Hash and
// CancelHash are the hex SHA-256 of the invoice's issue and cancel records
// as stored, at IssuePosition and CancelPosition ("" and 0 when there is no
// such record).
type Row struct {
	Serial         int64  `json:"serial"`
	Number         string `json:"number"`
	InvoiceDate    string `json:"invoice_date"` // YYYY-MM-DD
	IssuedAt       string `json:"issued_at"`
	Status         string `json:"status"`
	CancelReason   string `json:"cancel_reason"`
	BuyerGSTIN     string `json:"buyer_gstin"`
	Taxable        string `json:"taxable"`
	CGST           string `json:"cgst"`
	SGST           string `json:"sgst"`
	IGST           string `json:"igst"`
	Total          string `json:"total"`
	BuyerName      string `json:"buyer_name"`
	PlaceOfSupply  string `json:"place_of_supply"` // state code
	OriginalNumber string `json:"original_number"` // the invoice a note corrects; "" otherwise
	OriginalDate   string `json:"original_date"`   // its date, YYYY-MM-DD; "" otherwise
	CancelledAt    string `json:"cancelled_at"`    // "" unless cancelled
	IssuePosition  int64  `json:"issue_position"`
	CancelPosition int64  `json:"cancel_position"`
	// ID is the invoice's id in the API ("CH1-2026-7", document.Key),
	// PublicID its receipt link's id (/r/{public_id}). Added after the
	// columns above, so that their order stays.
	ID       string `json:"id"`
	PublicID string `json:"public_id"`
	// BuyerAddress and ShipTo are the buyer's address and the address of
	// delivery (CGST Rule 46(d)-(f)); null when the invoice has none.
	// Either makes its chain records version 2 (docs/chain.md).
	BuyerAddress *RowAddress `json:"buyer_address"`
	ShipTo       *RowShipTo  `json:"ship_to"`
	// IRN and AckNo are the invoice's registration at the IRP
	// (docs/e-invoice.md): "" when it has none.
	IRN   string `json:"irn"`
	AckNo string `json:"ack_no"`
	// EInvoice is the registration's status as recorded ("" without a
	// record: not applicable, or queued for the IRP workers) and
	// EInvoiceError its last error (the console shows them; not exported).
	EInvoice      string `json:"-"`
	EInvoiceError string `json:"-"`
	Hash          string `json:"hash"`
	CancelHash    string `json:"cancel_hash"`
	// Items are the lines as the chain seals them (JSON export only).
	Items []RowItem `json:"items,omitempty"`
	// InvoiceID is the invoice row's database id (not exported: it is not
	// part of the record, and not the API's id).
	InvoiceID int64 `json:"-"`

	issuedAt    time.Time // for XLSX
	invoiceDate time.Time
	cancelledAt *time.Time
	items       []byte // the stored JSON, decoded into Items by the JSON writer
}

// OpeningSummary is an opening declaration as the audit shows it, with
// what a third party needs to rebuild the chain's first record.
type OpeningSummary struct {
	LastSerial      int64  `json:"last_serial"`
	LastNumber      string `json:"last_number"`
	LastInvoiceDate string `json:"last_invoice_date"` // YYYY-MM-DD
	DeclaredAt      string `json:"declared_at"`       // UTC, document.Timestamp
	DeclaredBy      string `json:"declared_by"`
	Position        int64  `json:"position"` // always 1
	Hash            string `json:"hash"`     // the opening record's stored hash
}

// DeclaredSummary is one settlement's declaration as the audit shows it,
// with what a third party needs to rebuild its chain record.
type DeclaredSummary struct {
	FirstSerial int64  `json:"first_serial"`
	LastSerial  int64  `json:"last_serial"`
	FirstNumber string `json:"first_number"`
	LastNumber  string `json:"last_number"`
	Count       int64  `json:"count"`
	DeviceID    string `json:"device_id"`
	DeclaredAt  string `json:"declared_at"` // UTC, document.Timestamp
	DeclaredOn  string `json:"declared_on"` // YYYY-MM-DD: the record's invoice_date, Table 13's date
	DeclaredBy  string `json:"declared_by"`
	Reason      string `json:"reason"`
	Position    int64  `json:"position"`
	Hash        string `json:"hash"` // the declared record's stored hash
}

// LockedPeriod is a month locked after filing.
type LockedPeriod struct {
	FP       string `json:"fp"` // MMYYYY
	LockedAt string `json:"locked_at"`
	LockedBy string `json:"locked_by"`
}

// RowAddress is an address in the JSON audit, every part written (""
// when empty) as the chain's canonical form takes it.
type RowAddress struct {
	Line1 string `json:"line1"`
	Line2 string `json:"line2"`
	City  string `json:"city"`
	PIN   string `json:"pin"`
	State string `json:"state"` // two-digit GST state code
}

// RowShipTo is an address of delivery in the JSON audit: who receives
// the goods ("" when not given) and the address's parts.
type RowShipTo struct {
	Name string `json:"name"`
	RowAddress
}

// rowAddress returns a as the JSON audit writes it; nil for nil.
func rowAddress(a *document.Address) *RowAddress {
	if a == nil {
		return nil
	}
	return &RowAddress{Line1: a.Line1, Line2: a.Line2, City: a.City, PIN: a.PIN, State: a.State}
}

// oneLine returns a on one line, as the CSV and XLSX write it ("14
// Residency Road, Bengaluru 560025, 29-Karnataka"); "" for nil.
func (a *RowAddress) oneLine() string {
	if a == nil {
		return ""
	}
	return document.Address{Line1: a.Line1, Line2: a.Line2, City: a.City, PIN: a.PIN, State: a.State}.OneLine()
}

// oneLine returns st on one line, its name first; "" for nil.
func (st *RowShipTo) oneLine() string {
	if st == nil {
		return ""
	}
	if st.Name == "" {
		return st.RowAddress.oneLine()
	}
	return st.Name + ", " + st.RowAddress.oneLine()
}

// RowItem is one line of an invoice in the JSON audit, each value written
// exactly as the chain's canonical form takes it: quantity, unit price and
// rate as the shortest decimal, amounts with two places.
type RowItem struct {
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

// WriteAudit writes the serial audit of series s of seller for year fy to
// w in format (FormatCSV, FormatJSON or FormatXLSX; docs/reports.md
// describes each): one row per invoice in serial order, after the summary
// in JSON and XLSX (the CSV is the rows alone, one rectangular table;
// WriteAuditSummary writes its summary).
//
// It reads one snapshot (a read-only REPEATABLE READ transaction) in two
// streaming passes: the first verifies the series-year as Verify does and
// fills the summary, the second writes the rows as they arrive from the
// database, so memory stays flat whatever the size (XLSX rows pass through
// excelize's temporary file).
//
// It returns ErrInvalidFormat before touching the database or w,
// ErrSeriesYearNotFound (before writing) when the series-year has no
// counter row, invoice or chain record, database errors, and w's write
// errors; after a failure w may hold a partial export.
func WriteAudit(ctx context.Context, b db.OptionsBeginner, seller gst.Seller, s gst.Series, fy gst.FY, format string, w io.Writer) error {
	if ContentType(format) == "" {
		return apperr.Errorf(ErrInvalidFormat, "report format %q must be csv, json or xlsx", format)
	}
	return readTx(ctx, b, func(tx pgx.Tx) error { return WriteAuditTx(ctx, tx, seller, s, fy, format, w) })
}

// WriteAuditTx is WriteAudit inside the caller's transaction, which should
// be REPEATABLE READ so that both passes see the same rows.
func WriteAuditTx(ctx context.Context, tx pgx.Tx, seller gst.Seller, s gst.Series, fy gst.FY, format string, w io.Writer) error {
	aw, err := newAuditWriter(format, w)
	if err != nil {
		return err
	}
	defer aw.abort()
	sum, err := AuditSummaryTx(ctx, tx, seller, s, fy)
	if err != nil {
		return err
	}
	if err := aw.summary(sum); err != nil {
		return err
	}
	if err := aw.beginRows(); err != nil {
		return err
	}
	err = walkInvoices(ctx, tx, s, fy, func(r *invoiceRow) error {
		row, err := rowOf(r, s.Code, fy)
		if err != nil {
			return err
		}
		return aw.row(row)
	})
	if err != nil {
		return err
	}
	return aw.close()
}

// newAuditWriter returns the writer of format on w; it fails with
// ErrInvalidFormat for a format other than csv, json and xlsx.
func newAuditWriter(format string, w io.Writer) (auditWriter, error) {
	switch format {
	case FormatCSV:
		return newCSVWriter(w), nil
	case FormatJSON:
		return newJSONWriter(w), nil
	case FormatXLSX:
		return newXLSXWriter(w), nil
	}
	return nil, apperr.Errorf(ErrInvalidFormat, "report format %q must be csv, json or xlsx", format)
}

// WriteAuditSummary writes the summary of the serial audit alone, as
// WriteAudit would head it: in CSV two columns (Field, Value), in JSON
// {"summary": {…}}, in XLSX the Summary sheet. It fails as WriteAudit does.
func WriteAuditSummary(ctx context.Context, b db.OptionsBeginner, seller gst.Seller, s gst.Series, fy gst.FY, format string, w io.Writer) error {
	aw, err := newAuditWriter(format, w)
	if err != nil {
		return err
	}
	defer aw.abort()
	return readTx(ctx, b, func(tx pgx.Tx) error {
		sum, err := AuditSummaryTx(ctx, tx, seller, s, fy)
		if err != nil {
			return err
		}
		if err := aw.summary(sum); err != nil {
			return err
		}
		return aw.close()
	})
}

// AuditSummaryTx returns the summary of the serial audit of s in fy, read
// inside tx (the first pass of WriteAudit). It returns
// ErrSeriesYearNotFound when the series-year holds nothing (no counter
// row, invoice or chain record, and no unsettled forced end of a lease
// that may have numbered it), and database errors.
func AuditSummaryTx(ctx context.Context, tx pgx.Tx, seller gst.Seller, s gst.Series, fy gst.FY) (Summary, error) {
	ctr, err := counterOf(ctx, tx, s, fy)
	if err != nil {
		return Summary{}, err
	}
	res, err := check(ctx, tx, string(seller.GSTIN), seriesYear{Series: s, FY: fy, Counter: ctr})
	if err != nil {
		return Summary{}, err
	}
	sum := summaryOf(seller, s, fy, res)
	if err := addLeaseFindings(ctx, tx, seller, s, fy, &sum); err != nil {
		return Summary{}, err
	}
	// A year a lost device may have numbered is audited even when nothing
	// of it reached the server: its finding is the point.
	if ctr == nil && res.Invoices == 0 && res.Records == 0 && len(sum.Findings) == 0 {
		return Summary{}, apperr.Errorf(ErrSeriesYearNotFound, "series %s has no invoice in %s", s.Code, fy)
	}
	if sum.LockedPeriods, err = lockedPeriods(ctx, tx, seller.ID, fy); err != nil {
		return Summary{}, err
	}
	return sum, nil
}

func summaryOf(seller gst.Seller, s gst.Series, fy gst.FY, res ChainResult) Summary {
	highest := res.LastSerial // the declared serials count as stored
	if res.Opening != nil {
		highest = max(highest, res.Opening.LastSerial)
	}
	declared := []DeclaredSummary{}
	for _, d := range res.Declared {
		highest = max(highest, d.Last)
		declared = append(declared, DeclaredSummary{FirstSerial: d.First, LastSerial: d.Last, FirstNumber: d.FirstNumber, LastNumber: d.LastNumber,
			Count: d.Count(), DeviceID: d.DeviceID, DeclaredAt: document.Timestamp(d.DeclaredAt), DeclaredOn: d.DeclaredOn.Format(time.DateOnly),
			DeclaredBy: d.DeclaredBy, Reason: d.Reason, Position: d.Position, Hash: hex.EncodeToString(d.Hash)})
	}
	sum := Summary{
		SellerGSTIN: string(seller.GSTIN), Series: s.Code, DocType: string(s.DocType), FY: fy.String(),
		FirstNumber: res.FirstNumber, LastNumber: res.LastNumber,
		Total: res.Invoices, Cancelled: res.Cancelled, NetIssued: res.NetIssued(),
		Gaps: nonNil(res.Gaps), DuplicateSerials: nonNil(res.DuplicateSerials),
		DuplicateNumbers: nonNil(res.DuplicateNumbers), DateRegressions: nonNil(res.DateRegressions),
		CounterLastSerial: res.CounterLastSerial, MaxSerial: highest,
		CounterDrift: res.CounterLastSerial - highest,
		ChainRecords: res.Records, Chain: res.Verdict(), Intact: res.OK(),
		ChainLength: res.ChainLength, ChainHead: hex.EncodeToString(res.ChainHead),
		Findings: nonNil(res.Findings), FindingsOmitted: res.Omitted, Declared: declared,
	}
	if op := res.Opening; op != nil {
		sum.Opening = &OpeningSummary{LastSerial: op.LastSerial, LastNumber: op.LastNumber,
			LastInvoiceDate: op.LastInvoiceDate.Format(time.DateOnly), DeclaredAt: document.Timestamp(op.DeclaredAt),
			DeclaredBy: op.DeclaredBy, Position: 1, Hash: hex.EncodeToString(res.OpeningHash)}
	}
	return sum
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// rowOf returns r, an invoice of series code in year fy, as an audit row.
// It fails when a stored address is not the JSON the issuer writes.
func rowOf(r *invoiceRow, code string, fy gst.FY) (*Row, error) {
	row := &Row{
		ID: document.Key(code, fy, r.Serial), PublicID: r.PublicID,
		Serial: r.Serial, Number: r.Number, InvoiceDate: r.InvoiceDate.Format(time.DateOnly), InvoiceID: r.ID,
		IssuedAt: document.Timestamp(r.IssuedAt), Status: r.Status, CancelReason: r.CancelReason,
		BuyerGSTIN: r.BuyerGSTIN, Taxable: r.Taxable, CGST: r.CGST, SGST: r.SGST, IGST: r.IGST, Total: r.Total,
		Hash: hex.EncodeToString(r.IssueHash), BuyerName: r.BuyerName, PlaceOfSupply: r.PlaceOfSupply,
		OriginalNumber: r.OriginalNumber, IssuePosition: r.IssuePosition, CancelPosition: r.CancelPosition,
		CancelHash: hex.EncodeToString(r.CancelHash), IRN: r.IRN, AckNo: r.AckNo, EInvoice: r.EInvoice, EInvoiceError: r.EInvoiceError,
		issuedAt: r.IssuedAt, invoiceDate: r.InvoiceDate, cancelledAt: r.CancelledAt, items: r.Items,
	}
	if r.OriginalDate != nil {
		row.OriginalDate = r.OriginalDate.Format(time.DateOnly)
	}
	if r.CancelledAt != nil {
		row.CancelledAt = document.Timestamp(*r.CancelledAt)
	}
	var b document.Buyer
	var st *document.ShipTo
	if err := document.ParseAddresses(&b, &st, r.BuyerAddress, r.ShipTo); err != nil {
		return nil, fmt.Errorf("reports: serial %d: stored %w", r.Serial, err)
	}
	row.BuyerAddress = rowAddress(b.Address)
	if st != nil {
		row.ShipTo = &RowShipTo{Name: st.Name, RowAddress: *rowAddress(&st.Address)}
	}
	return row, nil
}

// rowItems decodes stored items JSON into the chain's canonical values.
func rowItems(stored []byte) ([]RowItem, error) {
	var items []document.Item
	if err := json.Unmarshal(stored, &items); err != nil {
		return nil, err
	}
	out := make([]RowItem, len(items))
	for i, it := range items {
		out[i] = RowItem{Description: it.Description, HSN: it.HSN,
			Quantity: it.Quantity.String(), UnitPrice: it.UnitPrice.String(), GSTRate: it.GSTRate.String(),
			Taxable: document.Money(it.Taxable), CGST: document.Money(it.CGST), SGST: document.Money(it.SGST),
			IGST: document.Money(it.IGST), Total: document.Money(it.Total)}
	}
	return out, nil
}
