package api

import (
	"context"
	"regexp"
	"slices"
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
	if len(inCode) != 15 {
		t.Fatalf("%d routes, want 15: %v", len(inCode), inCode)
	}
}

func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	e := setup(t)
	r := e.do("GET", "/openapi.yaml", "", "")
	e.wantStatus(r, 200)
	if string(r.body) != string(openAPISpec) || r.header.Get("Content-Type") != "application/yaml" {
		t.Fatalf("served spec differs (%s)", r.header.Get("Content-Type"))
	}
}
