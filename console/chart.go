package console

import (
	"fmt"
	"html/template"
	"strings"
	"time"

	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/reports"
)

// Chart geometry, in SVG user units.
const (
	chartW, chartH = 720.0, 200.0
	padL, padB     = 36.0, 22.0
	padT, padR     = 10.0, 8.0
)

// minChartDays is the fewest days a chart spans: a year begun today, or
// whose invoices fill a few days, gets bars of a readable width with the
// days around them, not one bar across the whole chart.
const minChartDays = 14

// chartSVG returns a bar chart of the invoices per day of year fy, from the
// month of its first invoice to its last day or today, whichever is
// earlier, and at least minChartDays days (within the year): one bar per
// day, its cancelled part in red, the highest count on the axis, and
// below a label per month, or per week ("1 Dec", "8 Dec") when the chart
// spans two months or less. It holds only numbers and dates the code
// writes, so it is safe to embed. Without invoices it returns a short
// note.
func chartSVG(days []reports.DayCount, fy gst.FY, today time.Time) template.HTML {
	if len(days) == 0 {
		return template.HTML(`<p class="muted">No invoices in this year yet.</p>`)
	}
	start, end := chartSpan(days, fy, today)
	n := int(end.Sub(start).Hours()/24) + 1
	var maxN int64 = 1
	for _, d := range days {
		maxN = max(maxN, d.Issued)
	}
	plotW, plotH := chartW-padL-padR, chartH-padT-padB
	bw := plotW / float64(n)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %g %g" role="img" aria-label="Invoices per day, %s" xmlns="http://www.w3.org/2000/svg">`, chartW, chartH, fy)
	fmt.Fprintf(&b, `<line x1="%g" y1="%g" x2="%g" y2="%g" class="axis"/>`, padL, padT+plotH, padL+plotW, padT+plotH)
	fmt.Fprintf(&b, `<text x="%g" y="%g" class="lbl" text-anchor="end">%d</text>`, padL-4, padT+8, maxN)
	fmt.Fprintf(&b, `<text x="%g" y="%g" class="lbl" text-anchor="end">0</text>`, padL-4, padT+plotH)
	step, layout := func(d time.Time) time.Time { return d.AddDate(0, 1, 0) }, "Jan"
	if n <= 62 {
		step, layout = func(d time.Time) time.Time { return d.AddDate(0, 0, 7) }, "2 Jan"
	}
	for d := start; !d.After(end); d = step(d) {
		x := padL + float64(int(d.Sub(start).Hours()/24))*bw
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%g" x2="%.1f" y2="%g" class="tick"/><text x="%.1f" y="%g" class="lbl">%s</text>`,
			x, padT+plotH, x, padT+plotH+4, x+2, chartH-6, d.Format(layout))
	}
	for _, d := range days {
		i := int(d.Date.Sub(start).Hours() / 24)
		if i < 0 || i >= n {
			continue
		}
		x := padL + float64(i)*bw
		h := plotH * float64(d.Issued) / float64(maxN)
		hc := plotH * float64(d.Cancelled) / float64(maxN)
		w := max(bw-0.5, 0.8)
		fmt.Fprintf(&b, `<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" class="bar"><title>%s: %d issued, %d cancelled</title></rect>`,
			x, padT+plotH-h, w, h, d.Date.Format("2 Jan 2006"), d.Issued, d.Cancelled)
		if hc > 0 {
			fmt.Fprintf(&b, `<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" class="bar-cancelled"/>`, x, padT+plotH-hc, w, hc)
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// chartSpan returns the first and last day a chart of days (in date
// order, at least one) of year fy shows on the day today: from the first
// invoice's month (a year moved here mid-way, or just begun, gets readable
// bars) to the year's end or today, whichever is earlier, and to the last
// invoice's date when that is later; widened to minChartDays days, back
// from the end, within the year (forward when the year begins in it).
func chartSpan(days []reports.DayCount, fy gst.FY, today time.Time) (start, end time.Time) {
	first := days[0].Date
	start, end = time.Date(first.Year(), first.Month(), 1, 0, 0, 0, 0, time.UTC), fy.End()
	if start.Before(fy.Start()) {
		start = fy.Start()
	}
	if today.Before(end) {
		end = today
	}
	if last := days[len(days)-1].Date; last.After(end) {
		end = last
	}
	if span := int(end.Sub(start).Hours()/24) + 1; span < minChartDays {
		start = end.AddDate(0, 0, -(minChartDays - 1))
		if start.Before(fy.Start()) {
			start = fy.Start()
			end = start.AddDate(0, 0, minChartDays-1)
		}
	}
	return start, end
}
