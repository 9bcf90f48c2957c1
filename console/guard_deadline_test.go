package console

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/invoiced/invoiced/api"
	"github.com/invoiced/invoiced/apikey"
)

// TestConsoleDeadlineGuardAlone: the chain of each console route class
// (the API's, api.Server.Chain) gives the handler's context its class's
// deadline (a page the request timeout, a verify two minutes). No page
// test can see a missing deadline: it shows only when the database
// stalls. The other guards are held by the package's tests of what they
// refuse (bad bytes, oversized forms, sessions, scopes, the key rate, the
// export slots).
func TestConsoleDeadlineGuardAlone(t *testing.T) {
	t.Parallel()
	srv := api.New(api.Config{})
	c := New(Config{Keys: srv})
	signedIn := func(_ http.ResponseWriter, r *http.Request) (*http.Request, apikey.Principal, error) {
		return r, apikey.Principal{Scopes: apikey.CanRead}, nil
	}
	for _, class := range []api.RouteClass{api.ClassConsolePage, api.ClassConsoleVerify, api.ClassConsoleDownload} {
		var deadline time.Time
		var ok bool
		began := time.Now()
		c.keys.Chain(class, apikey.CanRead, nil, signedIn).Serve(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/console/", nil),
			func(w http.ResponseWriter, r *http.Request) { deadline, ok = r.Context().Deadline() },
			func(w http.ResponseWriter, r *http.Request, err error) { t.Errorf("class %s: refused: %v", class, err) })
		if want := srv.DeadlineOf(class); !ok || deadline.After(began.Add(want).Add(time.Second)) {
			t.Errorf("class %s: the handler's context has deadline %v (set: %v), want within %v", class, deadline, ok, want)
		}
	}
}
