package client

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Client calls one invoiced server with one API key. It is safe for
// concurrent use.
type Client struct {
	baseURL    string
	apiKey     string
	http       *http.Client
	minBackoff time.Duration
	maxBackoff time.Duration
	attempt    time.Duration // deadline of one attempt; 0: none but the context's
	userAgent  string
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sends requests with h instead of a default client.
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// WithBackoff sets the first retry's wait (default 100 ms) and the longest
// wait between attempts (default 5 s). Each wait is drawn at random between
// half and all of min·2^(attempt-1), capped at max, and is never shorter
// than the answer's Retry-After.
func WithBackoff(min, max time.Duration) Option {
	return func(c *Client) { c.minBackoff, c.maxBackoff = min, max }
}

// WithAttemptTimeout bounds each attempt (default 40 s, longer than the
// server's 30 s request deadline); an attempt that times out is retried
// with the same key. 0 leaves only the caller's context.
func WithAttemptTimeout(d time.Duration) Option { return func(c *Client) { c.attempt = d } }

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// New returns a client of the server at baseURL ("http://127.0.0.1:8080")
// that authenticates with apiKey (ik_…; "" for the routes without a key).
func New(baseURL, apiKey string, opts ...Option) *Client {
	c := &Client{
		baseURL:    strings.TrimRight(baseURL, "/"),
		apiKey:     apiKey,
		http:       &http.Client{Transport: http.DefaultTransport},
		minBackoff: 100 * time.Millisecond,
		maxBackoff: 5 * time.Second,
		attempt:    40 * time.Second,
		userAgent:  "invoiced-go-client/1",
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// CallOption adjusts one call.
type CallOption func(*call)

// IdempotencyKey sends key as the call's Idempotency-Key instead of a new
// random one: to resume a call whose outcome was unknown (OutcomeKey), or
// to tie a call to the caller's own record of the sale.
func IdempotencyKey(key string) CallOption { return func(c *call) { c.key = key } }

// NewIdempotencyKey returns a random key (128 bits, hex).
func NewIdempotencyKey() string {
	var b [16]byte
	_, _ = crand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// call is one logical request: everything every attempt sends the same.
type call struct {
	method   string
	path     string // with query
	body     []byte // nil: none
	key      string // Idempotency-Key; "" for reads
	mutating bool   // IsOutcomeUnknown applies
	accept   string
	lease    string // Lease-Id; "" for none
}

// answer is a successful answer.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// do runs c until an answer settles it or ctx ends. It returns the 2xx
// answer, an *Error for an answer that is not retried, or, when ctx ends
// first, an error wrapping ctx's and the last attempt's (an outcomeError
// for a mutating call that some attempt may have carried out).
func (cl *Client) do(ctx context.Context, c *call) (answer, error) {
	unknown := false // some attempt may have taken effect
	for attempt := 1; ; attempt++ {
		a, err := cl.attemptOnce(ctx, c)
		if err == nil {
			return a, nil
		}
		var ae *Error
		isAnswer := errors.As(err, &ae)
		if c.mutating && (!isAnswer || mayHaveTakenEffect(ae)) {
			unknown = true
		}
		if isAnswer && !retryable(ae) {
			if unknown && !settles(c, ae) {
				return answer{}, &outcomeError{key: c.key, errs: []error{err}}
			}
			return answer{}, err
		}
		wait := cl.backoff(attempt)
		if isAnswer && ae.RetryAfter > wait {
			wait = ae.RetryAfter
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			errs := []error{ctx.Err(), err}
			if unknown {
				return answer{}, &outcomeError{key: c.key, errs: errs}
			}
			return answer{}, errors.Join(errs...)
		case <-t.C:
		}
	}
}

// retryable reports whether an answer tells the client to retry with the
// same key (docs/api.md, "What an answer lets a client conclude").
func retryable(e *Error) bool {
	switch {
	case e.Status == http.StatusConflict && (e.Code == CodeIdempotencyKeyInProgress || e.Code == CodeEInvoiceBusy):
		return true
	case e.Status == http.StatusTooManyRequests:
		return e.Code != CodeOverRateLimit // never passes however long one waits
	case e.Status >= 500:
		return true
	}
	return false
}

// mayHaveTakenEffect reports whether an answer leaves open that the
// attempt (or one before it with the same key) took effect.
func mayHaveTakenEffect(e *Error) bool {
	switch {
	case e.Status == http.StatusConflict && e.Code == CodeIdempotencyKeyInProgress:
		return true
	case e.Status == http.StatusServiceUnavailable && e.Code == CodeCommitOutcomeUnknown:
		return true
	case e.Status == http.StatusInternalServerError:
		return true
	case e.Status >= 500 && e.Code == "":
		return true // not the server's own answer (a proxy's)
	}
	return false
}

// settles reports whether a final answer to c says the call was not done
// even if an earlier attempt's outcome was unknown. Answers about the
// request itself (its content, path or key) do: the same key with the same
// body would have been replayed had an earlier attempt succeeded. 401 and
// 403 say nothing about earlier attempts (a key revoked in between); nor
// does a 409 to a call without a key (CreateSeries: the duplicate may be
// the earlier attempt's own work), nor 409 period_locked or series_leased:
// states that change back (the month unlocked, the lease ended) while an
// earlier attempt of the key may still wait in a server's queue and then
// commit (docs/api.md: these answers are not final).
func settles(c *call, e *Error) bool {
	switch {
	case e.Status == http.StatusUnauthorized, e.Status == http.StatusForbidden:
		return false
	case c.key == "" && e.Status == http.StatusConflict:
		return false
	case e.Status == http.StatusConflict && (e.Code == CodePeriodLocked || e.Code == CodeSeriesLeased):
		return false
	}
	return true
}

// backoff returns the wait before attempt+1: full jitter over the upper
// half of min·2^(attempt-1), capped at max.
func (cl *Client) backoff(attempt int) time.Duration {
	d := cl.maxBackoff
	if attempt < 32 {
		if e := cl.minBackoff << (attempt - 1); e > 0 && e < d {
			d = e
		}
	}
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d/2+1)
}

// attemptOnce sends c once. It returns the answer for a 2xx, an *Error for
// another status, or a *transportError when no answer came.
func (cl *Client) attemptOnce(ctx context.Context, c *call) (answer, error) {
	if cl.attempt > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cl.attempt)
		defer cancel()
	}
	var body io.Reader
	if c.body != nil {
		body = bytes.NewReader(c.body)
	}
	req, err := http.NewRequestWithContext(ctx, c.method, cl.baseURL+c.path, body)
	if err != nil {
		return answer{}, err
	}
	if cl.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+cl.apiKey)
	}
	if c.body != nil {
		req.Header.Set("Content-Type", "application/json")
		// net/http resends a request with an Idempotency-Key by itself
		// when a reused connection fails before the answer; the client
		// would then not know an attempt was lost, and could take a
		// later 401 for the whole story. Every attempt is counted here.
		req.GetBody = nil
	}
	if c.key != "" {
		req.Header.Set("Idempotency-Key", c.key)
	}
	if c.accept != "" {
		req.Header.Set("Accept", c.accept)
	}
	if c.lease != "" {
		req.Header.Set("Lease-Id", c.lease)
	}
	req.Header.Set("User-Agent", cl.userAgent)
	res, err := cl.http.Do(req)
	if err != nil {
		return answer{}, &transportError{err: err}
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return answer{}, &transportError{err: err}
	}
	if res.StatusCode >= 200 && res.StatusCode < 300 {
		return answer{status: res.StatusCode, header: res.Header, body: b}, nil
	}
	return answer{}, errorOf(res, b)
}

