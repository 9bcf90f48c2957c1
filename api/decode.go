package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/jsonfast"
)

// Strict JSON decoding of request bodies. Everything a client can send
// decodes to a value or to a 4xx error; nothing here panics or fails with
// an internal error.

var (
	errNotJSON      = apperr.New(apperr.Unsupported, "unsupported_media_type", "the request body must be JSON: send Content-Type: application/json")
	errBadJSON      = apperr.New(apperr.Malformed, "malformed_json", "the request body is not valid JSON")
	errTooDeep      = apperr.New(apperr.Malformed, "malformed_json", "the request body nests deeper than allowed")
	errUnknownField = apperr.New(apperr.Malformed, "unknown_field", "the request body holds a field this endpoint does not know")
)

// The scan of a body's shape (internal/jsonfast) allows jsonfast.MaxDepth
// levels of nesting (the deepest valid body, an item inside items, nests
// three) and jsonfast.MaxKeys keys per object (no request object has more
// than 5 known fields, and unknown ones are refused anyway).

// Body limits per route, sized to the largest valid request: an issue
// request of document.MaxItems items, each at most 2 KiB even with every
// character of a 300-byte description written as a \u escape, plus room
// for buyer, dates and white space; the small bodies (a series, a cancel
// reason) in 8 KiB.
const (
	issueBodyMax = document.MaxItems*(2<<10) + 16<<10
	smallBodyMax = 8 << 10
)

// bodyChunk is the most of a body read at once, and the size its buffer
// starts at (smaller when the body says it is smaller).
const bodyChunk = 32 << 10

// readJSON checks the Content-Type (415 unless application/json) and reads
// the body, at most max bytes (413 beyond), as readBody does.
func readJSON(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	if err := checkJSONHeaders(r, max); err != nil {
		return nil, err
	}
	return readBody(w, r, max, nil)
}

// readScanned is readJSON for a body that may be large: it scans each
// chunk with a jsonfast.Scanner of limits as it arrives and stops reading at
// the first failure (an array past its limit, a key repeated, nesting too
// deep), so a body refused by its shape is never held whole; then it
// checks the body is UTF-8 (errBadJSON). It fails as readJSON and
// shapeError say; decode what it returns with decodeScanned.
func readScanned(w http.ResponseWriter, r *http.Request, max int64, limits jsonfast.Limits) ([]byte, error) {
	if err := checkJSONHeaders(r, max); err != nil {
		return nil, err
	}
	body, err := readBody(w, r, max, jsonfast.NewScanner(limits))
	if err == nil && !utf8.Valid(body) {
		return nil, shapeError(&jsonfast.ShapeError{Problem: jsonfast.NotUTF8})
	}
	return body, err
}

// readBody reads r's body as it arrives, at most max bytes. Its buffer
// starts at bodyChunk (or the Content-Length when that is smaller) and
// doubles when full, each growth taken first from the request's share of
// the server's byte budget (budget.go): memory follows the bytes received,
// never a claimed Content-Length, and a client that claims 8 MiB and sends
// one byte holds 32 KiB. sc, when not nil, scans what has arrived after
// each read and stops at the first failure. It fails with errBodyTooLarge
// (413) past max, errServerBusy (503) when the budget cannot hold the next
// growth, shapeError's errors, and errMalformed when the body cannot be
// read.
func readBody(w http.ResponseWriter, r *http.Request, max int64, sc *jsonfast.Scanner) ([]byte, error) {
	l := ledgerOf(r.Context())
	size := int64(bodyChunk)
	if r.ContentLength >= 0 && r.ContentLength < size {
		size = r.ContentLength + 1 // room to see the end without growing
	}
	if err := l.take(size); err != nil {
		return nil, err
	}
	buf := make([]byte, 0, size)
	body := http.MaxBytesReader(w, r.Body, max)
	for {
		if len(buf) == cap(buf) {
			grow := int64(cap(buf)) // doubling, up to max and a byte to see the end
			grow = min(grow, max+1-int64(cap(buf)))
			if err := l.take(grow); err != nil {
				return nil, err
			}
			buf = append(make([]byte, 0, int64(cap(buf))+grow), buf...)
		}
		n, err := body.Read(buf[len(buf):min(cap(buf), len(buf)+bodyChunk)])
		buf = buf[:len(buf)+n]
		if sc != nil {
			if serr := sc.Scan(buf); serr != nil {
				return nil, shapeError(serr)
			}
		}
		var mbe *http.MaxBytesError
		switch {
		case err == io.EOF:
			return buf, nil
		case errors.As(err, &mbe):
			return nil, apperr.Errorf(errBodyTooLarge, "the request body is larger than %d bytes", max)
		case err != nil:
			return nil, apperr.WithCause(errMalformed, err)
		}
	}
}

