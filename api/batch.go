package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/jsonfast"
	"github.com/invoiced/invoiced/internal/metrics"
	"github.com/invoiced/invoiced/invoice"
	"github.com/labstack/echo/v4"
)

// Batch issuance: POST /v1/series/{code}/invoices/batch. The envelope is
// judged as a whole (422 invalid_batch), each item alone: a refused item
// takes no number and does not stop the others, and the valid ones are
// issued together by Committer.IssueBatch.

// maxBatchInvoices is the most invoices one batch request may hold.
const maxBatchInvoices = 500

// batchBodyMax is the body limit of a batch: 8 MiB, about 16 KiB an
// invoice for 500 (a POS invoice of a few lines is well under 1 KiB). It
// is not sized to 500 maximal invoices (250 lines each, 259 MiB): an
// issue-only key could then make the server hold a quarter of a GiB per
// request. Config.MaxBodyBytes lowers it.
const batchBodyMax = 8 << 20

var errInvalidBatch = apperr.New(apperr.Invalid, "invalid_batch", "the batch envelope is invalid")

// batchBody is the envelope of a batch request.
type batchBody struct {
	Invoices *[]json.RawMessage `json:"invoices"`
}

// batchItemBody is one item of a batch: an issue body and its key.
type batchItemBody struct {
	IdempotencyKey string `json:"idempotency_key"`
	issueBody
}

// batchItem is an item whose envelope part (its key) is valid: its raw
// bytes (what its request hash covers) and, when fastBatch read it, its
// decoded body (nil: decodeBatchItem decodes raw).
type batchItem struct {
	key  string
	raw  []byte
	body *batchItemBody
}

// decodeBatchEnvelope returns the items of a batch body with their keys.
// It fails with a 400 error for malformed JSON (as decodeStrict) and with
// errInvalidBatch (422) when the body is not an object, has no invoices,
// none or more than maxBatchInvoices, or an item that is not an object or
// has no valid idempotency_key, or two items with one key. The items'
// own fields are not judged here.
func decodeBatchEnvelope(body []byte) ([]batchItem, error) {
	if scanJSON(body, max(maxBatchInvoices, document.MaxItems)) == nil {
		if items, ok := fastBatch(body); ok {
			if err := checkBatchKeys(items); err != nil {
				return nil, err
			}
			return items, nil
		}
	}
	return decodeBatchEnvelopeJSON(body)
}

// decodeBatchEnvelopeJSON is decodeBatchEnvelope through encoding/json,
// for every body fastBatch does not read.
func decodeBatchEnvelopeJSON(body []byte) ([]batchItem, error) {
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) > 0 && t[0] != '{' && json.Valid(body) {
		return nil, apperr.Errorf(errInvalidBatch, "the request body must be a JSON object {\"invoices\": [...]}")
	}
	var b batchBody
	if err := decodeStrict(body, &b, errInvalidBatch, max(maxBatchInvoices, document.MaxItems)); err != nil {
		if errors.Is(err, errTooManyElements) {
			err = apperr.Errorf(errInvalidBatch, "an array of the batch holds more than %d elements (invoices holds at most %d, items at most %d)", max(maxBatchInvoices, document.MaxItems), maxBatchInvoices, document.MaxItems)
		}
		return nil, err
	}
	switch {
	case b.Invoices == nil:
		return nil, apperr.Errorf(errInvalidBatch, "invoices is required: an array of 1 to %d invoices", maxBatchInvoices)
	case len(*b.Invoices) == 0:
		return nil, apperr.Errorf(errInvalidBatch, "invoices is empty: send 1 to %d invoices", maxBatchInvoices)
	case len(*b.Invoices) > maxBatchInvoices:
		return nil, apperr.Errorf(errInvalidBatch, "invoices holds %d invoices; at most %d are allowed", len(*b.Invoices), maxBatchInvoices)
	}
	items := make([]batchItem, len(*b.Invoices))
	seen := make(map[string]int, len(items))
	for i, raw := range *b.Invoices {
		if len(raw) == 0 || raw[0] != '{' {
			return nil, apperr.Errorf(errInvalidBatch, "invoices[%d] must be a JSON object", i)
		}
		var k struct{ Key *string }
		if v, ok := jsonfast.Member(raw, "idempotency_key"); ok {
			if err := json.Unmarshal(v, &k.Key); err != nil {
				return nil, apperr.Errorf(errInvalidBatch, "invoices[%d].idempotency_key must be a string", i)
			}
		}
		if k.Key == nil {
			return nil, apperr.Errorf(errInvalidBatch, "invoices[%d].idempotency_key is required: every invoice of a batch needs its own key", i)
		}
		if err := checkBatchKey(seen, i, *k.Key); err != nil {
			return nil, err
		}
		items[i] = batchItem{key: *k.Key, raw: raw}
	}
	return items, nil
}

// checkBatchKey fails with errInvalidBatch unless key, the key of item i,
// is 1 to 255 printable ASCII characters and not the key of an earlier
// item (seen: key → item); it adds key to seen.
func checkBatchKey(seen map[string]int, i int, key string) error {
	if !printableASCII(key, 255) {
		return apperr.Errorf(errInvalidBatch, "invoices[%d].idempotency_key must be 1 to 255 printable ASCII characters", i)
	}
	if j, ok := seen[key]; ok {
		return apperr.Errorf(errInvalidBatch, "invoices[%d] and invoices[%d] have the same idempotency_key; each invoice needs its own", j, i)
	}
	seen[key] = i
	return nil
}

