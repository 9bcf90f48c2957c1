// Package deptest checks, in tests, what a package links: that what a till,
// a webhook receiver or a GSP client imports does not pull in the database
// driver or the server's database code.
package deptest

import (
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// Database returns the packages a program without a database must not
// link: the driver (every package of pgx, pgxpool among them) and our code
// that needs it.
func Database() []string {
	return []string{
		"github.com/jackc/pgx/v5",
		"github.com/invoiced/invoiced/internal/db",
		"github.com/invoiced/invoiced/internal/groupcommit",
	}
}

// Forbid fails the test for each package of forbidden, or beneath one, that
// the packages matching pattern (a `go list` pattern, such as
// github.com/invoiced/invoiced/client/...) depend on, even transitively,
// naming the packages that import it directly. It fails the test when go
// list fails or lists nothing.
func Forbid(t testing.TB, pattern string, forbidden ...string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, pattern).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	isForbidden := func(p string) bool {
		for _, f := range forbidden {
			if p == f || strings.HasPrefix(p, f+"/") {
				return true
			}
		}
		return false
	}
	importers := map[string][]string{} // forbidden package -> packages importing it
	listed := 0
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		listed++
		for _, imp := range fields[1:] {
			if isForbidden(imp) {
				importers[imp] = append(importers[imp], fields[0])
			}
		}
	}
	if listed == 0 {
		t.Fatalf("go list %s listed no packages", pattern)
	}
	bad := make([]string, 0, len(importers))
	for p := range importers {
		bad = append(bad, p)
	}
	sort.Strings(bad)
	for _, p := range bad {
		t.Errorf("%s depends on %s, imported by %s", pattern, p, strings.Join(importers[p], ", "))
	}
}
