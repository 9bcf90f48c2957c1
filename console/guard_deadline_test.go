package console

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/invoiced/invoiced/api"
)

// TestConsoleDeadlineGuardAlone: the console's deadline guard, alone
// around a handler, gives the handler's context its class's deadline (a
// page the request timeout, a verify two minutes). No page test can see
// a missing deadline: it shows only when the database stalls. The other
// guards are held by the package's tests of what they refuse (bad bytes,
// oversized forms, sessions, scopes, the key rate, the export slots).
func TestConsoleDeadlineGuardAlone(t *testing.T) {
	t.Parallel()
	c := New(Config{Keys: api.New(api.Config{})})
	for _, class := range []api.RouteClass{api.ClassConsolePage, api.ClassConsoleVerify, api.ClassConsoleDownload} {
		var deadline time.Time
		var ok bool
		h := c.guard(api.GuardDeadline, class, "", nil)(func(w http.ResponseWriter, r *http.Request) {
			deadline, ok = r.Context().Deadline()
		})
		began := time.Now()
		h(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/console/", nil))
		if want := c.keys.DeadlineOf(class); !ok || deadline.After(began.Add(want).Add(time.Second)) {
			t.Errorf("class %s: the handler's context has deadline %v (set: %v), want within %v", class, deadline, ok, want)
		}
	}
}
