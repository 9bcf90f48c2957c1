package client_test

import (
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// forbidden are the packages a terminal must not link: the database driver
// (every package of pgx, pgxpool among them) and our code that needs it.
var forbidden = []string{
	"github.com/jackc/pgx/v5",
	"github.com/invoiced/invoiced/internal/db",
	"github.com/invoiced/invoiced/internal/groupcommit",
}

// TestClientHasNoDatabase checks that no package of client/... (the HTTP
// client and the offline terminal, which a till links) imports, even
// transitively, pgx or one of its subpackages, internal/db or
// internal/groupcommit: the invoice maths and the chain it shares with the
// server live in packages gst and document, which import no database. It
// names each forbidden package with the packages that import it directly.
func TestClientHasNoDatabase(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`,
		"github.com/invoiced/invoiced/client/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
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
		t.Fatal("go list listed no packages")
	}
	bad := make([]string, 0, len(importers))
	for p := range importers {
		bad = append(bad, p)
	}
	sort.Strings(bad)
	for _, p := range bad {
		t.Errorf("client/... depends on %s, imported by %s", p, strings.Join(importers[p], ", "))
	}
}

// isForbidden reports whether the package path p is one of forbidden or a
// package beneath one.
func isForbidden(p string) bool {
	for _, f := range forbidden {
		if p == f || strings.HasPrefix(p, f+"/") {
			return true
		}
	}
	return false
}
