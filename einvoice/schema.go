package einvoice

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// SchemaJSON is the INV-01 JSON schema every payload is checked against
// before it is sent (and that the sandbox checks what it receives
// against). It was written for invoiced from the IRP's published field
// list; its $comment says what could not be confirmed.
//
//go:embed inv01.schema.json
var SchemaJSON []byte

// schemaURL is the schema's $id, under which it is compiled.
const schemaURL = "https://invoiced.example/schema/einvoice/inv01-1.1.json"

// compiledSchema compiles SchemaJSON once. A failure is a defect of the
// embedded file (TestSchemaCompiles), so it panics.
var compiledSchema = sync.OnceValue(func() *jsonschema.Schema {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(SchemaJSON))
	if err != nil {
		panic("einvoice: schema: " + err.Error())
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(schemaURL, doc); err != nil {
		panic("einvoice: schema: " + err.Error())
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		panic("einvoice: schema: " + err.Error())
	}
	return s
})

// Violation is one way a payload breaks the schema: where (a JSON pointer,
// "/ItemList/0/PrdDesc") and what ("minLength: got 2, want 3").
type Violation struct {
	Path    string
	Message string
}

// String returns "/ItemList/0/PrdDesc: minLength: got 2, want 3".
func (v Violation) String() string { return v.Path + ": " + v.Message }

// SchemaError is Validate's error: every violation found, sorted by path.
// It matches ErrInvalidPayload under errors.Is.
type SchemaError struct {
	Violations []Violation
}

// Error lists the violations, "e-invoice payload breaks INV-01: /a: …; /b: …".
func (e *SchemaError) Error() string {
	parts := make([]string, len(e.Violations))
	for i, v := range e.Violations {
		parts[i] = v.String()
	}
	return "e-invoice payload breaks INV-01: " + strings.Join(parts, "; ")
}

// Unwrap returns ErrInvalidPayload carrying the violations as its message,
// so that errors.Is(err, ErrInvalidPayload) holds and apperr.MessageOf
// names them.
func (e *SchemaError) Unwrap() error { return apperr.Errorf(ErrInvalidPayload, "%s", e.Error()) }

// printer words the schema library's messages.
var printer = message.NewPrinter(language.English)

// Validate checks the JSON document b against the INV-01 schema. It
// returns nil when b holds, and a *SchemaError (ErrInvalidPayload) listing
// every violation otherwise, or when b is not one JSON value.
func Validate(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return &SchemaError{Violations: []Violation{{Path: "", Message: "not JSON: " + err.Error()}}}
	}
	if dec.More() {
		return &SchemaError{Violations: []Violation{{Path: "", Message: "more than one JSON value"}}}
	}
	err := compiledSchema().Validate(doc)
	if err == nil {
		return nil
	}
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return &SchemaError{Violations: []Violation{{Message: err.Error()}}}
	}
	var vs []Violation
	collect(ve, &vs)
	sort.SliceStable(vs, func(i, j int) bool { return vs[i].Path < vs[j].Path })
	return &SchemaError{Violations: vs}
}

// collect appends the leaves of e's tree of causes to vs: each names one
// keyword one value breaks.
func collect(e *jsonschema.ValidationError, vs *[]Violation) {
	if len(e.Causes) == 0 {
		*vs = append(*vs, Violation{Path: pointer(e.InstanceLocation), Message: e.ErrorKind.LocalizedString(printer)})
		return
	}
	for _, c := range e.Causes {
		collect(c, vs)
	}
}

// pointer returns the JSON pointer of the path elements loc.
func pointer(loc []string) string {
	var b strings.Builder
	for _, p := range loc {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(p))
	}
	return b.String()
}

// Marshal returns p as JSON, checked against the schema: the bytes a
// registrar sends. It fails with a *SchemaError (ErrInvalidPayload) when p
// breaks the schema.
func Marshal(p *Payload) ([]byte, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("einvoice: marshal: %w", err)
	}
	if err := Validate(b); err != nil {
		return nil, err
	}
	return b, nil
}
