package reports

import (
	"archive/zip"
	"bufio"
	"context"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5"
	"github.com/xuri/excelize/v2"
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
	// LockedPeriods are the months of the year locked after filing
	// GSTR-1 (docs/periods.md), oldest first.
	LockedPeriods []LockedPeriod `json:"locked_periods"`

	Findings        []Finding `json:"findings"`
	FindingsOmitted int       `json:"findings_omitted"`
}

// Row is one invoice of a serial audit, with every field its chain records
// seal, so that a third party can recompute the chain from the JSON export
// alone (docs/chain.md). Amounts are decimal strings with two places;
// instants are UTC as the chain writes them (invoice.Timestamp). Hash and
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
	Hash           string `json:"hash"`
	BuyerName      string `json:"buyer_name"`
	PlaceOfSupply  string `json:"place_of_supply"` // state code
	OriginalNumber string `json:"original_number"` // the invoice a note corrects; "" otherwise
	OriginalDate   string `json:"original_date"`   // its date, YYYY-MM-DD; "" otherwise
	CancelledAt    string `json:"cancelled_at"`    // "" unless cancelled
	IssuePosition  int64  `json:"issue_position"`
	CancelPosition int64  `json:"cancel_position"`
	CancelHash     string `json:"cancel_hash"`
	// Items are the lines as the chain seals them (JSON export only).
	Items []RowItem `json:"items,omitempty"`
	// InvoiceID is the invoice's id in the API (not exported: it is not
	// part of the record).
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
	DeclaredAt      string `json:"declared_at"`       // UTC, invoice.Timestamp
	DeclaredBy      string `json:"declared_by"`
	Position        int64  `json:"position"` // always 1
	Hash            string `json:"hash"`     // the opening record's stored hash
}

