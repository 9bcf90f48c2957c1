package console_test

import (
	"html"
	"regexp"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/lease"
)

var (
	tagRE = regexp.MustCompile(`(?s)<script.*?</script>|<style.*?</style>|<[^>]*>`)
	// developerText is what no page shows an accountant: how to run the
	// demo, API paths and CLI commands, the audit's internal terms, raw
	// templates, dates in ISO form, "none" for a count and a plural after 1.
	developerText = map[string]*regexp.Regexp{
		"the demo's commands":   regexp.MustCompile(`(?i)make run|\.data/|demo-key`),
		"API paths or curl":     regexp.MustCompile(`(?i)/v1/|\bcurl\b|\bPOST\b`),
		"CLI commands":          regexp.MustCompile(`(?i)invoiced (series|periods|leases|keys|sellers)\b|\bcli\b`),
		"mail the heads":        regexp.MustCompile(`(?i)mail the heads`),
		"audit jargon":          regexp.MustCompile(`(?i)counter drift|predecessor|chain head|last_serial|\bgaps?\b`),
		"a raw format template": regexp.MustCompile(`\{(SEQ|FY|YYYY|YY)[^}]*\}`),
		"an ISO date":           regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}\b`),
		"none for a count":      regexp.MustCompile(`(?i)\bnone\b`),
		"(s) for a plural":      regexp.MustCompile(`\w\(s\)`),
		"a plural after 1":      regexp.MustCompile(`\b1 (findings|records|invoices|documents|serials|numbers)\b`),
	}
)

// textOf returns the text a browser shows of an HTML page.
func textOf(body string) string {
	return strings.Join(strings.Fields(html.UnescapeString(tagRE.ReplaceAllString(body, " "))), " ")
}

// Every page speaks to an accountant: no developer text (the sign-in page
// named make run and .data/demo-key, the verify page said to mail the
// heads), plain words for the audit's terms, an example number for a
// series' format, one date style, 0 for nothing and 1 finding. The pages
// are walked with findings to show: a lease ended by force, a locked
// month and a series whose format has no year.
func TestPagesSpeakPlainly(t *testing.T) {
	t.Parallel()
	f := setup(t)
	dbtest.SetClock(t, f.pool, start) // October has ended by the database's clock too
	ctx := t.Context()
	demo := testfactory.Series(t, f.pool, f.seller, &testfactory.SeriesOpts{Code: "DEMO", Format: "D{SEQ:4}"})
	issueIn(t, f, demo, "2026-11-20")
	if _, err := lease.TakeLease(ctx, f.pool, f.ch1, "T07", "cli", start); err != nil {
		t.Fatal(err)
	}
	if _, err := lease.ForceEndLease(ctx, f.pool, f.ch1, "Till stolen", "cli", start); err != nil {
		t.Fatal(err)
	}
	oct, _ := document.ParseMonth("102026")
	if _, _, err := invoice.LockPeriod(ctx, f.pool, f.seller, oct, "cli", start); err != nil {
		t.Fatal(err)
	}
	pages := map[string]string{}
	anon := client(t)
	pages["/console/login"] = get(t, anon, f.url+"/console/login").body
	c := client(t)
	signIn(t, f, c, f.all)
	for _, u := range []string{"/console/", "/console/series/CH1/2026-27", "/console/series/CH1/2026-27/check", "/console/series/DEMO/2026-27/check",
		"/console/invoices/CH1-2026-1/cancel", "/console/gstr1?fp=112026", "/console/gstr1?fp=2026-27-Q3", "/console/verify",
		"/console/find?number=D0001", "/console/find?number=CH1/26-27/00099", "/console/series/DEMO/2026-27?number=CH1/26-27/00001",
		"/console/periods/092026/lock", "/console/periods/102026/lock", "/console/leases", "/console/leases/CH1/settle", "/console/nowhere"} {
		pages[u] = get(t, c, f.url+u).body
	}
	if s := textOf(pages["/console/series/CH1/2026-27/check"]); !strings.Contains(s, "NOT intact: 1 finding") || !strings.Contains(s, "Missing numbers 0") ||
		!strings.Contains(s, "settle its lease on the Offline devices page") {
		t.Errorf("the checked series-year with one finding (a lease ended by force, to settle on the menu's Offline devices page) says:\n%s", s)
	}
	if s := textOf(pages["/console/"]); !strings.Contains(s, "CH1/26-27/00001") || !strings.Contains(s, "D0001") {
		t.Errorf("the overview shows no example numbers:\n%s", s)
	}
	for u, body := range pages {
		text := textOf(body)
		for what, re := range developerText {
			if m := re.FindString(text); m != "" {
				i := strings.Index(text, m)
				t.Errorf("%s shows %s: %q in …%s…", u, what, m, text[max(0, i-80):min(len(text), i+80)])
			}
		}
	}
}
