package console_test

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/api"
	"github.com/invoiced/invoiced/console"
	"github.com/invoiced/invoiced/internal/testwait"
)

// Console downloads and verify take the API's expensive-read slots: with
// the seller's slots taken (by API exports, say), they answer 429 at once
// and hold nothing, and another seller's are not affected.
func TestConsoleDownloadsShareTheExportSlots(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *api.Config) { c.MaxExports, c.MaxExportsPerSeller = 4, 2 })
	c := client(t)
	signIn(t, f, c, f.read)
	var releases []func()
	for range 2 {
		release, err := f.api.ExpensiveRead(t.Context(), api.ClassConsoleDownload, f.seller.ID)
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, release)
	}
	for _, u := range []string{"/console/series/CH1/2026-27/audit?format=csv", "/console/series/CH1/2026-27/audit?format=xlsx", "/console/verify"} {
		if p := get(t, c, f.url+u); p.status != http.StatusTooManyRequests {
			t.Errorf("%s with the seller's export slots taken: %d, want 429", u, p.status)
		}
	}
	if n := f.pool.Stat().AcquiredConns(); n != 0 {
		t.Errorf("%d connections held after refused downloads", n)
	}
	for _, r := range releases {
		r()
	}
	p := get(t, c, f.url+"/console/series/CH1/2026-27/audit?format=csv")
	if p.status != http.StatusOK || p.header.Get("Content-Length") == "" {
		t.Fatalf("download with free slots: %d, Content-Length %q (a spooled export has one)", p.status, p.header.Get("Content-Length"))
	}
	// The slots are back once the download is sent (the handler returns
	// just after the client has read the last byte).
	var held []func()
	testwait.Until(t, 10*time.Second, func() bool {
		release, err := f.api.ExpensiveRead(t.Context(), api.ClassConsoleDownload, f.seller.ID)
		if err != nil {
			return false
		}
		held = append(held, release)
		return len(held) == 2
	}, "both of the seller's slots free after the download")
	for _, r := range held {
		r()
	}
}

// Console pages obey serve --rate-limit, counted with the key's API
// requests.
func TestConsolePagesObeyKeyRate(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *api.Config) { c.KeyRate = 3 })
	c := client(t)
	startSession(t, f, c, f.read)
	got := map[int]int{}
	for range 6 {
		got[get(t, c, f.url+"/console/series/CH1/2026-27").status]++
	}
	if got[http.StatusTooManyRequests] == 0 {
		t.Fatalf("6 pages at once with --rate-limit 3: %v, want some 429", got)
	}
}

// TestConsoleRouteInventory walks the console's routes: each must be
// wrapped by the guards its class requires (api.RequiredGuards), and the
// mux must be reached only through Console.handle, which records them.
func TestConsoleRouteInventory(t *testing.T) {
	t.Parallel()
	con := console.New(console.Config{Keys: api.New(api.Config{})})
	routes := con.Routes()
	if len(routes) < 12 {
		t.Fatalf("only %d console routes", len(routes))
	}
	for _, r := range routes {
		for _, g := range api.RequiredGuardsMissing(r) {
			t.Errorf("%s %s (class %s) is not wrapped by guard %s", r.Method, r.Path, r.Class, g)
		}
	}
	// A route registered on the mux directly would not be in Routes:
	// the mux is touched in one place, Console.handle.
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	uses := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		uses += len(regexp.MustCompile(`\.mux\.Handle`).FindAll(b, -1))
	}
	if uses != 1 {
		t.Fatalf("the console's mux is registered on in %d places; only Console.handle may (so that every route has its guards)", uses)
	}
}
