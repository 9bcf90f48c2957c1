package archmap

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/internal/docblocks"
)

// write makes TestPackagePictureIsCurrent write the page instead of
// comparing it: `make architecture` runs the test with -write.
var write = flag.Bool("write", false, "write "+Page+" from the code instead of checking it")

// root is the module's root, seen from this package's folder.
const root = "../.."

// TestPackagePictureIsCurrent: docs/architecture-packages.md is exactly
// what the code's imports give, so the picture cannot drift; with -write
// (make architecture) it writes the page.
func TestPackagePictureIsCurrent(t *testing.T) {
	if !*write {
		t.Parallel()
	}
	g, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	want := Markdown(g)
	path := filepath.Join(root, Page)
	if *write {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: run make architecture", err)
	}
	if string(got) != want {
		t.Fatalf("%s differs from what the code's imports give: run make architecture and commit it\n%s", Page, firstDifference(string(got), want))
	}
}

// firstDifference returns the first line where got and want differ, for a
// failure message.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n  committed: %s\n  the code:  %s", i+1, gl, wl)
		}
	}
	return ""
}

// TestArchitectureNamesEveryPackage: docs/architecture.md's table of
// concerns names every product package, and no package that is gone.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	t.Parallel()
	g, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs/architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	for line := range strings.Lines(string(doc)) {
		cell, ok := strings.CutPrefix(line, "| `")
		if !ok {
			continue
		}
		path, _, _ := strings.Cut(cell, "`")
		named[path] = true
	}
	product := map[string]bool{}
	for _, p := range g.Product {
		product[p.Path] = true
		if !named[p.Path] {
			t.Errorf("docs/architecture.md's table does not say what %s is for", p.Path)
		}
	}
	for path := range named {
		if !product[path] {
			t.Errorf("docs/architecture.md's table names %s, which is not a product package", path)
		}
	}
}

// TestArchitectureLinksThePicture: docs/architecture.md's "Where a change
// is made" can be read beside the picture, which it links.
func TestArchitectureLinksThePicture(t *testing.T) {
	t.Parallel()
	section := docblocks.Section(t, filepath.Join(root, "docs/architecture.md"), "## Packages")
	if !strings.Contains(section, "(architecture-packages.md)") {
		t.Errorf("docs/architecture.md's Packages section does not link architecture-packages.md")
	}
}

// testGraph is a small module: a command, two libraries, a leaf and a test
// helper that only tests import.
func testGraph() map[string]*Package {
	return map[string]*Package{
		"cmd/app":           {Path: "cmd/app", Main: true, Imports: []string{"api", "internal/leaf", "store"}},
		"api":               {Path: "api", Imports: []string{"internal/leaf", "store"}},
		"store":             {Path: "store", Imports: []string{"internal/leaf"}},
		"internal/leaf":     {Path: "internal/leaf"},
		"internal/testhelp": {Path: "internal/testhelp", Imports: []string{"store"}},
	}
}

// TestSplitKeepsWhatTheRootsReach: commands and public packages are the
// product with all they import; an internal package nothing of the
// product imports is test support.
func TestSplitKeepsWhatTheRootsReach(t *testing.T) {
	t.Parallel()
	g := split("example.com/m", testGraph())
	var product, support []string
	for _, p := range g.Product {
		product = append(product, p.Path)
	}
	for _, p := range g.TestSupport {
		support = append(support, p.Path)
	}
	if want := []string{"api", "cmd/app", "internal/leaf", "store"}; !slices.Equal(product, want) {
		t.Errorf("product = %v, want %v", product, want)
	}
	if want := []string{"internal/testhelp"}; !slices.Equal(support, want) {
		t.Errorf("test support = %v, want %v", support, want)
	}
}

// TestReduceDrawsEachImportOnce: an import that another import already
// reaches is not drawn; the others are.
func TestReduceDrawsEachImportOnce(t *testing.T) {
	t.Parallel()
	g := split("example.com/m", testGraph())
	got := map[string][]string{}
	for _, p := range reduce(g.Product) {
		got[p.Path] = p.Imports
	}
	want := map[string][]string{
		"cmd/app":       {"api"},
		"api":           {"store"},
		"store":         {"internal/leaf"},
		"internal/leaf": nil,
	}
	for path, imports := range want {
		if !slices.Equal(got[path], imports) {
			t.Errorf("%s draws %v, want %v", path, got[path], imports)
		}
	}
	if layers := layersOf(g.Product); !slices.EqualFunc(layers, [][]string{{"internal/leaf"}, {"store"}, {"api"}, {"cmd/app"}}, slices.Equal) {
		t.Errorf("layers = %v", layers)
	}
}

// TestMarkdownListsEveryImport: the page's table keeps the imports the
// picture leaves out.
func TestMarkdownListsEveryImport(t *testing.T) {
	t.Parallel()
	page := Markdown(split("example.com/m", testGraph()))
	for _, want := range []string{
		"| `cmd/app` | `api`, `internal/leaf`, `store` |",
		"  cmd_app --> api\n",
		"  cmd_app([\"cmd/app\"])\n",
		"- `internal/testhelp` → `store`\n",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "cmd_app --> store") {
		t.Errorf("the picture draws cmd/app → store, which cmd/app → api → store implies:\n%s", page)
	}
}
