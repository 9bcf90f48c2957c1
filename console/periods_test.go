package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/invoice"
)

// Locking a month in the console: a key with manage sees a button for
// each ended month of the period not yet locked, confirms that the
// GSTR-1 is filed, and the lock is recorded as done by its key in the
// console; a month not ended, an unticked box and a POST without the
// session's token lock nothing. Keys without manage (read-only,
// issue-only) see no button and get 403 on the confirmation and the POST.
func TestLockMonthInConsole(t *testing.T) {
	t.Parallel()
	// Today is 29 Nov 2026, by the database's clock too: October has
	// ended, November not.
	f := setup(t)
	dbtest.SetClock(t, f.pool, start)
	ctx := t.Context()
	locks := func() []document.PeriodLock {
		t.Helper()
		l, err := invoice.PeriodLocks(ctx, f.pool, f.seller.ID)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	issueOnly, err := apikey.Create(ctx, f.pool, f.seller.ID, []string{apikey.ScopeIssue})
	if err != nil {
		t.Fatal(err)
	}

	// Keys without manage: no button, and the routes refuse them.
	for name, key := range map[string]string{"read-only": f.read, "issue-only": issueOnly} {
		c := client(t)
		startSession(t, f, c, key)
		p := get(t, c, f.url+"/console/gstr1?fp=2026-27-Q3")
		if strings.Contains(p.body, "/console/periods/") {
			t.Errorf("%s key: the GSTR-1 page offers a lock: %.300s", name, p.body)
		}
		if p := get(t, c, f.url+"/console/periods/102026/lock"); p.status != http.StatusForbidden {
			t.Errorf("%s key: the confirmation answered %d, want 403", name, p.status)
		}
		// Any page with the session's token will do; the issue-only key
		// reads none, so its token comes from a cancel confirmation.
		tokenPage := "/console/invoices/" + document.KeyOf(f.invs[0]) + "/cancel"
		if key == f.read {
			tokenPage = "/console/"
		}
		token := csrfOf(t, get(t, c, f.url+tokenPage))
		if p := post(t, c, f.url+"/console/periods/102026/lock", url.Values{"filed": {"yes"}, "csrf_token": {token}}); p.status != http.StatusForbidden {
			t.Errorf("%s key: POST lock answered %d, want 403", name, p.status)
		}
	}
	if l := locks(); len(l) != 0 {
		t.Fatalf("keys without manage locked %v", l)
	}

	c := client(t)
	token := signIn(t, f, c, f.all)
	p := get(t, c, f.url+"/console/gstr1?fp=2026-27-Q3")
	for _, want := range []string{`href="/console/periods/102026/lock"`, `href="/console/periods/112026/lock"`} {
		if want == `href="/console/periods/112026/lock"` {
			if strings.Contains(p.body, want) {
				t.Error("the GSTR-1 page offers to lock November, which has not ended")
			}
			continue
		}
		if !strings.Contains(p.body, want) {
			t.Errorf("the GSTR-1 page lacks %s: %.500s", want, p.body)
		}
	}
	p = get(t, c, f.url+"/console/periods/102026/lock")
	if p.status != http.StatusOK || !strings.Contains(p.body, "Lock Oct 2026?") || !strings.Contains(p.body, "0 documents are dated in Oct 2026") {
		t.Fatalf("confirmation: %d %.600s", p.status, p.body)
	}
	if p := post(t, c, f.url+"/console/periods/102026/lock", url.Values{"filed": {"yes"}}); p.status != http.StatusForbidden {
		t.Errorf("POST without the CSRF token: %d, want 403", p.status)
	}
	if p := post(t, c, f.url+"/console/periods/102026/lock", url.Values{"csrf_token": {token}}); p.status != http.StatusUnprocessableEntity || !strings.Contains(p.body, "Tick the box") {
		t.Errorf("POST without the filed box: %d %.300s", p.status, p.body)
	}
	if p := post(t, c, f.url+"/console/periods/112026/lock", url.Values{"filed": {"yes"}, "csrf_token": {token}}); p.status != http.StatusUnprocessableEntity || !strings.Contains(p.body, "has not ended") {
		t.Errorf("POST for November: %d %.300s", p.status, p.body)
	}
	if l := locks(); len(l) != 0 {
		t.Fatalf("refused POSTs locked %v", l)
	}
	p = post(t, c, f.url+"/console/periods/102026/lock", url.Values{"filed": {"yes"}, "csrf_token": {token}})
	if p.status != http.StatusSeeOther || p.location != "/console/gstr1?fp=102026&locked=102026" {
		t.Fatalf("lock: %d to %q %.300s", p.status, p.location, p.body)
	}
	l := locks()
	prefix := strings.Split(f.all, "_")[1]
	if len(l) != 1 || l[0].Month.FP() != "102026" || l[0].LockedBy != "console key ik_"+prefix {
		t.Fatalf("locks after the console's lock: %+v (key prefix %s)", l, prefix)
	}
	p = get(t, c, f.url+p.location)
	for _, want := range []string{"Oct 2026 is locked.", "Oct 2026</strong>, locked 29 Nov 2026, 10:00 IST by API key ik_" + prefix + " in the console"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("GSTR-1 after locking lacks %q: %.2000s", want, p.body)
		}
	}
	if strings.Contains(p.body, `href="/console/periods/102026/lock"`) {
		t.Error("a locked month is still offered")
	}
	// A key with manage alone locks, but is not told what the month holds
	// (Table 13's counts need read), and is not sent to the GSTR-1 page.
	manageOnly, err := apikey.Create(ctx, f.pool, f.seller.ID, []string{apikey.ScopeManage})
	if err != nil {
		t.Fatal(err)
	}
	m := client(t)
	startSession(t, f, m, manageOnly)
	p = get(t, m, f.url+"/console/periods/092026/lock")
	if p.status != http.StatusOK || strings.Contains(p.body, "documents are dated in") {
		t.Fatalf("manage-only confirmation: %d %.600s", p.status, p.body)
	}
	p = post(t, m, f.url+"/console/periods/092026/lock", url.Values{"filed": {"yes"}, "csrf_token": {csrfOf(t, p)}})
	if p.status != http.StatusOK || !strings.Contains(p.body, "Sep 2026 is locked.") {
		t.Fatalf("manage-only lock: %d %.300s", p.status, p.body)
	}
	if l := locks(); len(l) != 2 {
		t.Fatalf("locks after the manage-only key's: %+v", l)
	}
	// Locking again changes nothing and says so.
	if p := get(t, c, f.url+"/console/periods/102026/lock"); !strings.Contains(p.body, "locked already") || strings.Contains(p.body, `id="confirm-lock"`) {
		t.Errorf("confirmation of a locked month: %.400s", p.body)
	}
}
