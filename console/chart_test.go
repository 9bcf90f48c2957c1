package console

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/reports"
)

// A chart of one day's invoices is not one bar across the chart labelled
// with the month: it spans at least two weeks, labelled by week, and its
// bar is a day wide; a year-long chart is labelled by month.
func TestChartOfOneDay(t *testing.T) {
	t.Parallel()
	day := func(s string) time.Time { d, _ := time.Parse(time.DateOnly, s); return d }
	widths := regexp.MustCompile(`<rect [^>]*width="([0-9.]+)"[^>]*class="bar"`)
	labels := regexp.MustCompile(`class="lbl">([^<]+)</text>`)
	for _, c := range []struct {
		name       string
		days       []reports.DayCount
		today      string
		wantLabels string
		maxWidth   float64
	}{
		{"one day, the year well begun", []reports.DayCount{{Date: day("2026-12-01"), Issued: 5}}, "2026-12-01", "18 Nov 25 Nov", 50},
		{"the first day of the year", []reports.DayCount{{Date: day("2026-04-01"), Issued: 3}}, "2026-04-01", "1 Apr 8 Apr", 50},
		{"a year", []reports.DayCount{{Date: day("2026-04-01"), Issued: 3}, {Date: day("2027-03-30"), Issued: 1}}, "2027-03-31",
			"Apr May Jun Jul Aug Sep Oct Nov Dec Jan Feb Mar", 2},
	} {
		svg := string(chartSVG(c.days, 2026, day(c.today)))
		var got []string
		for _, m := range labels.FindAllStringSubmatch(svg, -1) {
			got = append(got, m[1])
		}
		if strings.Join(got, " ") != c.wantLabels {
			t.Errorf("%s: labels %q, want %q", c.name, strings.Join(got, " "), c.wantLabels)
		}
		for _, m := range widths.FindAllStringSubmatch(svg, -1) {
			var w float64
			if _, err := fmt.Sscan(m[1], &w); err != nil || w > c.maxWidth {
				t.Errorf("%s: a bar %s wide, want at most %g", c.name, m[1], c.maxWidth)
			}
		}
	}
}
