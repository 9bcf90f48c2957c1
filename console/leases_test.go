package console_test

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/lease"
)

// The leases page: a read key sees which series is with which device
// since when and what is uploaded, never the lease's id (the device's
// credential) nor a button; a key with manage ends a lost device's lease
// by force and settles it, through the library calls the CLI uses, and
// the audit shows the finding the forced end creates and the gap the
// settlement leaves. Keys without manage get 403 on every action, and
// issue-only keys do not see the page.
func TestLeasesInConsole(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	held, err := lease.TakeLease(ctx, f.pool, f.ch1, "T07", "key ik_test", start)
	if err != nil {
		t.Fatal(err)
	}
	holder := func() lease.Lease {
		t.Helper()
		l, err := lease.GetLease(ctx, f.pool, f.ch1, held.ID)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	// Another seller's lease of its own CH1 never shows.
	other := testfactory.Seller(t, f.pool, &testfactory.SellerOpts{GSTIN: "29AABCR1718E1ZL", Name: "Bengaluru Beans"})
	otherCH1 := testfactory.Series(t, f.pool, other, &testfactory.SeriesOpts{Code: "CH1", Format: "B/{FY}/{SEQ:5}"})
	if _, err := lease.TakeLease(ctx, f.pool, otherCH1, "BLR-9", "cli", start); err != nil {
		t.Fatal(err)
	}
	issueOnly, err := apikey.Create(ctx, f.pool, f.seller.ID, []string{apikey.ScopeIssue})
	if err != nil {
		t.Fatal(err)
	}
	o := client(t)
	startSession(t, f, o, issueOnly)
	if p := get(t, o, f.url+"/console/leases"); p.status != http.StatusForbidden || strings.Contains(p.body, "T07") {
		t.Errorf("issue-only key: leases page %d", p.status)
	}

	r := client(t)
	rtoken := signIn(t, f, r, f.read)
	p := get(t, r, f.url+"/console/leases")
	for _, want := range []string{`data-series="CH1"`, "<code>T07</code>", "29 Nov 2026, 10:00 IST", "from CH1/26-27/00006", "2026-27: up to CH1/26-27/00005", "numbering offline"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("read key's leases page lacks %q", want)
		}
	}
	if strings.Contains(p.body, "BLR-9") {
		t.Error("the leases page shows another seller's device")
	}
	if strings.Contains(p.body, held.ID) || strings.Contains(p.body, "/console/leases/CH1/end") {
		t.Errorf("a read key sees the lease id or the end button: %.3000s", p.body)
	}
	for _, path := range []string{"/console/leases/CH1/end", "/console/leases/CH1/settle"} {
		if p := get(t, r, f.url+path); p.status != http.StatusForbidden {
			t.Errorf("read key: GET %s answered %d, want 403", path, p.status)
		}
		if p := post(t, r, f.url+path, url.Values{"reason": {"x"}, "through-2026-27": {"9"}, "csrf_token": {rtoken}}); p.status != http.StatusForbidden {
			t.Errorf("read key: POST %s answered %d, want 403", path, p.status)
		}
	}
	if l := holder(); l.EndedAt != nil {
		t.Fatal("a read key ended the lease")
	}

	c := client(t)
	token := signIn(t, f, c, f.all)
	if p := get(t, c, f.url+"/console/leases"); !strings.Contains(p.body, `href="/console/leases/CH1/end"`) || strings.Contains(p.body, held.ID) {
		t.Fatalf("manage key's leases page: %.3000s", p.body)
	}
	if p := get(t, c, f.url+"/console/leases/CH1/settle"); !strings.Contains(p.body, "still holds this lease") || strings.Contains(p.body, "confirm-settle") {
		t.Errorf("settling a lease in force is offered: %.500s", p.body)
	}
	if p := post(t, c, f.url+"/console/leases/CH1/end", url.Values{"reason": {"Till stolen"}}); p.status != http.StatusForbidden {
		t.Errorf("end without the CSRF token: %d", p.status)
	}
	if p := post(t, c, f.url+"/console/leases/CH1/end", url.Values{"reason": {" "}, "csrf_token": {token}}); p.status != http.StatusUnprocessableEntity || !strings.Contains(p.body, "reason") {
		t.Errorf("end without a reason: %d %.300s", p.status, p.body)
	}
	if l := holder(); l.EndedAt != nil {
		t.Fatal("a refused end ended the lease")
	}
	p = post(t, c, f.url+"/console/leases/CH1/end", url.Values{"reason": {"Till stolen from the stall"}, "csrf_token": {token}})
	if p.status != http.StatusSeeOther || p.location != "/console/leases?ended=CH1" {
		t.Fatalf("end: %d to %q %.300s", p.status, p.location, p.body)
	}
	prefix := strings.Split(f.all, "_")[1]
	if l := holder(); l.EndKind != lease.EndForced || l.EndReason != "Till stolen from the stall" || l.EndedBy != "console key ik_"+prefix || l.SettledAt != nil {
		t.Fatalf("lease after the console's end: %+v", l)
	}
	p = get(t, c, f.url+p.location)
	for _, want := range []string{"ended by force, not settled", "Till stolen from the stall", "anything after CH1/26-27/00005 may have been printed",
		`href="/console/series/CH1/2026-27/check"`, `href="/console/leases/CH1/settle"`} {
		if !strings.Contains(p.body, want) {
			t.Errorf("leases page after the end lacks %q", want)
		}
	}
	p = get(t, c, f.url+"/console/series/CH1/2026-27/check")
	for _, want := range []string{"NOT intact: 1 finding", "Offline device&#39;s invoices not uploaded", "from 6 on"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the audit after the end lacks %q", want)
		}
	}

	// The device, turned up, asks to end its lease at serial 6, which it
	// never uploaded: refused, but the server records the report.
	if _, err := lease.EndLeaseByDevice(ctx, f.pool, f.ch1, held.ID, 2026, 6, nil, start.Add(3*time.Hour)); !errors.Is(err, lease.ErrNotUploaded) {
		t.Fatalf("the device's end with 6 not uploaded: %v", err)
	}
	// Settle: beside the form, what the server knows; the last serial
	// printed may not be below the last uploaded, nor the device's report.
	p = get(t, c, f.url+"/console/leases/CH1/settle")
	for _, want := range []string{`name="through-2026-27"`, `name="through-2027-28"`, `value="6"`, "The device was last in touch", "29 Nov 2026, 13:00 IST",
		"uploaded up to CH1/26-27/00005 (serial 5)", "the device itself reported numbering up to CH1/26-27/00006", "2027-28</dt><dd>nothing uploaded"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("settle form lacks %q: %.3000s", want, p.body)
		}
	}
	for _, low := range []string{"4", "5"} {
		if p := post(t, c, f.url+"/console/leases/CH1/settle", url.Values{"through-2026-27": {low}, "through-2027-28": {"0"}, "reason": {"Paper roll"}, "csrf_token": {token}}); p.status != http.StatusUnprocessableEntity || !strings.Contains(p.body, "declare 6 or more") {
			t.Errorf("settle through %s, below what the server knows: %d %.300s", low, p.status, p.body)
		}
	}
	if p := post(t, c, f.url+"/console/leases/CH1/settle", url.Values{"through-2026-27": {"seven"}, "through-2027-28": {"0"}, "reason": {"Paper roll"}, "csrf_token": {token}}); p.status != http.StatusUnprocessableEntity || !strings.Contains(p.body, "whole number") {
		t.Errorf("settle with a word: %d %.300s", p.status, p.body)
	}
	p = post(t, c, f.url+"/console/leases/CH1/settle", url.Values{"through-2026-27": {"7"}, "through-2027-28": {"0"}, "reason": {"Paper roll ends at 00007"}, "csrf_token": {token}})
	if p.status != http.StatusSeeOther || p.location != "/console/leases?settled=CH1" {
		t.Fatalf("settle: %d to %q %.300s", p.status, p.location, p.body)
	}
	if l := holder(); l.SettledAt == nil || l.DeclaredYears[2026] != 7 || l.SettledBy != "console key ik_"+prefix {
		t.Fatalf("lease after the console's settlement: %+v", l)
	}
	p = get(t, c, f.url+p.location)
	for _, want := range []string{"is settled", "No series is with an offline device", "Paper roll ends at 00007", "2026-27 up to CH1/26-27/00007 counted as printed"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("leases page after settling lacks %q", want)
		}
	}
	p = get(t, c, f.url+"/console/series/CH1/2026-27/check")
	if !strings.Contains(p.body, "<dt>Missing numbers</dt><dd>0</dd>") || !strings.Contains(p.body, "CH1/26-27/00007</span> (2)") ||
		strings.Contains(p.body, "Offline device&#39;s invoices not uploaded") {
		t.Errorf("the audit after settling: %.4000s", p.body)
	}
	p = get(t, c, f.url+"/console/verify")
	if !strings.Contains(p.body, "Every series-year is intact") || !strings.Contains(p.body, "CH1/26-27/00007</span> declared spent (2)") {
		t.Errorf("the verify page after settling: %.4000s", p.body)
	}
}
