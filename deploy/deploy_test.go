// Package deploy_test checks the operator files in deploy/: the Prometheus
// alert rules pass promtool (syntax and their unit tests), and every metric
// the rules and the Grafana dashboard name is served by /metrics.
package deploy_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/api"
	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/metrics"
	"github.com/invoiced/invoiced/internal/testfactory"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// promtool returns the path of promtool, failing the test when it is
// missing: make test (scripts/pg test) installs Debian's prometheus
// package when run as root.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not found: install Debian's prometheus package (apt-get install prometheus; make test does it when run as root)")
	}
	return p
}

// TestAlertRulesPassPromtool runs `promtool check rules` on the rules and
// `promtool test rules` on their unit tests (each alert fires on the
// series meant to fire it).
func TestAlertRulesPassPromtool(t *testing.T) {
	t.Parallel()
	bin := promtool(t)
	for _, args := range [][]string{{"check", "rules", "alerts.yml"}, {"test", "rules", "alerts_test.yml"}} {
		cmd := exec.CommandContext(t.Context(), bin, args...)
		cmd.Dir = "prometheus"
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

var metricName = regexp.MustCompile(`\binvoiced_[a-z0-9_]+`)

// TestRulesAndDashboardNameServedMetrics scrapes a server that issued and
// cancelled an invoice and checks that every invoiced_* name in the alert
// rules and the dashboard's queries is a metric it serves (a histogram's
// _bucket, _sum and _count included).
func TestRulesAndDashboardNameServedMetrics(t *testing.T) {
	t.Parallel()
	fams := scrape(t)
	rules, err := os.ReadFile("prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Query any `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	b, err := os.ReadFile("grafana/invoiced.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("grafana/invoiced.json: %v", err)
	}
	var exprs []string
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("dashboard panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, v := range dash.Templating.List {
		if q, ok := v.Query.(string); ok {
			exprs = append(exprs, q)
		}
	}
	sources := map[string]string{"prometheus/alerts.yml": string(rules), "grafana/invoiced.json": strings.Join(exprs, "\n")}
	for file, text := range sources {
		names := metricName.FindAllString(text, -1)
		if len(names) == 0 {
			t.Errorf("%s names no invoiced_ metric", file)
		}
		for _, n := range names {
			if !served(fams, n) {
				t.Errorf("%s names %s, which /metrics does not serve", file, n)
			}
		}
	}
}

// served reports whether name is a family of fams, or the _bucket, _sum
// or _count series of a histogram family.
func served(fams map[string]*dto.MetricFamily, name string) bool {
	if _, ok := fams[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if f := fams[base]; f != nil && f.GetType() == dto.MetricType_HISTOGRAM {
				return true
			}
		}
	}
	return false
}

// scrape starts a server with its pool watched, issues and cancels an
// invoice through it, and returns what GET /metrics serves then.
func scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	ctx := t.Context()
	pool := dbtest.New(t)
	seller := testfactory.Seller(t, pool, &testfactory.SellerOpts{GSTIN: "27AAPFU0939F1ZV", Name: "Chai"})
	testfactory.Series(t, pool, seller, &testfactory.SeriesOpts{Code: "CH1", Format: "CH1/{FY}/{SEQ:5}"})
	key, err := apikey.Create(ctx, pool, seller.ID, []string{apikey.ScopeIssue})
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New()
	m.WatchPool(pool)
	srv := httptest.NewServer(api.New(api.Config{Pool: pool, Metrics: m, ExposeMetrics: true}).Handler())
	defer srv.Close()
	do := func(method, path, body string) []byte {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var buf bytes.Buffer
		buf.ReadFrom(res.Body)
		if res.StatusCode >= 300 {
			t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, buf.Bytes())
		}
		return buf.Bytes()
	}
	var inv struct {
		ID string `json:"id"`
	}
	json.Unmarshal(do("POST", "/v1/series/CH1/invoices", `{"items":[{"description":"Masala chai","hsn":"0902","quantity":"2","unit_price":"10.00","gst_rate":"5"}]}`), &inv)
	do("POST", "/v1/invoices/"+inv.ID+"/cancel", `{"reason":"typo"}`)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(do("GET", "/metrics", "")))
	if err != nil {
		t.Fatal(err)
	}
	return fams
}
