package reports

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/jackc/pgx/v5"
)

// Period is a GSTR-1 return period: whole calendar months From to To
// (each the first day of its month as a civil date, 00:00 UTC), inside one
// financial year.
type Period struct {
	From, To time.Time
}

// FP returns the period's "fp" as GSTR-1 writes it, MMYYYY of its last
// month: "112026", or "062026" for 2026-27-Q1.
func (p Period) FP() string { return p.To.Format("012006") }

// FirstDay returns the period's first day.
func (p Period) FirstDay() time.Time { return p.From }

// LastDay returns the period's last day.
func (p Period) LastDay() time.Time { return p.To.AddDate(0, 1, -1) }

// String returns the period as ParsePeriod reads it: "112026" or
// "042026-062026".
func (p Period) String() string {
	if p.From.Equal(p.To) {
		return p.FP()
	}
	return p.From.Format("012006") + "-" + p.FP()
}

// ParsePeriod reads a return period written as
//   - MMYYYY, one month: "112026" is November 2026;
//   - MMYYYY-MMYYYY, a range of months, inclusive: "042026-062026";
//   - YYYY-YY-Qn, a quarter of a financial year: "2026-27-Q1" is April to
//     June 2026, Q2 July–September, Q3 October–December, Q4 January–March
//     2027 ("q1" is accepted too).
//
// It fails with ErrInvalidPeriod for any other shape, a month outside
// 01–12, a range that ends before it starts or spans two financial years,
// and a year outside gst.MinFY..MaxFY.
func ParsePeriod(s string) (Period, error) {
	s = strings.TrimSpace(s)
	bad := func(format string, args ...any) (Period, error) {
		return Period{}, apperr.Errorf(ErrInvalidPeriod, format, args...)
	}
	var p Period
	switch {
	case isQuarter(s):
		fy, err := gst.ParseFY(s[:7])
		if err != nil {
			return bad("period %q: %s", s, apperr.MessageOf(err))
		}
		q := int(s[9] - '0')
		p.From = fy.Start().AddDate(0, 3*(q-1), 0)
		p.To = p.From.AddDate(0, 2, 0)
		return p, nil
	case len(s) == 6:
		m, err := parseMonth(s)
		if err != nil {
			return Period{}, err
		}
		p.From, p.To = m, m
	case len(s) == 13 && s[6] == '-':
		from, err := parseMonth(s[:6])
		if err != nil {
			return Period{}, err
		}
		to, err := parseMonth(s[7:])
		if err != nil {
			return Period{}, err
		}
		if to.Before(from) {
			return bad("period %q ends before it starts", s)
		}
		if gst.FYOf(from) != gst.FYOf(to) {
			return bad("period %q spans financial years %s and %s; file one return per year", s, gst.FYOf(from), gst.FYOf(to))
		}
		p.From, p.To = from, to
	default:
		return bad("period %q must be MMYYYY (112026), MMYYYY-MMYYYY (042026-062026) or a quarter such as 2026-27-Q1", s)
	}
	if fy := gst.FYOf(p.From); !fy.Valid() {
		return bad("period %q is outside the financial years %s to %s", s, gst.MinFY, gst.MaxFY)
	}
	return p, nil
}

// isQuarter reports whether s looks like "2026-27-Q1".
func isQuarter(s string) bool {
	return len(s) == 10 && s[7] == '-' && (s[8] == 'Q' || s[8] == 'q') && s[9] >= '1' && s[9] <= '4'
}

// parseMonth reads MMYYYY as the first day of that month.
func parseMonth(s string) (time.Time, error) {
	if len(s) != 6 || strings.TrimLeft(s, "0123456789") != "" {
		return time.Time{}, apperr.Errorf(ErrInvalidPeriod, "month %q must be MMYYYY, e.g. 112026", s)
	}
	m, _ := strconv.Atoi(s[:2])
	y, _ := strconv.Atoi(s[2:])
	if m < 1 || m > 12 {
		return time.Time{}, apperr.Errorf(ErrInvalidPeriod, "month %q: %02d is not a month", s, m)
	}
	return time.Date(y, time.Month(m), 1, 0, 0, 0, 0, time.UTC), nil
}

// DocIssueReport is GSTR-1 Table 13 ("documents issued during the tax
// period") in the GST API JSON shape. Warnings, not part of the JSON, name
// series whose serials in the period are not contiguous (rows missing), so
// that totnum counts numbers that have no row.
type DocIssueReport struct {
	GSTIN    string          `json:"gstin"`
	FP       string          `json:"fp"`
	DocIssue DocIssueSection `json:"doc_issue"`
	Warnings []string        `json:"-"`
	// Declared notes each series-year whose serials up to an opening
	// (docs/openings.md) were issued before invoiced and dated in or
	// before the period: those documents are not in this table, and the
	// serials that follow are not a gap. Not part of the GST JSON.
	Declared []string `json:"-"`
}

