package api

import (
	"bytes"
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"
)

var echoParam = regexp.MustCompile(`:([a-z_]+)`)

func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()
	doc, err := openapi3.NewLoader().LoadFromData(openAPISpec)
	if err != nil {
		t.Fatalf("load openapi.yaml: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi.yaml does not validate: %v", err)
	}
	if doc.OpenAPI != "3.0.3" {
		t.Fatalf("openapi %q", doc.OpenAPI)
	}
	var inSpec []string
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			inSpec = append(inSpec, method+" "+path)
			if op.Responses == nil || op.Responses.Len() == 0 {
				t.Errorf("%s %s has no responses", method, path)
			}
		}
	}
	srv := New(Config{})
	var inCode []string
	for _, r := range srv.e.Routes() {
		if r.Method == echo.RouteNotFound {
			continue
		}
		inCode = append(inCode, r.Method+" "+echoParam.ReplaceAllString(r.Path, "{$1}"))
	}
	slices.Sort(inSpec)
	slices.Sort(inCode)
	if !slices.Equal(inSpec, inCode) {
		t.Fatalf("routes differ\nspec: %v\ncode: %v", inSpec, inCode)
	}
	if len(inCode) != 28 {
		t.Fatalf("%d routes, want 28: %v", len(inCode), inCode)
	}
}

// TestOpenAPIServed checks that the served document is the embedded one
// with its server URL naming the address the request reached, and that a
// Host that is not a plain host[:port] cannot change the document.
func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	e := setup(t)
	r := e.do("GET", "/openapi.yaml", "", "")
	e.wantStatus(r, 200)
	if r.header.Get("Content-Type") != "application/yaml" {
		t.Fatalf("Content-Type %q", r.header.Get("Content-Type"))
	}
	doc, err := openapi3.NewLoader().LoadFromData(r.body)
	if err != nil {
		t.Fatalf("served document does not load: %v", err)
	}
	if len(doc.Servers) != 1 || doc.Servers[0].URL != e.url {
		t.Fatalf("served document names servers %v, want exactly %s", doc.Servers, e.url)
	}
	if want := bytes.Replace(openAPISpec, []byte(specServerLine), []byte("\n  - url: "+e.url+"\n"), 1); !bytes.Equal(r.body, want) {
		t.Fatal("served document differs from the embedded one beyond its server URL")
	}
	for _, host := range []string{"", "evil\n  - url: http://x", "a b", "x\"y", strings.Repeat("a", 256)} {
		if got := specFor("http", host); !bytes.Equal(got, openAPISpec) {
			t.Errorf("specFor(http, %q) changed the document", host)
		}
	}
	if got := specFor("gopher", "example.com"); !bytes.Equal(got, openAPISpec) {
		t.Errorf("specFor(gopher, …) changed the document")
	}
	if !bytes.Contains(openAPISpec, []byte(specServerLine)) {
		t.Fatalf("api/openapi.yaml lost the server line specFor replaces (%q)", specServerLine)
	}
}
