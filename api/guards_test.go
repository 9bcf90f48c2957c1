package api

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestRouteInventory walks echo's registered routes: every one must have
// been registered through the guard chain (Server.route), with the guards
// its class requires; a route added with e.GET directly fails here.
func TestRouteInventory(t *testing.T) {
	t.Parallel()
	s := New(Config{})
	byRoute := map[string]RouteInfo{}
	for _, r := range s.Routes() {
		byRoute[r.Method+" "+r.Path] = r
	}
	n := 0
	for _, r := range s.e.Routes() {
		if r.Path == "" || r.Method == "echo_route_not_found" {
			continue
		}
		info, ok := byRoute[r.Method+" "+r.Path]
		if !ok {
			t.Errorf("%s %s is registered without the guard chain (use Server.route with a route class)", r.Method, r.Path)
			continue
		}
		for _, g := range RequiredGuardsMissing(info) {
			t.Errorf("%s %s (class %s) is not wrapped by guard %s", r.Method, r.Path, info.Class, g)
		}
		n++
	}
	if n < 25 {
		t.Fatalf("only %d routes walked", n)
	}
	// Each class of the table has the policy's guards.
	for class := range classes {
		if got := RequiredGuardsMissing(RouteInfo{Class: class, Guards: Limits(class).Guards}); len(got) > 0 {
			t.Errorf("class %s lacks %v", class, got)
		}
	}
}

// TestAuthorizeOnlyBehindGuardAuth: authorize takes the principal the
// route's chain set and never authenticates again, so a handler that
// calls it (or calls a method that does) must be registered in a class
// with GuardAuth. It reads the package's source: every s.route(…) call's
// handler, and which methods of *Server reach s.authorize.
func TestAuthorizeOnlyBehindGuardAuth(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string][]string{} // method of *Server → the methods of s it calls
	type reg struct{ method, path, handler string }
	var regs []reg
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok && isIdent(sel.X, "s") {
					calls[fn.Name.Name] = append(calls[fn.Name.Name], sel.Sel.Name)
					if sel.Sel.Name == "route" && len(call.Args) == 6 {
						m, _ := call.Args[1].(*ast.SelectorExpr)
						p, _ := call.Args[2].(*ast.BasicLit)
						h, _ := call.Args[5].(*ast.SelectorExpr)
						if m == nil || p == nil || h == nil {
							t.Errorf("%s: s.route with a method, path or handler that is not a constant or a method of s", fset.Position(call.Pos()))
							return true
						}
						path, _ := strconv.Unquote(p.Value)
						regs = append(regs, reg{strings.ToUpper(strings.TrimPrefix(m.Sel.Name, "Method")), path, h.Sel.Name})
					}
				}
				return true
			})
		}
	}
	reaches := func(method string) bool {
		seen := map[string]bool{}
		var walk func(string) bool
		walk = func(m string) bool {
			if m == "authorize" {
				return true
			}
			if seen[m] {
				return false
			}
			seen[m] = true
			return slices.ContainsFunc(calls[m], walk)
		}
		return walk(method)
	}
	classOf := map[string]RouteInfo{}
	for _, r := range New(Config{}).Routes() {
		classOf[r.Method+" "+r.Path] = r
	}
	n := 0
	for _, r := range regs {
		info, ok := classOf[r.method+" "+r.path]
		if !ok {
			t.Errorf("s.route(%s %s) is not in Routes", r.method, r.path)
			continue
		}
		if reaches(r.handler) {
			n++
			if !slices.Contains(info.Guards, GuardAuth) {
				t.Errorf("%s %s (class %s): its handler %s calls authorize, but the route has no GuardAuth", r.method, r.path, info.Class, r.handler)
			}
		}
	}
	if n < 15 {
		t.Fatalf("only %d handlers found calling authorize", n)
	}
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}
