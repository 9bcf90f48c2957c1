package api

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/apikey"
)

// guardCall is one request through one guard alone.
type guardCall struct {
	called bool          // the handler ran
	err    error         // the guard's refusal, or what the handler returned
	r      *http.Request // the request the handler saw (nil when not called)
}

// status returns the HTTP status err would be answered with (200 without
// an error).
func (g guardCall) status() int {
	if g.err == nil {
		return http.StatusOK
	}
	st, _, _, _ := Problem(g.err)
	return st
}

// TestEachGuardAlone: each guard of the chain, wrapped alone around a
// handler, refuses what it must (and then never calls the handler) and
// passes the rest. TestRouteInventory checks which guards a route is
// wrapped in; this checks that each of them works, so that a guard turned
// into a no-op fails here even while every handler happens to check again
// (docs/threat-model.md, "One guard chain for every route"). Every guard
// in Guards must have its case.
func TestEachGuardAlone(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.KeyRate = 1; c.MaxExports = 4; c.MaxExportsPerSeller = 1 })
	s := New(e.cfg)
	// call runs req through guard g alone (as Chain.Serve runs it) of a
	// route of class that needs need, with the API's bearer key; prep,
	// when set, readies the request as the guards before g would.
	call := func(g Guard, class RouteClass, need apikey.Scopes, req *http.Request, prep func(*http.Request) *http.Request, h func(*http.Request) error) guardCall {
		t.Helper()
		var out guardCall
		if prep != nil {
			req = prep(req)
		}
		passed, done, err := s.check(g, class, need, nil, s.bearer)(httptest.NewRecorder(), req)
		if err != nil {
			out.err = err
			return out
		}
		if done != nil {
			defer done()
		}
		out.called, out.r = true, passed
		if h != nil {
			out.err = h(passed)
		}
		return out
	}
	get := func(target string) *http.Request { return httptest.NewRequest(http.MethodGet, target, nil) }
	as := func(scopes apikey.Scopes) func(*http.Request) *http.Request {
		return func(r *http.Request) *http.Request {
			p := apikey.Principal{Seller: e.seller, Prefix: "0a1b2c3d", Scopes: scopes}
			return r.WithContext(context.WithValue(r.Context(), principalKey{}, p))
		}
	}
	cases := map[Guard]func(t *testing.T){
		GuardText: func(t *testing.T) {
			if r := call(GuardText, ClassAPIRead, 0, get("/v1/invoices?number=%FF"), nil, nil); r.called || r.status() != http.StatusBadRequest {
				t.Errorf("a query value that is not UTF-8: called %v, status %d (%v); want 400 and no call", r.called, r.status(), r.err)
			}
			if r := call(GuardText, ClassAPIRead, 0, get("/v1/invoices?number=CH1%2F26-27%2F00001"), nil, nil); !r.called || r.err != nil {
				t.Errorf("a clean query: called %v, %v", r.called, r.err)
			}
		},
		GuardDeadline: func(t *testing.T) {
			for _, class := range []RouteClass{ClassAPIRead, ClassExport} {
				began := time.Now()
				r := call(GuardDeadline, class, 0, get("/v1/series"), nil, nil)
				deadline, ok := time.Time{}, false
				if r.called {
					deadline, ok = r.r.Context().Deadline()
				}
				if !ok || deadline.After(began.Add(s.DeadlineOf(class)).Add(time.Second)) {
					t.Errorf("class %s: the handler's context has deadline %v (set: %v), want within %v", class, deadline, ok, s.DeadlineOf(class))
				}
			}
		},
		GuardBodyCap: func(t *testing.T) {
			max := Limits(ClassAPIRead).MaxBody
			read := func(r *http.Request) error { _, err := io.ReadAll(r.Body); return err }
			body := func(n int64) *http.Request {
				return httptest.NewRequest(http.MethodPost, "/v1/series", strings.NewReader(strings.Repeat(" ", int(n))))
			}
			var tooLarge *http.MaxBytesError
			if r := call(GuardBodyCap, ClassAPIRead, 0, body(max+1), nil, read); !errors.As(r.err, &tooLarge) {
				t.Errorf("a body of the cap (%d bytes) + 1: reading it gave %v, want *http.MaxBytesError", max, r.err)
			}
			if r := call(GuardBodyCap, ClassAPIRead, 0, body(max), nil, read); r.err != nil {
				t.Errorf("a body of the cap: %v", r.err)
			}
		},
		GuardAuth: func(t *testing.T) {
			if r := call(GuardAuth, ClassAPIRead, 0, get("/v1/series"), nil, nil); r.called || r.status() != http.StatusUnauthorized {
				t.Errorf("no key: called %v, status %d (%v); want 401 and no call", r.called, r.status(), r.err)
			}
			req := get("/v1/series")
			req.Header.Set("Authorization", "Bearer "+e.read)
			r := call(GuardAuth, ClassAPIRead, 0, req, nil, nil)
			if !r.called || r.err != nil {
				t.Fatalf("a valid key: called %v, %v", r.called, r.err)
			}
			if got, _ := principalOf(r.r); got.Seller.ID != e.seller.ID || !got.Scopes.Has(apikey.CanRead) {
				t.Errorf("a valid key's principal: %+v", got)
			}
		},
		GuardKeyRate: func(t *testing.T) {
			// One request a second, and the server's clock stands still.
			if r := call(GuardKeyRate, ClassAPIRead, 0, get("/v1/series"), as(apikey.CanRead), nil); !r.called || r.err != nil {
				t.Fatalf("the first request: called %v, %v", r.called, r.err)
			}
			if r := call(GuardKeyRate, ClassAPIRead, 0, get("/v1/series"), as(apikey.CanRead), nil); r.called || r.status() != http.StatusTooManyRequests {
				t.Errorf("the second request in the same second: called %v, status %d (%v); want 429 and no call", r.called, r.status(), r.err)
			}
		},
		GuardScope: func(t *testing.T) {
			if r := call(GuardScope, ClassAPIRead, apikey.CanRead, get("/v1/series"), as(apikey.CanIssue), nil); r.called || r.status() != http.StatusForbidden {
				t.Errorf("an issue-only key on a read route: called %v, status %d (%v); want 403 and no call", r.called, r.status(), r.err)
			}
			if r := call(GuardScope, ClassAPIRead, apikey.CanRead, get("/v1/series"), as(apikey.CanRead), nil); !r.called || r.err != nil {
				t.Errorf("a read key on a read route: called %v, %v", r.called, r.err)
			}
		},
		GuardBudget: func(t *testing.T) {
			release, err := s.ExpensiveRead(t.Context(), ClassExport, e.seller.ID) // the seller's one slot
			if err != nil {
				t.Fatal(err)
			}
			if r := call(GuardBudget, ClassExport, apikey.CanRead, get("/v1/series/CH1/audit"), as(apikey.CanRead), nil); r.called || r.status() != http.StatusTooManyRequests {
				t.Errorf("an export while the seller's slot is taken: called %v, status %d (%v); want 429 and no call", r.called, r.status(), r.err)
			}
			release()
			if r := call(GuardBudget, ClassExport, apikey.CanRead, get("/v1/series/CH1/audit"), as(apikey.CanRead), nil); !r.called || r.err != nil {
				t.Errorf("an export with the slot free: called %v, %v", r.called, r.err)
			}
			// The slot is given back when the answer is sent.
			if release, err := s.ExpensiveRead(t.Context(), ClassExport, e.seller.ID); err != nil {
				t.Errorf("the guard kept the seller's slot: %v", err)
			} else {
				release()
			}
		},
	}
	for _, g := range Guards {
		check, ok := cases[g]
		if !ok {
			t.Errorf("guard %s has no case in TestEachGuardAlone", g)
			continue
		}
		t.Run(string(g), check)
	}
}
