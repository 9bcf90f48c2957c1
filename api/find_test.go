package api

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/gst"
)

func serialsOf(t *testing.T, body []byte) ([]int64, *string) {
	t.Helper()
	var l struct {
		Invoices   []invoiceOut `json:"invoices"`
		NextCursor *string      `json:"next_cursor"`
	}
	if err := json.Unmarshal(body, &l); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	out := []int64{}
	for _, inv := range l.Invoices {
		out = append(out, inv.Serial)
	}
	return out, l.NextCursor
}

// TestFindInvoiceByNumber: GET /v1/invoices?number= finds an invoice by
// its number in any case, answers an empty list for a number not issued,
// and refuses a missing or overlong number.
func TestFindInvoiceByNumber(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for range 3 {
		e.wantStatus(e.do("POST", "/v1/series/CH1/invoices", e.all, issueJSON("")), 201)
	}
	r := e.do("GET", "/v1/invoices?number=ch1/26-27/00002", e.read, "")
	e.wantStatus(r, 200)
	if got, next := serialsOf(t, r.body); !slices.Equal(got, []int64{2}) || next != nil {
		t.Fatalf("find ch1/26-27/00002: %s", r.body)
	}
	r = e.do("GET", "/v1/invoices?number=CH1/26-27/00009", e.read, "")
	e.wantStatus(r, 200)
	if got, _ := serialsOf(t, r.body); len(got) != 0 {
		t.Fatalf("find a number not issued: %s", r.body)
	}
	e.wantError(e.do("GET", "/v1/invoices", e.read, ""), 422, "invalid_number")
	e.wantError(e.do("GET", "/v1/invoices?number="+strings.Repeat("A", 17), e.read, ""), 422, "invalid_number")
	e.wantError(e.do("GET", "/v1/invoices?number=CH1/26-27/00002", e.issue, ""), 403, "forbidden")
}

// TestListInvoicesByDate: from and to select the invoices dated within
// them, in serial order and across pages; without fy the year is from's;
// bad or crossed dates and a range outside the year are 422 invalid_date.
func TestListInvoicesByDate(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.BackdateDays = 10 })
	for _, d := range []string{"2026-11-20", "2026-11-25", "2026-11-25", "2026-11-27", "2026-11-29"} {
		e.wantStatus(e.do("POST", "/v1/series/CH1/invoices", e.all, issueJSON(d)), 201)
	}
	for _, c := range []struct {
		query string
		want  []int64
	}{
		{"from=2026-11-25&to=2026-11-27", []int64{2, 3, 4}},
		{"from=2026-11-26", []int64{4, 5}},
		{"to=2026-11-24", []int64{1}},
		{"fy=2026-27&from=2026-11-21&to=2026-11-24", []int64{}},
		{"from=2026-11-29&to=2026-11-29", []int64{5}},
	} {
		r := e.do("GET", "/v1/series/CH1/invoices?"+c.query, e.read, "")
		e.wantStatus(r, 200)
		if got, _ := serialsOf(t, r.body); !slices.Equal(got, c.want) {
			t.Errorf("%s: serials %v, want %v", c.query, got, c.want)
		}
	}
	// Pages of one within the range.
	var got []int64
	q := "from=2026-11-25&to=2026-11-27&limit=1"
	for range 10 {
		r := e.do("GET", "/v1/series/CH1/invoices?"+q, e.read, "")
		e.wantStatus(r, 200)
		s, next := serialsOf(t, r.body)
		got = append(got, s...)
		if next == nil {
			break
		}
		q = "from=2026-11-25&to=2026-11-27&limit=1&cursor=" + *next
	}
	if !slices.Equal(got, []int64{2, 3, 4}) {
		t.Fatalf("paged range: %v", got)
	}
	for _, q := range []string{"from=2026-13-01", "to=yesterday", "from=2026-11-27&to=2026-11-25", "fy=2026-27&from=2026-03-31", "from=2026-03-31&to=2026-04-01"} {
		e.wantError(e.do("GET", "/v1/series/CH1/invoices?"+q, e.read, ""), 422, "invalid_date")
	}
}

// TestMessagesNameTheRule: the refusals a developer meets first say which
// rule was broken and what would pass.
func TestMessagesNameTheRule(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.BackdateDays = 3 })
	item := func(q, pos string) string {
		p := ""
		if pos != "" {
			p = `"place_of_supply":"` + pos + `",`
		}
		return `{` + p + `"items":[{"description":"Tea","hsn":"0902","quantity":"` + q + `","unit_price":"10.00","gst_rate":"5"}]}`
	}
	for _, c := range []struct {
		body, code string
		want       []string
	}{
		{item("-1", ""), "invalid_invoice", []string{`quantity "-1" must be greater than zero`}},
		{item("0", ""), "invalid_invoice", []string{"must be greater than zero"}},
		{item("1", "99"), "invalid_invoice", []string{`"99"`, "01, 02, 03", "37, 38, 96, 97"}},
		{issueJSON("2026-11-20"), "invalid_date", []string{"3 days back", "operator", "--backdate-days"}},
	} {
		r := e.do("POST", "/v1/series/CH1/invoices", e.all, c.body)
		e.wantError(r, 422, c.code)
		var eb struct {
			Error struct{ Message string } `json:"error"`
		}
		_ = json.Unmarshal(r.body, &eb)
		for _, w := range c.want {
			if !strings.Contains(eb.Error.Message, w) {
				t.Errorf("%s: message %q lacks %q", c.body, eb.Error.Message, w)
			}
		}
	}
	req, err := http.NewRequest("POST", e.url+"/v1/series/CH1/invoices", strings.NewReader(issueJSON("")))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.all)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Add("Idempotency-Key", "a")
	req.Header.Add("Idempotency-Key", "a")
	res, err := e.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	e.wantError(resp{res.StatusCode, res.Header, b}, 400, "invalid_idempotency_key")
	if !strings.Contains(string(b), "sent more than once") {
		t.Fatalf("repeated Idempotency-Key: %s", b)
	}
}

// FuzzDateRangeParams: any from/to either parses to dates that print back
// as given, from not after to, or is refused as invalid_date.
func FuzzDateRangeParams(f *testing.F) {
	for _, s := range [][2]string{{"2026-11-01", "2026-11-30"}, {"", "2026-02-29"}, {"2026-11-30", "2026-11-01"}, {"x", ""}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, from, to string) {
		r, err := dateRangeParams(from, to)
		if err != nil {
			if !errors.Is(err, gst.ErrInvalidDate) {
				t.Fatalf("%q %q: %v", from, to, err)
			}
			return
		}
		if from != "" && r.From.Format("2006-01-02") != from || to != "" && r.To.Format("2006-01-02") != to {
			t.Fatalf("%q %q parsed to %v %v", from, to, r.From, r.To)
		}
		if !r.From.IsZero() && !r.To.IsZero() && r.From.After(r.To) {
			t.Fatalf("%q after %q accepted", from, to)
		}
	})
}