// DocIssueSection is the doc_issue section.
type DocIssueSection struct {
	DocDet []DocDet `json:"doc_det"`
}

// DocDet is one nature of document (doc_num 1–12) and its series.
type DocDet struct {
	DocNum int        `json:"doc_num"`
	Docs   []DocRange `json:"docs"`
}

// DocRange is one series' documents in the period: numbers From to To,
// TotNum of them, Cancel cancelled, NetIssue = TotNum − Cancel. Num is its
// 1-based position within its DocDet.
type DocRange struct {
	Num      int    `json:"num"`
	From     string `json:"from"`
	To       string `json:"to"`
	TotNum   int64  `json:"totnum"`
	Cancel   int64  `json:"cancel"`
	NetIssue int64  `json:"net_issue"`
}

// DocIssue returns the seller's GSTR-1 Table 13 for period: for every
// series with documents dated in the period, grouped by doc_num (ascending)
// and ordered by series code within a group, the lowest and highest number
// dated in the period, the count of serials from..to, how many of those
// invoices are cancelled (as of now), and the net issued. A period with no
// documents gives an empty doc_det. It fails only when the database fails.
func DocIssue(ctx context.Context, b db.OptionsBeginner, seller gst.Seller, period Period) (DocIssueReport, error) {
	var rep DocIssueReport
	err := readTx(ctx, b, func(tx pgx.Tx) error {
		var err error
		rep, err = DocIssueTx(ctx, tx, seller, period)
		return err
	})
	return rep, err
}

// DocIssueTx is DocIssue inside the caller's transaction.
func DocIssueTx(ctx context.Context, tx pgx.Tx, seller gst.Seller, period Period) (DocIssueReport, error) {
	rep := DocIssueReport{GSTIN: string(seller.GSTIN), FP: period.FP(), DocIssue: DocIssueSection{DocDet: []DocDet{}}}
	rows, err := docIssueRows(ctx, tx, seller.ID, period.FirstDay(), period.LastDay())
	if err != nil {
		return DocIssueReport{}, err
	}
	if rows, err = declaredIn(ctx, tx, seller.ID, period.FirstDay(), period.LastDay(), rows); err != nil {
		return DocIssueReport{}, err
	}
	groups := map[int]*DocDet{}
	for _, r := range rows {
		n := r.DocType.DocNum()
		if n == 0 {
			return DocIssueReport{}, fmt.Errorf("reports: series %s has unknown document type %q", r.Code, r.DocType)
		}
		g := groups[n]
		if g == nil {
			g = &DocDet{DocNum: n}
			groups[n] = g
		}
		tot := r.Hi - r.Lo + 1
		if tot != r.Count {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("series %s %s: %s dated in %s but serials %d to %d span %s; run invoiced verify",
				r.Code, r.FY, Plural(r.Count, "invoice", "invoices"), period, r.Lo, r.Hi, Plural(tot, "number", "numbers")))
		}
		g.Docs = append(g.Docs, DocRange{Num: len(g.Docs) + 1, From: r.From, To: r.To, TotNum: tot, Cancel: r.Cancel, NetIssue: tot - r.Cancel})
	}
	for n := 1; n <= 12; n++ {
		if g := groups[n]; g != nil {
			rep.DocIssue.DocDet = append(rep.DocIssue.DocDet, *g)
		}
	}
	lw, err := leaseWarnings(ctx, tx, seller.ID)
	if err != nil {
		return DocIssueReport{}, err
	}
	rep.Warnings = append(rep.Warnings, lw...)
	ops, err := openingsOf(ctx, tx, seller.ID, gst.FYOf(period.FirstDay()))
	if err != nil {
		return DocIssueReport{}, err
	}
	for _, o := range ops {
		if o.LastInvoiceDate.Before(period.FirstDay()) {
			continue
		}
		rep.Declared = append(rep.Declared, fmt.Sprintf("series %s %s: serials 1 to %d (up to %s, dated up to %s) were issued before invoiced, declared %s by %s; report them from the earlier records",
			o.Code, o.FY, o.LastSerial, o.LastNumber, o.LastInvoiceDate.Format(time.DateOnly), o.DeclaredAt.Format(time.DateOnly), o.DeclaredBy))
	}
	return rep, nil
}
