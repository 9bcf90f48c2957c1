package bench

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// invoiceBody is the request body of every POST: one line item, as a till
// would send.
var invoiceBody = []byte(`{"items":[{"description":"Masala chai","hsn":"0902","quantity":"2","unit_price":"10.00","gst_rate":"5"}]}`)

// apiClient talks to one invoiced server.
type apiClient struct {
	base string // e.g. http://127.0.0.1:8080, no trailing slash
	key  string
	http *http.Client
}

// newAPIClient returns a client with a keep-alive HTTP/1.1 transport sized
// for conns concurrent requests.
func newAPIClient(base, key string, conns int) *apiClient {
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conns + 16,
		MaxIdleConnsPerHost: conns + 16,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
		// A non-nil empty map turns HTTP/2 off.
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
	return &apiClient{
		base: strings.TrimRight(base, "/"),
		key:  key,
		http: &http.Client{Transport: tr, Timeout: 60 * time.Second},
	}
}

// as returns a client of the same server and connections that
// authenticates with key (another seller's).
func (a *apiClient) as(key string) *apiClient {
	c := *a
	c.key = key
	return &c
}

// close drops the client's idle connections.
func (a *apiClient) close() { a.http.CloseIdleConnections() }

// do sends one request with a JSON body (nil for none) and returns the
// status and the response body.
func (a *apiClient) do(ctx context.Context, method, path string, body []byte, hdr map[string]string) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+a.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := a.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// createSeries creates the series code with an unpadded format (so it
// never runs out during a benchmark). It fails unless the server answers
// 201.
func (a *apiClient) createSeries(ctx context.Context, code string) error {
	body, _ := json.Marshal(map[string]string{
		"code": code, "doc_type": "invoice", "format": code + "-{SEQ}", "shop": "bench",
	})
	st, b, err := a.do(ctx, http.MethodPost, "/v1/series", body, nil)
	if err != nil {
		return fmt.Errorf("create series %s: %w", code, err)
	}
	if st == http.StatusConflict && bytes.Contains(b, []byte(`"duplicate_series"`)) {
		return fmt.Errorf("create series %s: %w", code, errSeriesTaken)
	}
	if st != http.StatusCreated {
		return fmt.Errorf("create series %s: HTTP %d: %s", code, st, bytes.TrimSpace(b))
	}
	return nil
}

// errSeriesTaken: the seller already has a series of that code, left by an
// earlier run of the harness on the same database.
var errSeriesTaken = errors.New("the seller already has a series of that code")

// lastSerials returns each listed series' last serial summed over its
// financial years, from GET /v1/series.
func (a *apiClient) lastSerials(ctx context.Context) (map[string]int64, error) {
	st, b, err := a.do(ctx, http.MethodGet, "/v1/series", nil, nil)
	if err != nil {
		return nil, err
	}
	if st != http.StatusOK {
		return nil, fmt.Errorf("GET /v1/series: HTTP %d: %s", st, bytes.TrimSpace(b))
	}
	var out struct {
		Series []struct {
			Code  string `json:"code"`
			Years []struct {
				LastSerial int64 `json:"last_serial"`
			} `json:"years"`
		} `json:"series"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("GET /v1/series: %w", err)
	}
	m := make(map[string]int64, len(out.Series))
	for _, s := range out.Series {
		var n int64
		for _, y := range s.Years {
			n += y.LastSerial
		}
		m[s.Code] = n
	}
	return m, nil
}

// serverStats is the optional GET /debug/stats answer: group-commit
// counters since the server started.
type serverStats struct {
	Batches  int64 `json:"batches"`
	Invoices int64 `json:"invoices"`
	MaxBatch int64 `json:"max_batch"`
	// Transactions committed from predicted counter states, and those
	// whose prediction failed (then issued the ordinary way).
	Predicted    int64 `json:"predicted"`
	Mispredicted int64 `json:"mispredicted"`
}

// stats returns the server's batch counters, or nil when it does not
// expose them.
func (a *apiClient) stats(ctx context.Context) *serverStats {
	st, b, err := a.do(ctx, http.MethodGet, "/debug/stats", nil, nil)
	if err != nil || st != http.StatusOK {
		return nil
	}
	var s serverStats
	if json.Unmarshal(b, &s) != nil || s.Batches == 0 && s.Invoices == 0 && !bytes.Contains(b, []byte(`"batches"`)) {
		return nil
	}
	return &s
}

// registerWebhook starts a receiver on 127.0.0.1 that answers every
// delivery 204, registers a webhook for both event types to it, and
// returns stop, which deletes the webhook and stops the receiver.
func registerWebhook(ctx context.Context, a *apiClient) (stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	rcv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // the body is not looked at
		w.WriteHeader(http.StatusNoContent)
	}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = rcv.Serve(ln) }() // returns http.ErrServerClosed when stopped
	body, _ := json.Marshal(map[string]any{"url": "http://" + ln.Addr().String() + "/hook", "events": []string{"invoice.issued", "invoice.cancelled"}})
	st, b, err := a.do(ctx, http.MethodPost, "/v1/webhooks", body, nil)
	if err == nil && st != http.StatusCreated {
		err = fmt.Errorf("HTTP %d: %s (a --url server needs --webhook-allow-private)", st, bytes.TrimSpace(b))
	}
	if err != nil {
		rcv.Close()
		a.close()
		return nil, fmt.Errorf("bench: register webhook: %w", err)
	}
	var wh struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(b, &wh); err != nil {
		rcv.Close()
		a.close()
		return nil, fmt.Errorf("bench: register webhook: %w", err)
	}
	return func() {
		// Best effort: the webhook belongs to the benchmark's own seller,
		// which the next run replaces.
		_, _, _ = a.do(context.WithoutCancel(ctx), http.MethodDelete, "/v1/webhooks/"+wh.ID, nil, nil)
		rcv.Close()
		a.close()
	}, nil
}
