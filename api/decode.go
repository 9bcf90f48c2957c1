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

// readJSON checks the Content-Type (415 unless application/json) and reads
// the body, at most max bytes (413 beyond).
func readJSON(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	if err := checkJSONHeaders(r, max); err != nil {
		return nil, err
	}
	// Sized from Content-Length when there is one, so that reading does
	// not grow (and copy) the buffer several times.
	var buf bytes.Buffer
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength) + bytes.MinRead)
	}
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, max))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, apperr.Errorf(errBodyTooLarge, "the request body is larger than %d bytes", max)
	}
	if err != nil {
		return nil, apperr.WithCause(errMalformed, err)
	}
	return buf.Bytes(), nil
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
	const chunk = 32 << 10
	var buf bytes.Buffer
	size := int64(chunk) // the body's Content-Length when it is given (at most max)
	if r.ContentLength > size {
		size = r.ContentLength
	}
	buf.Grow(int(size) + chunk)
	body := http.MaxBytesReader(w, r.Body, max)
	sc := jsonfast.NewScanner(limits)
	for {
		if buf.Available() < chunk {
			buf.Grow(chunk)
		}
		n, err := body.Read(buf.AvailableBuffer()[:chunk])
		buf.Write(buf.AvailableBuffer()[:n])
		if serr := sc.Scan(buf.Bytes()); serr != nil {
			return nil, shapeError(serr)
		}
		var mbe *http.MaxBytesError
		switch {
		case err == io.EOF:
			if !utf8.Valid(buf.Bytes()) {
				return nil, shapeError(&jsonfast.ShapeError{Problem: jsonfast.NotUTF8})
			}
			return buf.Bytes(), nil
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
