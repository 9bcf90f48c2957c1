package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/invoice"
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

// maxDepth bounds the nesting of objects and arrays in a request body; the
// deepest valid body (an item inside items) nests three levels.
const maxDepth = 8

// maxKeys bounds the keys of one JSON object: no request object has more
// than 5 known fields, and unknown ones are refused anyway.
const maxKeys = 16

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
// chunk with a jsonScanner of limits as it arrives and stops reading at
// the first failure (an array past its limit, a key repeated, nesting too
// deep), so a body refused by its shape is never held whole; then it
// checks the body is UTF-8 (errBadJSON). It fails as readJSON and
// jsonScanner do; decode what it returns with decodeScanned.
func readScanned(w http.ResponseWriter, r *http.Request, max int64, limits arrayLimits) ([]byte, error) {
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
	sc := newJSONScanner(limits)
	for {
		if buf.Available() < chunk {
			buf.Grow(chunk)
		}
		n, err := body.Read(buf.AvailableBuffer()[:chunk])
		buf.Write(buf.AvailableBuffer()[:n])
		if serr := sc.scan(buf.Bytes()); serr != nil {
			return nil, serr
		}
		var mbe *http.MaxBytesError
		switch {
		case err == io.EOF:
			if !utf8.Valid(buf.Bytes()) {
				return nil, apperr.Errorf(errBadJSON, "the request body is not valid UTF-8")
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
var errTooManyElements = errors.New("api: too many array elements")

// decodeStrict decodes exactly one JSON value from body into v: invalid
// UTF-8, repeated keys, unknown fields, trailing data, nesting beyond
// maxDepth and malformed JSON are errMalformed-kind errors (400); a value
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

// scanFrame is an object or array a jsonScanner is inside of.
type scanFrame struct {
	object    bool
	expectKey bool            // object: the next string is a key
	elems     int             // array: values begun (commas + 1)
	max       int             // array: the most elements allowed
	key       [2]int          // array: where its key lies in the body (empty: none)
	nkeys     int             // object: keys seen
	keys      [maxKeys][2]int // object: where each key's bytes lie in the body
}

// arrayLimits says how many elements a body's arrays may hold: an array
// that is the value of a key in byKey at most byKey[key], any other at
// most other.
type arrayLimits struct {
	byKey map[string]int
	other int
}

// of returns the most elements of an array under key ("" for an array
// that is not an object member).
func (l arrayLimits) of(key []byte) int {
	if n, ok := l.byKey[string(key)]; ok {
		return n
	}
	return l.other
}

// arrayTooLong is the error of an array past its limit: errors.Is it
// errTooManyElements.
type arrayTooLong struct {
	key string // the array's key, "" when it is not an object member
	max int
}

func (e *arrayTooLong) Error() string {
	return fmt.Sprintf("api: array %q holds more than %d elements", e.key, e.max)
}

// Is reports whether target is errTooManyElements.
func (e *arrayTooLong) Is(target error) bool { return target == errTooManyElements }

// jsonScanner reads a body byte by byte, without building anything, as
// it arrives (scan is called with everything read so far) or whole
// (scanJSON). It fails with errBadJSON for a key repeated in an object
// (compared case-insensitively, as encoding/json matches fields), a key
// written with escapes (which would let "\u0069tems" pass for "items") or
// an object of more than maxKeys keys; with errTooDeep past maxDepth; and
// with an arrayTooLong at the first element past its array's limit.
// Syntax and UTF-8 are left to the caller: on malformed input the scan
// may pass or count oddly, and the decoder then refuses the body.
type jsonScanner struct {
	limits  arrayLimits
	stack   [maxDepth]scanFrame
	depth   int
	pos     int  // the next byte to scan
	str     int  // inside a string: where its bytes begin; -1 outside
	escaped bool // the string has an escape
	escNext bool // the next byte of the string is escaped
	lastKey [2]int
}

// newJSONScanner returns a scanner of a body whose arrays limits bounds.
func newJSONScanner(limits arrayLimits) *jsonScanner {
	return &jsonScanner{limits: limits, str: -1}
}

// scan scans body[sc.pos:], body being every byte of the request read so
// far (the bytes before pos as in earlier calls), and returns the first
// failure described at jsonScanner.
func (sc *jsonScanner) scan(body []byte) error {
	stack := &sc.stack
	begin := func() { // a value begins at this byte
		if sc.depth > 0 && !stack[sc.depth-1].object && stack[sc.depth-1].elems == 0 {
			stack[sc.depth-1].elems = 1
		}
	}
	for i := sc.pos; i < len(body); i++ {
		if sc.str >= 0 {
			j := i
			for ; j < len(body); j++ {
				if sc.escNext {
					sc.escNext = false
					continue
				}
				if body[j] == '\\' {
					sc.escaped, sc.escNext = true, true
					continue
				}
				if body[j] == '"' {
					break
				}
			}
			if j == len(body) {
				break // the string goes on in bytes not read yet
			}
			if sc.depth > 0 && stack[sc.depth-1].object && stack[sc.depth-1].expectKey {
				if err := addKey(&stack[sc.depth-1], body, sc.str, j, sc.escaped); err != nil {
					return err
				}
				sc.lastKey = [2]int{sc.str, j}
			} else {
				begin()
			}
			sc.str, i = -1, j
			continue
		}
		switch c := body[i]; c {
		case ' ', '\t', '\n', '\r', ':':
		case '"':
			sc.str, sc.escaped, sc.escNext = i+1, false, false
		case '{', '[':
			begin()
			if sc.depth == maxDepth {
				return errTooDeep
			}
			f := scanFrame{object: c == '{', expectKey: c == '{'}
			if !f.object {
				if sc.depth > 0 && stack[sc.depth-1].object {
					f.key = sc.lastKey
				}
				f.max = sc.limits.of(body[f.key[0]:f.key[1]])
			}
			stack[sc.depth] = f
			sc.depth++
		case '}', ']':
			if sc.depth > 0 {
				sc.depth--
			}
		case ',':
			if sc.depth == 0 {
				continue
			}
			top := &stack[sc.depth-1]
			if top.object {
				top.expectKey = true
			} else if top.elems++; top.elems > top.max {
				return &arrayTooLong{key: string(body[top.key[0]:top.key[1]]), max: top.max}
			}
		default:
			begin()
		}
	}
	sc.pos = len(body)
	return nil
}

// scanJSON checks that body is valid UTF-8 (else errBadJSON) and scans it
// whole with a jsonScanner whose arrays may hold at most maxElems
// elements each.
//
// A json.Decoder.Token loop did the same in 110 µs for a one-item body
// (168 allocations), seven times the decoding itself; this takes about 1 µs.
func scanJSON(body []byte, maxElems int) error {
	if !utf8.Valid(body) {
		return apperr.Errorf(errBadJSON, "the request body is not valid UTF-8")
	}
	return newJSONScanner(arrayLimits{other: maxElems}).scan(body)
}

// addKey records the key body[from:to] in the object f, failing on a key
// already there, an escaped key, or one key too many.
func addKey(f *scanFrame, body []byte, from, to int, escaped bool) error {
	key := body[from:to]
	if escaped {
		return apperr.Errorf(errBadJSON, "the request body has a key written with escapes (%q); write keys plainly", clip(string(key)))
	}
	for _, k := range f.keys[:f.nkeys] {
		if bytes.EqualFold(body[k[0]:k[1]], key) {
			return apperr.Errorf(errBadJSON, "the request body repeats the key %q in one object", clip(string(key)))
		}
	}
	if f.nkeys == maxKeys {
		return apperr.Errorf(errBadJSON, "a JSON object in the request body has more than %d keys", maxKeys)
	}
	f.keys[f.nkeys] = [2]int{from, to}
	f.nkeys++
	f.expectKey = false
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

// jsonDecimal is an amount, quantity or rate: it must be sent as a JSON
// string. A JSON number is remembered (not refused by the decoder) so the
// handler can name the field in its 422.
type jsonDecimal struct {
	s      string
	number bool // sent as a JSON number
}

// UnmarshalJSON accepts a string (kept as is), null (left empty) and a
// number (flagged); any other JSON value is an error.
func (d *jsonDecimal) UnmarshalJSON(b []byte) error {
	switch {
	case len(b) > 0 && b[0] == '"':
		return json.Unmarshal(b, &d.s)
	case string(b) == "null":
		return nil
	case len(b) > 0 && (b[0] == '-' || '0' <= b[0] && b[0] <= '9'):
		d.number = true
		return nil
	}
	return apperr.Errorf(document.ErrInvalid, "amounts, quantities and rates must be decimal strings such as \"10.50\"")
}

// issueBody is the JSON body of POST /v1/series/{code}/invoices.
type issueBody struct {
	InvoiceDate   *string       `json:"invoice_date"`
	Buyer         *buyerBody    `json:"buyer"`
	PlaceOfSupply string        `json:"place_of_supply"`
	Items         []itemBody    `json:"items"`
	Original      *originalBody `json:"original"`
}

type buyerBody struct {
	GSTIN string `json:"gstin"`
	Name  string `json:"name"`
}

type originalBody struct {
	Number      string `json:"number"`
	InvoiceDate string `json:"invoice_date"`
	External    bool   `json:"external"`
	Reason      string `json:"reason"`
}

type itemBody struct {
	Description string      `json:"description"`
	HSN         string      `json:"hsn"`
	Quantity    jsonDecimal `json:"quantity"`
	UnitPrice   jsonDecimal `json:"unit_price"`
	GSTRate     jsonDecimal `json:"gst_rate"`
}

// decodeIssueRequest decodes the body of an issue request strictly. It
// fails with a 400 error for malformed JSON, unknown fields or trailing
// data, and with document.ErrInvalid (422) for numbers sent as JSON numbers,
// too many items or values of the wrong type, and gst.ErrInvalidDate for
// a date not written YYYY-MM-DD.
func decodeIssueRequest(body []byte) (document.Request, error) {
	var b issueBody
	if err := decodeStrict(body, &b, document.ErrInvalid, document.MaxItems); err != nil {
		if errors.Is(err, errTooManyElements) {
			err = apperr.Errorf(document.ErrInvalid, "items holds more than %d items, the most allowed", document.MaxItems)
		}
		return document.Request{}, err
	}
	return b.request()
}

// request checks what decoding left to check (amounts sent as JSON
// numbers, dates, the item count) and returns the issue request b asks
// for; it fails like decodeIssueRequest.
func (b *issueBody) request() (document.Request, error) {
	var req document.Request
	if b.InvoiceDate != nil {
		d, err := gst.ParseDate(*b.InvoiceDate)
		if err != nil {
			return document.Request{}, apperr.Errorf(gst.ErrInvalidDate, "invoice_date: %s", apperr.MessageOf(err))
		}
		req.InvoiceDate = d
	}
	if b.Buyer != nil {
		req.Buyer = &document.Buyer{GSTIN: b.Buyer.GSTIN, Name: b.Buyer.Name}
	}
	req.PlaceOfSupply = b.PlaceOfSupply
	if b.Original != nil {
		if b.Original.External != (b.Original.Reason != "") {
			return document.Request{}, apperr.Errorf(document.ErrInvalid, "original.external and original.reason go together: an original issued outside invoiced is sent with \"external\": true and a \"reason\"")
		}
		req.Original = &document.Original{Number: b.Original.Number, ExternalReason: b.Original.Reason}
		if b.Original.InvoiceDate != "" {
			d, err := gst.ParseDate(b.Original.InvoiceDate)
			if err != nil {
				return document.Request{}, apperr.Errorf(gst.ErrInvalidDate, "original.invoice_date: %s", apperr.MessageOf(err))
			}
			req.Original.InvoiceDate = d
		}
	}
	if len(b.Items) > document.MaxItems {
		return document.Request{}, apperr.Errorf(document.ErrInvalid, "items holds %d items; at most %d are allowed", len(b.Items), document.MaxItems)
	}
	req.Items = make([]document.ItemInput, len(b.Items))
	for i, it := range b.Items {
		for _, f := range [...]struct {
			name string
			d    jsonDecimal
		}{{"quantity", it.Quantity}, {"unit_price", it.UnitPrice}, {"gst_rate", it.GSTRate}} {
			if f.d.number {
				return document.Request{}, apperr.Errorf(document.ErrInvalid, "items[%d].%s must be sent as a decimal string such as \"10.50\", not a JSON number (numbers lose paise)", i, f.name)
			}
		}
		req.Items[i] = document.ItemInput{Description: it.Description, HSN: it.HSN,
			Quantity: it.Quantity.s, UnitPrice: it.UnitPrice.s, GSTRate: it.GSTRate.s}
	}
	return req, nil
}

// seriesBody is the JSON body of POST /v1/series.
type seriesBody struct {
	Code    string       `json:"code"`
	DocType string       `json:"doc_type"`
	Format  string       `json:"format"`
	Shop    string       `json:"shop"`
	Opening *openingBody `json:"opening"`
}

// openingBody declares where the series stood before invoiced.
type openingBody struct {
	FY              string `json:"fy"`
	LastSerial      int64  `json:"last_serial"`
	LastInvoiceDate string `json:"last_invoice_date"`
	LastNumber      string `json:"last_number"`
}

func decodeSeriesRequest(body []byte) (seriesBody, error) {
	var b seriesBody
	err := decodeStrict(body, &b, gst.ErrInvalidSeries, 0)
	if errors.Is(err, errTooManyElements) {
		err = apperr.Errorf(gst.ErrInvalidSeries, "a series request holds no arrays")
	}
	return b, err
}

// opening returns the declared opening, nil when there is none. It fails
// with gst.ErrInvalidDate for a year or date not written as expected.
func (b seriesBody) opening() (*invoice.Opening, error) {
	if b.Opening == nil {
		return nil, nil
	}
	fy, err := gst.ParseFY(b.Opening.FY)
	if err != nil {
		return nil, apperr.Errorf(gst.ErrInvalidDate, "opening.fy: %s", apperr.MessageOf(err))
	}
	d, err := gst.ParseDate(b.Opening.LastInvoiceDate)
	if err != nil {
		return nil, apperr.Errorf(gst.ErrInvalidDate, "opening.last_invoice_date: %s", apperr.MessageOf(err))
	}
	return &invoice.Opening{FY: fy, LastSerial: b.Opening.LastSerial, LastInvoiceDate: d, LastNumber: b.Opening.LastNumber}, nil
}

// cancelBody is the JSON body of POST /v1/invoices/{id}/cancel.
type cancelBody struct {
	Reason string `json:"reason"`
}

func decodeCancelRequest(body []byte) (cancelBody, error) {
	var b cancelBody
	err := decodeStrict(body, &b, document.ErrInvalid, 0)
	if errors.Is(err, errTooManyElements) {
		err = apperr.Errorf(document.ErrInvalid, "reason must be a string")
	}
	return b, err
}