// checkJSONHeaders fails with errNotJSON (415) unless r's Content-Type is
// application/json in UTF-8, and with errBodyTooLarge (413) when its
// Content-Length is over max.
func checkJSONHeaders(r *http.Request, max int64) error {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return errNotJSON
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return apperr.Errorf(errNotJSON, "the request body must be UTF-8 JSON, not charset %q", clip(cs))
	}
	if r.ContentLength > max {
		return apperr.Errorf(errBodyTooLarge, "the request body is larger than %d bytes", max)
	}
	return nil
}

// errTooManyElements is what scanJSON returns for an array longer than
// allowed; decoders turn it into their own 422.
var errTooManyElements = jsonfast.ErrTooManyElements

// decodeStrict decodes exactly one JSON value from body into v: invalid
// UTF-8, repeated keys, unknown fields, trailing data, nesting beyond
// jsonfast.MaxDepth and malformed JSON are errMalformed-kind errors (400); a value
// of the wrong type is a 422 of invalid (naming the field). An array of
// more than maxElems elements stops the scan at the first element past
// the limit and returns errTooManyElements, before anything is decoded.
func decodeStrict(body []byte, v any, invalid *apperr.Error, maxElems int) error {
	if err := scanJSON(body, maxElems); err != nil {
		return err
	}
	return decodeScanned(body, v, invalid)
}

// decodeScanned is decodeStrict for a body that readScanned returned (or
// scanJSON passed): it decodes without scanning again.
func decodeScanned(body []byte, v any, invalid *apperr.Error) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err, invalid)
	}
	if _, err := dec.Token(); err != io.EOF {
		return apperr.Errorf(errBadJSON, "the request body must hold one JSON value and nothing after it")
	}
	return nil
}

func jsonError(err error, invalid *apperr.Error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return apperr.Errorf(errBadJSON, "the request body is not valid JSON at byte %d", syn.Offset)
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return apperr.Errorf(errBadJSON, "the request body must be a JSON object")
		}
		return apperr.Errorf(invalid, "%s must be %s, not a JSON %s", clip(field), jsonKind(typ.Type.Kind().String()), typ.Value)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return apperr.Errorf(errBadJSON, "the request body is empty or cut short")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// encoding/json has no typed error for DisallowUnknownFields.
		return apperr.Errorf(errUnknownField, "unknown field %s", clip(strings.TrimPrefix(err.Error(), "json: unknown field ")))
	}
	var ae *apperr.Error
	if errors.As(err, &ae) {
		return ae
	}
	return apperr.WithCause(errBadJSON, err)
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "slice":
		return "an array"
	case "struct", "ptr":
		return "an object"
	}
	return "a " + k
}

// scanJSON checks body's shape whole (jsonfast.Scan: UTF-8, keys, nesting,
// every array at most maxElems elements) and returns shapeError of what
// it found.
func scanJSON(body []byte, maxElems int) error { return shapeError(jsonfast.Scan(body, maxElems)) }

// shapeError returns the API's error for a failed scan of a body's shape:
// errBadJSON saying what is wrong with a key or the encoding, errTooDeep,
// and an array past its limit as it is (errTooManyElements, which each
// decoder words). Nil stays nil.
func shapeError(err error) error {
	var se *jsonfast.ShapeError
	switch {
	case errors.As(err, &se):
		switch se.Problem {
		case jsonfast.NotUTF8:
			return apperr.Errorf(errBadJSON, "the request body is not valid UTF-8")
		case jsonfast.EscapedKey:
			return apperr.Errorf(errBadJSON, "the request body has a key written with escapes (%q); write keys plainly", clip(se.Key))
		case jsonfast.RepeatedKey:
			return apperr.Errorf(errBadJSON, "the request body repeats the key %q in one object", clip(se.Key))
		default:
			return apperr.Errorf(errBadJSON, "a JSON object in the request body has more than %d keys", jsonfast.MaxKeys)
		}
	case errors.Is(err, jsonfast.ErrTooDeep):
		return errTooDeep
	}
	return err
}