// errorBody is the body of every error answer.
type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// errorOf reads an error answer.
func errorOf(res *http.Response, b []byte) *Error {
	e := &Error{Status: res.StatusCode, RequestID: res.Header.Get("X-Request-Id"), body: b}
	var body errorBody
	if json.Unmarshal(b, &body) == nil {
		e.Code, e.Message = body.Error.Code, body.Error.Message
	}
	if e.Message == "" {
		e.Message = http.StatusText(res.StatusCode)
	}
	if s, err := strconv.Atoi(strings.TrimSpace(res.Header.Get("Retry-After"))); err == nil && s > 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	return e
}

// getJSON runs a GET and decodes its JSON answer into out.
func (cl *Client) getJSON(ctx context.Context, path string, out any) error {
	a, err := cl.do(ctx, &call{method: http.MethodGet, path: path, accept: "application/json"})
	if err != nil {
		return err
	}
	return decode(a.body, out)
}

// createJSON POSTs in as JSON to path, a create without an
// Idempotency-Key (its outcome may be unknown after a lost answer), and
// decodes the answer into out.
func (cl *Client) createJSON(ctx context.Context, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	a, err := cl.do(ctx, &call{method: http.MethodPost, path: path, body: body, mutating: true, accept: "application/json"})
	if err != nil {
		return err
	}
	return decode(a.body, out)
}

func decode(b []byte, out any) error {
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("invoiced: decode answer: %w", err)
	}
	return nil
}