// LockedPeriod is a month locked after filing.
type LockedPeriod struct {
	FP       string `json:"fp"` // MMYYYY
	LockedAt string `json:"locked_at"`
	LockedBy string `json:"locked_by"`
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
func WriteAudit(ctx context.Context, db DB, seller series.Seller, s series.Series, fy series.FY, format string, w io.Writer) error {
	if ContentType(format) == "" {
		return apperr.Errorf(ErrInvalidFormat, "report format %q must be csv, json or xlsx", format)
	}
	return readTx(ctx, db, func(tx pgx.Tx) error { return WriteAuditTx(ctx, tx, seller, s, fy, format, w) })
}

// WriteAuditTx is WriteAudit inside the caller's transaction, which should
// be REPEATABLE READ so that both passes see the same rows.
func WriteAuditTx(ctx context.Context, tx pgx.Tx, seller series.Seller, s series.Series, fy series.FY, format string, w io.Writer) error {
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
	err = walkInvoices(ctx, tx, s.ID, fy, func(r *invoiceRow) error { return aw.row(rowOf(r)) })
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
func WriteAuditSummary(ctx context.Context, db DB, seller series.Seller, s series.Series, fy series.FY, format string, w io.Writer) error {
	aw, err := newAuditWriter(format, w)
	if err != nil {
		return err
	}
	defer aw.abort()
	return readTx(ctx, db, func(tx pgx.Tx) error {
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
// row, invoice or chain record), and database errors.
func AuditSummaryTx(ctx context.Context, tx pgx.Tx, seller series.Seller, s series.Series, fy series.FY) (Summary, error) {
	ctr, err := counterOf(ctx, tx, s.ID, fy)
	if err != nil {
		return Summary{}, err
	}
	res, err := check(ctx, tx, string(seller.GSTIN), seriesYear{Series: s, FY: fy, Counter: ctr})
	if err != nil {
		return Summary{}, err
	}
	if ctr == nil && res.Invoices == 0 && res.Records == 0 {
		return Summary{}, apperr.Errorf(ErrSeriesYearNotFound, "series %s has no invoice in %s", s.Code, fy)
	}
	sum := summaryOf(seller, s, fy, res)
	if sum.LockedPeriods, err = lockedPeriods(ctx, tx, seller.ID, fy); err != nil {
		return Summary{}, err
	}
	if err := addLeaseFindings(ctx, tx, seller, s, fy, &sum); err != nil {
		return Summary{}, err
	}
	return sum, nil
}

func summaryOf(seller series.Seller, s series.Series, fy series.FY, res ChainResult) Summary {
	highest := res.LastSerial // the declared serials count as stored
	if res.Opening != nil {
		highest = max(highest, res.Opening.LastSerial)
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
		Findings: nonNil(res.Findings), FindingsOmitted: res.Omitted,
	}
	if op := res.Opening; op != nil {
		sum.Opening = &OpeningSummary{LastSerial: op.LastSerial, LastNumber: op.LastNumber,
			LastInvoiceDate: op.LastInvoiceDate.Format(time.DateOnly), DeclaredAt: invoice.Timestamp(op.DeclaredAt),
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

func rowOf(r *invoiceRow) *Row {
	row := &Row{
		Serial: r.Serial, Number: r.Number, InvoiceDate: r.InvoiceDate.Format(time.DateOnly), InvoiceID: r.ID,
		IssuedAt: invoice.Timestamp(r.IssuedAt), Status: r.Status, CancelReason: r.CancelReason,
		BuyerGSTIN: r.BuyerGSTIN, Taxable: r.Taxable, CGST: r.CGST, SGST: r.SGST, IGST: r.IGST, Total: r.Total,
		Hash: hex.EncodeToString(r.IssueHash), BuyerName: r.BuyerName, PlaceOfSupply: r.PlaceOfSupply,
		OriginalNumber: r.OriginalNumber, IssuePosition: r.IssuePosition, CancelPosition: r.CancelPosition,
		CancelHash: hex.EncodeToString(r.CancelHash),
		issuedAt:   r.IssuedAt, invoiceDate: r.InvoiceDate, cancelledAt: r.CancelledAt, items: r.Items,
	}
	if r.OriginalDate != nil {
		row.OriginalDate = r.OriginalDate.Format(time.DateOnly)
	}
	if r.CancelledAt != nil {
		row.CancelledAt = invoice.Timestamp(*r.CancelledAt)
	}
	return row
}

// rowItems decodes stored items JSON into the chain's canonical values.
func rowItems(stored []byte) ([]RowItem, error) {
	var items []invoice.Item
	if err := json.Unmarshal(stored, &items); err != nil {
		return nil, err
	}
	out := make([]RowItem, len(items))
	for i, it := range items {
		out[i] = RowItem{Description: it.Description, HSN: it.HSN,
			Quantity: it.Quantity.String(), UnitPrice: it.UnitPrice.String(), GSTRate: it.GSTRate.String(),
			Taxable: invoice.Money(it.Taxable), CGST: invoice.Money(it.CGST), SGST: invoice.Money(it.SGST),
			IGST: invoice.Money(it.IGST), Total: invoice.Money(it.Total)}
	}
	return out, nil
}

// auditWriter renders one export format.
type auditWriter interface {
	summary(Summary) error
	beginRows() error // after summary, before the first row
	row(*Row) error
	close() error // completes the export
	abort()       // releases resources; harmless after close
}

// rowHeader is the header of the rows, shared by CSV and XLSX.
var rowHeader = []string{"Serial", "Number", "Invoice date", "Issued at (UTC)", "Status", "Cancel reason", "Buyer GSTIN",
	"Taxable", "CGST", "SGST", "IGST", "Total", "Hash",
	"Buyer name", "Place of supply", "Original number", "Original date", "Cancelled at (UTC)",
	"Issue position", "Cancel position", "Cancel hash"}

// summaryField is one line of the summary block (CSV, XLSX).
type summaryField struct {
	label string
	value any // string or int64
}

// fields returns the summary as labelled lines, lists joined with "; "
// and ranges written "7 to 9" (so spreadsheets do not read them as dates).
func (s Summary) fields() []summaryField {
	none := func(parts []string) string {
		if len(parts) == 0 {
			return "none"
		}
		return strings.Join(parts, "; ")
	}
	var gaps, dupS, dupN, regr, locked []string
	opening := "none"
	if o := s.Opening; o != nil {
		opening = fmt.Sprintf("1 to %d (last %s dated %s; declared %s by %s)", o.LastSerial, o.LastNumber, o.LastInvoiceDate, o.DeclaredAt, o.DeclaredBy)
	}
	for _, l := range s.LockedPeriods {
		locked = append(locked, fmt.Sprintf("%s (locked %s by %s)", l.FP, l.LockedAt, l.LockedBy))
	}
	for _, g := range s.Gaps {
		if g.From == g.To {
			gaps = append(gaps, fmt.Sprint(g.From))
		} else {
			gaps = append(gaps, fmt.Sprintf("%d to %d", g.From, g.To))
		}
	}
	for _, d := range s.DuplicateSerials {
		dupS = append(dupS, fmt.Sprint(d))
	}
	for _, d := range s.DuplicateNumbers {
		dupN = append(dupN, fmt.Sprintf("%s (serials %s)", d.Number, joinInts(d.Serials)))
	}
	for _, d := range s.DateRegressions {
		regr = append(regr, fmt.Sprintf("%s dated %s after %s", d.Number, d.InvoiceDate, d.PreviousDate))
	}
	drift := "none"
	switch {
	case s.CounterDrift > 0:
		drift = fmt.Sprintf("counter ahead by %d (last_serial %d, highest stored %d)", s.CounterDrift, s.CounterLastSerial, s.MaxSerial)
	case s.CounterDrift < 0:
		drift = fmt.Sprintf("counter behind by %d (last_serial %d, highest stored %d)", -s.CounterDrift, s.CounterLastSerial, s.MaxSerial)
	}
	intact := "yes"
	if !s.Intact {
		intact = "no"
	}
	out := []summaryField{
		{"Seller GSTIN", s.SellerGSTIN},
		{"Series", s.Series},
		{"Document type", s.DocType},
		{"Financial year", s.FY},
		{"First number", s.FirstNumber},
		{"Last number", s.LastNumber},
		{"Total", s.Total},
		{"Cancelled", s.Cancelled},
		{"Net issued", s.NetIssued},
		{"Gaps", none(gaps)},
		{"Duplicate serials", none(dupS)},
		{"Duplicate numbers", none(dupN)},
		{"Dated before predecessor", none(regr)},
		{"Counter drift", drift},
		{"Chain records", s.ChainRecords},
		{"Chain", s.Chain},
		{"Chain length", s.ChainLength},
		{"Chain head", s.ChainHead},
		{"Intact", intact},
		{"Issued before invoiced", opening},
		{"Locked periods", none(locked)},
	}
	for _, f := range s.Findings {
		out = append(out, summaryField{"Finding", f.String()})
	}
	if s.FindingsOmitted > 0 {
		out = append(out, summaryField{"Findings omitted", int64(s.FindingsOmitted)})
	}
	return out
}

// ---- CSV

// utf8BOM lets Excel detect UTF-8.
const utf8BOM = "\uFEFF"

type csvWriter struct {
	w             *bufio.Writer
	c             *csv.Writer
	rec           []string
	summaryFields []summaryField // set by summary until beginRows
}

func newCSVWriter(w io.Writer) *csvWriter {
	bw := bufio.NewWriterSize(w, 64<<10)
	c := csv.NewWriter(bw)
	c.UseCRLF = true // RFC 4180
	return &csvWriter{w: bw, c: c, rec: make([]string, len(rowHeader))}
}

// summary writes the summary as a table of its own (Field, Value), which
// only WriteAuditSummary asks for: the audit's CSV is the rows alone.
func (cw *csvWriter) summary(s Summary) error {
	cw.summaryFields = s.fields()
	return nil
}

func (cw *csvWriter) beginRows() error {
	cw.summaryFields = nil
	if _, err := cw.w.WriteString(utf8BOM); err != nil {
		return err
	}
	return cw.c.Write(rowHeader)
}

func (cw *csvWriter) row(r *Row) error {
	rec := cw.rec
	rec[0], rec[1], rec[2], rec[3], rec[4] = strconv.FormatInt(r.Serial, 10), r.Number, r.InvoiceDate, r.IssuedAt, r.Status
	rec[5], rec[6], rec[7], rec[8], rec[9] = defuse(r.CancelReason), r.BuyerGSTIN, r.Taxable, r.CGST, r.SGST
	rec[10], rec[11], rec[12] = r.IGST, r.Total, r.Hash
	rec[13], rec[14], rec[15], rec[16], rec[17] = defuse(r.BuyerName), r.PlaceOfSupply, r.OriginalNumber, r.OriginalDate, r.CancelledAt
	rec[18], rec[19], rec[20] = position(r.IssuePosition), position(r.CancelPosition), r.CancelHash
	return cw.c.Write(rec)
}

// position returns p in decimal, or "" for 0 (no such record).
func position(p int64) string {
	if p == 0 {
		return ""
	}
	return strconv.FormatInt(p, 10)
}

func (cw *csvWriter) close() error {
	if cw.summaryFields != nil { // the summary alone
		if _, err := cw.w.WriteString(utf8BOM); err != nil {
			return err
		}
		cw.c.Write([]string{"Field", "Value"})
		for _, f := range cw.summaryFields {
			cw.c.Write([]string{f.label, defuse(fmt.Sprint(f.value))})
		}
	}
	cw.c.Flush()
	if err := cw.c.Error(); err != nil {
		return err
	}
	return cw.w.Flush()
}

func (cw *csvWriter) abort() {}

// defuse prefixes free text that a spreadsheet would run as a formula
// (leading =, +, -, @, tab or CR, after any spaces) with an apostrophe
// (OWASP "CSV injection"). A spreadsheet in a locale whose list separator
// is ';' splits each line at semicolons, quotes or not (a quote opens a
// field only at its start), so every ';'-separated part is defused as if
// it began a cell. The cancel reason and the buyer's name are the free
// text in the rows.
func defuse(s string) string {
	if !strings.ContainsRune(s, ';') {
		return defusePart(s)
	}
	parts := strings.Split(s, ";")
	for i, p := range parts {
		parts[i] = defusePart(p)
	}
	return strings.Join(parts, ";")
}

func defusePart(s string) string {
	if t := strings.TrimLeft(s, " "); t != "" && strings.ContainsRune("=+-@\t\r", rune(t[0])) {
		return "'" + s
	}
	return s
}

// ---- JSON

type jsonWriter struct {
	w     *bufio.Writer
	first bool
	rows  bool // beginRows was called
}

func newJSONWriter(w io.Writer) *jsonWriter {
	return &jsonWriter{w: bufio.NewWriterSize(w, 64<<10), first: true}
}

func (jw *jsonWriter) summary(s Summary) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	jw.w.WriteString(`{"summary":`)
	_, err = jw.w.Write(b)
	return err
}

func (jw *jsonWriter) beginRows() error {
	jw.rows = true
	_, err := jw.w.WriteString(",\n\"rows\":[")
	return err
}

func (jw *jsonWriter) row(r *Row) error {
	items, err := rowItems(r.items)
	if err != nil {
		return fmt.Errorf("reports: items of serial %d: %w", r.Serial, err)
	}
	r.Items = items
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if !jw.first {
		jw.w.WriteByte(',')
	}
	jw.first = false
	jw.w.WriteByte('\n')
	_, err = jw.w.Write(b)
	return err
}

func (jw *jsonWriter) close() error {
	if jw.rows {
		jw.w.WriteString("\n]")
	}
	jw.w.WriteString("}\n")
	return jw.w.Flush()
}

func (jw *jsonWriter) abort() {}

// ---- XLSX

// maxSheetRows is how many invoice rows one sheet takes below its header
// (Excel's limit is 1,048,576 rows); more continue on "Rows 2", "Rows 3"….
const maxSheetRows = 1048576 - 1

type xlsxWriter struct {
	w                                  io.Writer
	f                                  *excelize.File
	sw                                 *excelize.StreamWriter
	sheet                              int // number of the current rows sheet
	n                                  int // rows written to it
	bold, left, amount, date, datetime int
	cells                              []any
}

func newXLSXWriter(w io.Writer) *xlsxWriter {
	return &xlsxWriter{w: w, f: excelize.NewFile(), cells: make([]any, len(rowHeader))}
}

func (xw *xlsxWriter) styles() error {
	var err error
	styles := []struct {
		id *int
		st *excelize.Style
	}{
		{&xw.bold, &excelize.Style{Font: &excelize.Font{Bold: true}}},
		{&xw.left, &excelize.Style{Alignment: &excelize.Alignment{Horizontal: "left"}}},
		{&xw.amount, &excelize.Style{CustomNumFmt: ptr("#,##0.00")}},
		{&xw.date, &excelize.Style{CustomNumFmt: ptr("yyyy-mm-dd")}},
		{&xw.datetime, &excelize.Style{CustomNumFmt: ptr("yyyy-mm-dd hh:mm:ss")}},
	}
	for _, s := range styles {
		if *s.id, err = xw.f.NewStyle(s.st); err != nil {
			return err
		}
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// printLayout makes sheet print landscape, fitted to the page width.
func (xw *xlsxWriter) printLayout(sheet string) error {
	if err := xw.f.SetPageLayout(sheet, &excelize.PageLayoutOptions{
		Orientation: ptr("landscape"), FitToWidth: ptr(1), FitToHeight: ptr(0),
	}); err != nil {
		return err
	}
	return xw.f.SetSheetProps(sheet, &excelize.SheetPropsOptions{FitToPage: ptr(true)})
}

func (xw *xlsxWriter) summary(s Summary) error {
	if err := xw.styles(); err != nil {
		return err
	}
	if err := xw.f.SetSheetName("Sheet1", "Summary"); err != nil {
		return err
	}
	if err := xw.printLayout("Summary"); err != nil {
		return err
	}
	sw, err := xw.f.NewStreamWriter("Summary")
	if err != nil {
		return err
	}
	if err := sw.SetColWidth(1, 1, 26); err != nil {
		return err
	}
	if err := sw.SetColWidth(2, 2, 100); err != nil {
		return err
	}
	if err := sw.SetRow("A1", []any{excelize.Cell{StyleID: xw.bold, Value: "Field"}, excelize.Cell{StyleID: xw.bold, Value: "Value"}}); err != nil {
		return err
	}
	for i, f := range s.fields() {
		cell, _ := excelize.CoordinatesToCellName(1, i+2)
		if err := sw.SetRow(cell, []any{excelize.Cell{StyleID: xw.bold, Value: f.label}, excelize.Cell{StyleID: xw.left, Value: f.value}}); err != nil {
			return err
		}
	}
	return sw.Flush()
}

func (xw *xlsxWriter) beginRows() error { return xw.newRowsSheet() }

// newRowsSheet flushes the current rows sheet, if any, and starts the next.
func (xw *xlsxWriter) newRowsSheet() error {
	if xw.sw != nil {
		if err := xw.sw.Flush(); err != nil {
			return err
		}
	}
	xw.sheet++
	name := "Rows"
	if xw.sheet > 1 {
		name = fmt.Sprintf("Rows %d", xw.sheet)
	}
	if _, err := xw.f.NewSheet(name); err != nil {
		return err
	}
	if err := xw.printLayout(name); err != nil {
		return err
	}
	sw, err := xw.f.NewStreamWriter(name)
	if err != nil {
		return err
	}
	widths := []float64{9, 18, 12, 20, 10, 30, 17, 14, 12, 12, 12, 14, 66, 30, 8, 18, 12, 20, 9, 9, 66}
	for i, wd := range widths {
		if err := sw.SetColWidth(i+1, i+1, wd); err != nil {
			return err
		}
	}
	if err := sw.SetPanes(&excelize.Panes{Freeze: true, YSplit: 1, TopLeftCell: "A2", ActivePane: "bottomLeft"}); err != nil {
		return err
	}
	head := make([]any, len(rowHeader))
	for i, h := range rowHeader {
		h = strings.Replace(h, "(UTC)", "(IST)", 1)
		head[i] = excelize.Cell{StyleID: xw.bold, Value: h}
	}
	if err := sw.SetRow("A1", head); err != nil {
		return err
	}
	xw.sw, xw.n = sw, 0
	return nil
}

func (xw *xlsxWriter) row(r *Row) error {
	if xw.n == maxSheetRows {
		if err := xw.newRowsSheet(); err != nil {
			return err
		}
	}
	xw.n++
	c := xw.cells
	c[0], c[1] = r.Serial, r.Number
	c[2] = excelize.Cell{StyleID: xw.date, Value: r.invoiceDate}
	c[3] = excelize.Cell{StyleID: xw.datetime, Value: r.issuedAt.In(series.IST)}
	c[4], c[5], c[6] = r.Status, nilIfEmpty(r.CancelReason), nilIfEmpty(r.BuyerGSTIN)
	for i, a := range []string{r.Taxable, r.CGST, r.SGST, r.IGST, r.Total} {
		v, err := strconv.ParseFloat(a, 64)
		if err != nil {
			return fmt.Errorf("reports: amount %q of serial %d: %w", a, r.Serial, err)
		}
		c[7+i] = excelize.Cell{StyleID: xw.amount, Value: v}
	}
	c[12] = r.Hash
	c[13], c[14], c[15] = nilIfEmpty(r.BuyerName), r.PlaceOfSupply, nilIfEmpty(r.OriginalNumber)
	c[16], c[17] = nil, nil
	if r.OriginalDate != "" {
		d, err := time.Parse(time.DateOnly, r.OriginalDate)
		if err != nil {
			return err
		}
		c[16] = excelize.Cell{StyleID: xw.date, Value: d}
	}
	if r.cancelledAt != nil {
		c[17] = excelize.Cell{StyleID: xw.datetime, Value: r.cancelledAt.In(series.IST)}
	}
	c[18], c[19], c[20] = r.IssuePosition, nilIfZero(r.CancelPosition), nilIfEmpty(r.CancelHash)
	cell, _ := excelize.CoordinatesToCellName(1, xw.n+1)
	return xw.sw.SetRow(cell, c)
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nilIfZero(n int64) any {
	if n == 0 {
		return nil
	}
	return n
}

func (xw *xlsxWriter) close() error {
	if xw.sw != nil {
		if err := xw.sw.Flush(); err != nil {
			return err
		}
	}
	// File.WriteTo assembles the whole zip in a bytes.Buffer it passes to
	// the ZipWriter factory; ignoring that buffer and zipping straight to
	// w keeps memory flat. (SetActiveSheet is not called: it would parse
	// the streamed sheets back into memory; Summary, the first sheet, is
	// active already.)
	var zw *zip.Writer
	xw.f.SetZipWriter(func(io.Writer) excelize.ZipWriter {
		zw = zip.NewWriter(xw.w)
		return zw
	})
	if _, err := xw.f.WriteTo(io.Discard); err != nil {
		return err
	}
	if zw == nil {
		return errors.New("reports: excelize did not use the zip writer")
	}
	return nil
}

func (xw *xlsxWriter) abort() { xw.f.Close() }
