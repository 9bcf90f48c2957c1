// Package archmap draws the module's packages and their imports from the
// code: `go list` gives each package's imports, Load keeps the module's own,
// and Markdown renders them as docs/architecture-packages.md (a Mermaid
// graph, the layers and every import). `make architecture` writes the page;
// a test fails when the committed page differs from what the code gives, so
// the picture cannot drift from the imports.
package archmap

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
)

// Package is one package of the module, named by its path inside the
// module ("invoice", "cmd/invoiced").
type Package struct {
	Path string
	// Imports are the module's packages that Path's non-test files
	// import, sorted.
	Imports []string
	// Main is true for a command (package main).
	Main bool
}

// Graph is the module's packages that have non-test Go files, split into
// the product (what a command or a public package links) and test support
// (internal packages only tests import).
type Graph struct {
	Module      string
	Product     []Package // sorted by Path
	TestSupport []Package // sorted by Path
}

// listed is the part of `go list -json`'s answer that Load reads.
type listed struct {
	ImportPath string
	Name       string
	GoFiles    []string
	Imports    []string
	Module     *struct{ Path string }
}

// Load lists the packages of the module whose root is dir (`go list -json
// ./...`) and returns their graph. A package with no non-test Go files (a
// folder of tests only) is left out. The product is every package reached
// through non-test imports from a command or from a package outside
// `internal/`; the other packages are test support. Load fails when go list
// fails, its output cannot be decoded or it lists no package.
func Load(dir string) (*Graph, error) {
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w\n%s", err, stderr.Bytes())
	}
	pkgs, module, err := decodeList(out)
	if err != nil {
		return nil, err
	}
	return split(module, pkgs), nil
}

// decodeList decodes go list's stream of JSON objects into the module's
// packages that have non-test Go files, keyed by path inside the module,
// with only the module's own imports; it returns the module's path too. It
// fails when the stream does not decode or holds no such package.
func decodeList(out []byte) (map[string]*Package, string, error) {
	var all []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, "", fmt.Errorf("decoding go list: %w", err)
		}
		all = append(all, p)
	}
	if len(all) == 0 || all[0].Module == nil {
		return nil, "", errors.New("go list listed no package of a module")
	}
	module := all[0].Module.Path
	pkgs := map[string]*Package{}
	for _, p := range all {
		if len(p.GoFiles) == 0 {
			continue
		}
		pkg := &Package{Path: inModule(module, p.ImportPath), Main: p.Name == "main"}
		for _, imp := range p.Imports {
			if imp == module || strings.HasPrefix(imp, module+"/") {
				pkg.Imports = append(pkg.Imports, inModule(module, imp))
			}
		}
		slices.Sort(pkg.Imports)
		pkgs[pkg.Path] = pkg
	}
	if len(pkgs) == 0 {
		return nil, "", errors.New("go list listed no package with Go files")
	}
	return pkgs, module, nil
}

// inModule returns importPath relative to module ("." for the module's
// root package).
func inModule(module, importPath string) string {
	if importPath == module {
		return "."
	}
	return strings.TrimPrefix(importPath, module+"/")
}

// isInternal reports whether path is an internal package (beneath a folder
// named internal).
func isInternal(path string) bool {
	return path == "internal" || strings.HasPrefix(path, "internal/") || strings.Contains(path, "/internal/") || strings.HasSuffix(path, "/internal")
}

// split returns the graph of pkgs: the product is what the roots (commands
// and packages outside internal/) reach through their imports, the rest is
// test support.
func split(module string, pkgs map[string]*Package) *Graph {
	product := map[string]bool{}
	var visit func(string)
	visit = func(path string) {
		if product[path] {
			return
		}
		product[path] = true
		if p, ok := pkgs[path]; ok {
			for _, imp := range p.Imports {
				visit(imp)
			}
		}
	}
	for path, p := range pkgs {
		if p.Main || !isInternal(path) {
			visit(path)
		}
	}
	g := &Graph{Module: module}
	for _, path := range sortedKeys(pkgs) {
		if product[path] {
			g.Product = append(g.Product, *pkgs[path])
		} else {
			g.TestSupport = append(g.TestSupport, *pkgs[path])
		}
	}
	return g
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