// checkBatchKeys is checkBatchKey for every item, in order.
func checkBatchKeys(items []batchItem) error {
	seen := make(map[string]int, len(items))
	for i, it := range items {
		if err := checkBatchKey(seen, i, it.key); err != nil {
			return err
		}
	}
	return nil
}

// decodeBatchItem decodes one item of a batch strictly, as
// decodeIssueRequest decodes a single issue body (only what request
// checks when fastBatch decoded it already).
func decodeBatchItem(it batchItem) (document.Request, error) {
	if it.body != nil {
		return it.body.request()
	}
	raw := it.raw
	var b batchItemBody
	if err := decodeStrict(raw, &b, document.ErrInvalid, document.MaxItems); err != nil {
		if errors.Is(err, errTooManyElements) {
			err = apperr.Errorf(document.ErrInvalid, "items holds more than %d items, the most allowed", document.MaxItems)
		}
		return document.Request{}, err
	}
	return b.request()
}

// batchResultJSON is the answer for one item of a batch.
type batchResultJSON struct {
	Status   int          `json:"status"`
	Replayed bool         `json:"replayed,omitempty"`
	Invoice  *invoiceJSON `json:"invoice,omitempty"`
	Error    *errorDetail `json:"error,omitempty"`
}

type batchResultsJSON struct {
	Results []batchResultJSON `json:"results"`
}

// issueBatch serves POST /v1/series/{code}/invoices/batch (scope issue).
// Every item is validated and its amounts computed before any
// transaction; the valid ones go to the Committer together. The answer is
// 200 with one result per item, in request order.
func (s *Server) issueBatch(c echo.Context) error {
	ctx := c.Request().Context()
	p, err := s.authorize(c, apikey.CanIssue)
	if err != nil {
		return err
	}
	if _, ok := c.Request().Header["Idempotency-Key"]; ok {
		return apperr.Errorf(errInvalidBatch, "a batch takes no Idempotency-Key header: each invoice carries its own idempotency_key")
	}
	body, err := readJSON(c.Response(), c.Request(), s.bodyLimit(batchBodyMax))
	if err != nil {
		return err
	}
	items, err := decodeBatchEnvelope(body)
	if err != nil {
		return err
	}
	if err := s.chargeInvoices(c, p, len(items)); err != nil {
		return err
	}
	sr, err := s.seriesOf(ctx, p, c.Param("code"))
	if err != nil {
		return err
	}
	path := http.MethodPost + " /v1/series/" + strings.ToUpper(c.Param("code")) + "/invoices/batch"
	results := make([]batchResultJSON, len(items))
	var reqs []invoice.IssueRequest
	var at []int            // the item of each request
	var incompletes []error // of each request: the particulars it lacks (prepare)
	for i, it := range items {
		hash := requestHash(http.MethodPost, path, it.raw)
		req, err := decodeBatchItem(it)
		var d document.Draft
		var incomplete error
		if err == nil {
			d, incomplete, err = s.prepare(ctx, p.Seller, sr, req)
		}
		if err != nil {
			// As for one invoice: a retry of an item that succeeded
			// replays it even if it would no longer pass.
			inv, ok, rerr := s.lookupReplay(ctx, p.Seller.ID, it.key, hash)
			switch {
			case rerr != nil:
				results[i] = s.batchError(c, rerr)
			case ok:
				results[i] = s.batchReplay(inv)
			default:
				results[i] = s.batchError(c, err)
			}
			continue
		}
		d.IdempotencyKey, d.RequestHash = it.key, hash
		reqs = append(reqs, invoice.IssueRequest{Seller: p.Seller, Series: sr, Draft: d})
		at = append(at, i)
		incompletes = append(incompletes, incomplete)
	}
	if len(reqs) > 0 {
		for j, r := range s.committer.IssueBatch(ctx, reqs) {
			i := at[j]
			switch {
			case r.Err != nil:
				results[i] = s.batchError(c, r.Err)
			case r.Replayed:
				results[i] = s.batchReplay(r.Invoice)
			default:
				s.metrics.Issued(string(r.Invoice.DocType), metrics.SourceOnline, 1)
				s.warnIncomplete(c, p.Seller, r.Invoice, incompletes[j])
				inv := renderInvoice(fresh(p.Seller, r.Invoice), s.publicURL)
				results[i] = batchResultJSON{Status: http.StatusCreated, Invoice: &inv}
			}
		}
	}
	// About 1 KiB per POS invoice; json.Marshal of it gives the same bytes.
	out := appendBatchResults(make([]byte, 0, 1024*len(results)), batchResultsJSON{Results: results})
	return writeJSONBytes(c, http.StatusOK, out)
}

// batchReplay is the result of an item issued earlier with its key.
func (s *Server) batchReplay(inv document.Invoice) batchResultJSON {
	s.metrics.Replayed()
	r := renderInvoice(asIssued(inv), s.publicURL)
	return batchResultJSON{Status: http.StatusCreated, Replayed: true, Invoice: &r}
}

// batchError is the result of an item refused with err, resolved as the
// single-invoice route would answer it; an internal error is logged.
func (s *Server) batchError(c echo.Context, err error) batchResultJSON {
	p, internal := classify(err)
	if internal {
		s.log.ErrorContext(c.Request().Context(), "internal error in a batch item", append(requestIDs(c.Response().Header(), c.Request()),
			"path", c.Request().URL.Path, "err", err)...)
	}
	return batchResultJSON{Status: p.status, Error: &errorDetail{Code: p.code, Message: p.message}}
}
