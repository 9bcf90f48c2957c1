package readplans_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/internal/testfactory"
)

// call is one read request and the rows its answer stands for: no plan
// node of its statements may handle more than slack(rows) rows.
type call struct {
	name   string
	tn     *tenant
	path   string
	rows   int
	status int // the answer's status; 0 means 200
}

// slack is the most rows a plan node may handle for an answer standing
// for rows rows: a few passes over them, and a constant for the small
// lookups every request makes and for tables small enough that reading
// them whole is the right plan (the skewed fixture's 300 sellers).
func slack(rows int) float64 { return float64(4*rows + 1000) }

// reads returns the read routes of tn's series code (year 2026-27, n
// invoices numbered prefix<serial:7>, dated up to lastDay, today holding
// today of them and cancelled of them cancelled) with the rows each
// answer stands for.
func reads(t *testing.T, s *server, tn *tenant, code, prefix string, n, today, cancelled int, lastDay, publicID string) []call {
	t.Helper()
	ctx := t.Context()
	s.signIn(t, tn)
	var dbID int64
	if err := s.pool.QueryRow(ctx, `SELECT i.id FROM invoices i JOIN series s ON s.id = i.series_id WHERE i.seller_id = $1 AND s.code = $2 AND i.serial = $3`,
		tn.seller.ID, code, n/2+1).Scan(&dbID); err != nil {
		t.Fatalf("invoice id: %v", err)
	}
	mid, late := n/2, n-1
	number := fmt.Sprintf("%s%07d", prefix, late)
	key := fmt.Sprintf("%s-2026-%d", code, late)
	var events struct {
		Events []struct {
			ID string `json:"id"`
		} `json:"events"`
	}
	if err := json.Unmarshal(s.get(t, tn, fmt.Sprintf("/v1/events?limit=%d", min(1000, mid))), &events); err != nil || len(events.Events) == 0 {
		t.Fatalf("events: %v", err)
	}
	after := events.Events[len(events.Events)-1].ID
	page := 101
	year := n + cancelled
	cursor := url.QueryEscape(encodeCursor(int64(mid)))
	return []call{
		{"list series", tn, "/v1/series", 10, 0},
		{"list invoices", tn, "/v1/series/" + code + "/invoices?fy=2026-27&limit=100", page, 0},
		{"list invoices from a cursor", tn, "/v1/series/" + code + "/invoices?fy=2026-27&limit=100&cursor=" + cursor, page, 0},
		{"list invoices of the last day", tn, "/v1/series/" + code + "/invoices?limit=100&from=" + lastDay + "&to=" + lastDay, page, 0},
		{"find by number", tn, "/v1/invoices?number=" + url.QueryEscape(number), 4, 0},
		{"get by key", tn, "/v1/invoices/" + key, 4, 0},
		{"get by database id", tn, fmt.Sprintf("/v1/invoices/%d", dbID), 4, 0},
		{"events", tn, "/v1/events?limit=100", page, 0},
		{"events after", tn, "/v1/events?limit=100&after=" + url.QueryEscape(after), page, 0},
		{"webhooks", tn, "/v1/webhooks", 4, 0},
		{"periods", tn, "/v1/periods", 4, 0},
		{"receipt", tn, "/r/" + publicID, 4, 0},
		{"lease", tn, "/v1/series/" + code + "/lease", 4, 404},
		{"doc issue", tn, "/v1/reports/gstr1/doc-issue?fp=112026", year, 0},
		{"audit json", tn, "/v1/series/" + code + "/audit?fy=2026-27&format=json", year, 0},
		{"audit csv", tn, "/v1/series/" + code + "/audit?fy=2026-27&format=csv", year, 0},
		{"audit summary", tn, "/v1/series/" + code + "/audit?fy=2026-27&format=json&part=summary", year, 0},
		{"console overview", tn, "/console/", today + cancelled + 10, 0},
		{"console series-year page", tn, "/console/series/" + code + "/2026-27", page, 0},
		{"console series-year page from a serial", tn, fmt.Sprintf("/console/series/%s/2026-27?after=%d", code, mid), page, 0},
		{"console series-year page of a number", tn, "/console/series/" + code + "/2026-27?number=" + url.QueryEscape(number), page, 0},
		{"console check", tn, "/console/series/" + code + "/2026-27/check", year, 0},
		{"console audit download", tn, "/console/series/" + code + "/2026-27/audit?format=csv", year, 0},
		{"console gstr1", tn, "/console/gstr1?fp=112026", year, 0},
		{"console gstr1 json", tn, "/console/gstr1.json?fp=112026", year, 0},
		{"console find", tn, "/console/find?number=" + url.QueryEscape(number), 4, 303},
		{"console leases", tn, "/console/leases", 10, 0},
		{"console verify", tn, "/console/verify", year, 0},
		{"console cancel form", tn, "/console/invoices/" + key + "/cancel", 4, 0},
		{"console lock form", tn, "/console/periods/112026/lock", year, 0},
	}
}

// encodeCursor is the API's list cursor after serial (api/params.go).
func encodeCursor(serial int64) string {
	return base64URL("s" + fmt.Sprint(serial))
}

