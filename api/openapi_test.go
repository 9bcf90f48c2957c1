package api

import (
	"bytes"
	"cmp"
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
	if err := doc.Validate(t.Context()); err != nil {
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
// with its server URL the server's public URL, or "/" (relative) without
// one, whatever Host the request names: a Host written into the document
// would send its readers to an address of the client's choosing.
func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	for _, publicURL := range []string{"", "https://bills.example.in/api"} {
		e := setup(t, func(c *Config) { c.PublicURL = publicURL })
		for _, host := range []string{"", "evil.example.com", "attacker.example:8080"} {
			r := e.doHost("GET", "/openapi.yaml", host)
			e.wantStatus(r, 200)
			if r.header.Get("Content-Type") != "application/yaml" {
				t.Fatalf("Content-Type %q", r.header.Get("Content-Type"))
			}
			doc, err := openapi3.NewLoader().LoadFromData(r.body)
			if err != nil {
				t.Fatalf("served document does not load: %v", err)
			}
			want := cmp.Or(publicURL, "/")
			if len(doc.Servers) != 1 || doc.Servers[0].URL != want {
				t.Fatalf("public URL %q, Host %q: the document names servers %v, want exactly %s", publicURL, host, doc.Servers, want)
			}
			if b := bytes.Replace(openAPISpec, []byte(specServerLine), []byte("\n  - url: "+want+"\n"), 1); !bytes.Equal(r.body, b) {
				t.Fatal("served document differs from the embedded one beyond its server URL")
			}
		}
	}
	for _, u := range []string{"evil\n  - url: http://x", "https://a b", "https://x\"y", "ftp://x", "https://" + strings.Repeat("a", 2048)} {
		if got, want := specFor(u), specFor(""); !bytes.Equal(got, want) {
			t.Errorf("specFor(%q) names a server of its own", u)
		}
	}
	if !bytes.Contains(openAPISpec, []byte(specServerLine)) {
		t.Fatalf("api/openapi.yaml lost the server line specFor replaces (%q)", specServerLine)
	}
}
