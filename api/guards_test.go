package api

import "testing"

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