// check runs c and fails the test for each plan node that handled more
// rows than the answer stands for.
func (s *server) check(t *testing.T, c call, round int) {
	t.Helper()
	s.plans.record()
	status, body := s.do(t, c.tn, "GET", c.path, "")
	got := s.plans.stop()
	if want := cmp.Or(c.status, 200); status != want {
		t.Fatalf("GET %s: %d, want %d: %.400s", c.path, status, want, body)
	}
	if len(got) == 0 {
		t.Errorf("%s (%s): no statement was explained", c.name, c.path)
	}
	limit := slack(c.rows)
	for _, p := range got {
		var worst []string
		p.Root.walk(func(n node) {
			if n.work() > limit {
				worst = append(worst, n.describe())
			}
		})
		if len(worst) > 0 {
			t.Errorf("%s, call %d (%s): a plan handles more than %.0f rows for an answer of %d:\n  %s\nstatement:%s",
				c.name, round, c.path, limit, c.rows, strings.Join(worst, "\n  "), oneLine(p.Query))
		}
	}
}

func oneLine(q string) string { return " " + strings.Join(strings.Fields(q), " ") }

// TestReadPlansBounded runs every read route of the API and the console
// (and so every report the CLI writes) on the two states of the tables
// whose statistics have misled the planner, and fails for any plan node
// that handles more rows than its answer stands for: a filter that throws
// away more than the page, a sort of the year for a page, a nested loop
// that aggregates the year again for each invoice. It reads the plans the
// statements ran with (auto_explain), so it judges what ran, not a timing.
//
//   - fresh: 4,000 invoices issued by the batch route into a new database,
//     its tables never analysed (autovacuum off);
//   - skewed: one seller with 20,000 invoices beside 300 with three,
//     analysed, each route called again and again for a small seller and
//     the large one, so that prepared statements go generic.
func TestReadPlansBounded(t *testing.T) {
	t.Parallel()
	t.Run("fresh", func(t *testing.T) {
		t.Parallel()
		s := newServer(t, 8)
		noAutovacuum(t, s.pool)
		tn := s.newTenant(t, testfactory.SellerGSTIN)
		testfactory.Series(t, s.pool, tn.seller, &testfactory.SeriesOpts{Code: "BIG", Format: "B/{FY}/{SEQ:7}"})
		if status, body := s.do(t, tn, "POST", "/v1/webhooks", `{"url":"http://127.0.0.1:9/hook","events":["invoice.issued","invoice.cancelled"]}`); status != 201 {
			t.Fatalf("webhook: %d %s", status, body)
		}
		const n = 4000
		last := s.issueBurst(t, tn, "BIG", n)
		const cancelled = 5
		for i := range cancelled {
			if status, body := s.do(t, tn, "POST", fmt.Sprintf("/v1/invoices/BIG-2026-%d/cancel", n-10*i), `{"reason":"returned"}`); status != 200 {
				t.Fatalf("cancel: %d %s", status, body)
			}
		}
		lastDay := s.clock.now().Format("2006-01-02")
		for _, c := range reads(t, s, tn, "BIG", "B/26-27/", n, n%500+500*boolInt(n%500 == 0), cancelled, lastDay, last) {
			for round := range 2 {
				s.check(t, c, round)
			}
		}
	})
	t.Run("skewed", func(t *testing.T) {
		t.Parallel()
		s := newServer(t, 2)
		big := s.newTenant(t, "29AABCR1718E1ZL")
		small := s.newTenant(t, testfactory.SellerGSTIN)
		b1 := testfactory.Series(t, s.pool, big.seller, &testfactory.SeriesOpts{Code: "B1", Format: "B1/{FY}/{SEQ:7}"})
		s1 := testfactory.Series(t, s.pool, small.seller, &testfactory.SeriesOpts{Code: "S1", Format: "S1/{FY}/{SEQ:7}"})
		const n = 20000
		seedSeries(t, s.pool, big.seller, b1, "B1/26-27/", n)
		seedSeries(t, s.pool, small.seller, s1, "S1/26-27/", 3)
		seedSmallSellers(t, s.pool, 300, 3)
		for _, tn := range []*tenant{big, small} {
			if status, body := s.do(t, tn, "POST", "/v1/webhooks", `{"url":"http://127.0.0.1:9/hook","events":["invoice.issued","invoice.cancelled"]}`); status != 201 {
				t.Fatalf("webhook: %d %s", status, body)
			}
		}
		bigLast := s.issueBurst(t, big, "B1", 1)
		smallLast := s.issueBurst(t, small, "S1", 1)
		if _, err := s.pool.Exec(t.Context(), `ANALYZE`); err != nil {
			t.Fatal(err)
		}
		lastDay := s.clock.now().Format("2006-01-02")
		bigCalls := reads(t, s, big, "B1", "B1/26-27/", n+1, 1, 0, lastDay, bigLast)
		smallCalls := reads(t, s, small, "S1", "S1/26-27/", 4, 1, 0, lastDay, smallLast)
		// Each route over and over, the small seller's calls first: a
		// statement prepared on a connection goes generic after five
		// executions, planned for the average seller. The whole-year
		// reports of the large seller take a second or two each: they run
		// once, after the small seller's have run seven times.
		for i := range bigCalls {
			rounds := 8
			if bigCalls[i].rows > 1000 {
				for round := range 7 {
					s.check(t, smallCalls[i], round)
				}
				rounds = 1
			}
			for round := range rounds {
				s.check(t, smallCalls[i], round)
				s.check(t, bigCalls[i], round)
			}
		}
	})
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
