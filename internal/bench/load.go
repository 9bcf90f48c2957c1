package bench

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	if st != http.StatusCreated {
		return fmt.Errorf("create series %s: HTTP %d: %s", code, st, bytes.TrimSpace(b))
	}
	return nil
}

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

// loadResult is what one load run observed.
type loadResult struct {
	OK       int64              // 201 answers
	Errors   map[string]int64   // by status ("503") or "transport"
	Resolved int64              // ambiguous requests settled by replaying their Idempotency-Key
	Acked    map[string][]int64 // series code → serials answered with 201
	Lat      []time.Duration    // latencies of 201 answers
	Elapsed  time.Duration      // from start until the last request finished
	Sample   map[string]string  // one error body per status, for the report
	pending  []pendingRequest   // transport errors, replayed by resolve
}

// pendingRequest is a request whose outcome is unknown (transport error):
// one invoice with its key, or a batch (its body, replayed whole: each
// item's key is bound to the batch route).
type pendingRequest struct {
	code, key string
	batch     []byte
}

// loadSpec says what to send.
type loadSpec struct {
	label    string
	clients  int
	duration time.Duration
	codes    []string // series to spread over, uniformly at random
	keyTag   string   // Idempotency-Key prefix, unique per run
	// batch, when positive, sends every request to the batch route with
	// this many invoices; each acknowledged item counts as one invoice.
	batch int
}

// worker is one client's private tallies, merged after the run.
type worker struct {
	ok      int64
	errors  map[string]int64
	acked   map[string][]int64
	lat     []time.Duration
	pending []pendingRequest
	sample  map[string]string
}

// runLoad drives the invoice endpoint with spec.clients goroutines until
// spec.duration has passed (or ctx is cancelled), printing a progress line
// to progress every second. Each request carries its own Idempotency-Key.
func runLoad(ctx context.Context, a *apiClient, spec loadSpec, progress io.Writer) *loadResult {
	var (
		hist    histogram
		okCount atomic.Int64
		errCnt  atomic.Int64
		seq     atomic.Int64
	)
	start := time.Now()
	deadline := start.Add(spec.duration)
	paths := make([]string, len(spec.codes))
	for i, c := range spec.codes {
		paths[i] = "/v1/series/" + c + "/invoices"
	}
	workers := make([]*worker, spec.clients)
	var wg sync.WaitGroup
	for w := range workers {
		wk := &worker{errors: map[string]int64{}, acked: map[string][]int64{}, sample: map[string]string{}}
		workers[w] = wk
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w)+1, uint64(start.UnixNano())))
			hdr := map[string]string{"Idempotency-Key": ""}
			for ctx.Err() == nil && time.Now().Before(deadline) {
				i := rng.IntN(len(spec.codes))
				if spec.batch > 0 {
					body := batchBody(spec.keyTag, &seq, spec.batch)
					t0 := time.Now()
					st, resp, err := a.do(ctx, http.MethodPost, paths[i]+"/batch", body, nil)
					d := time.Since(t0)
					if err != nil || st != http.StatusOK {
						if err != nil {
							wk.pending = append(wk.pending, pendingRequest{code: spec.codes[i], batch: body})
						}
						if err != nil && ctx.Err() != nil {
							return
						}
						wk.fail(err, st, resp)
						errCnt.Add(1)
						continue
					}
					n, failed := wk.tallyBatch(spec.codes[i], resp)
					errCnt.Add(int64(failed))
					for range n {
						wk.lat = append(wk.lat, d)
						hist.record(d)
					}
					okCount.Add(int64(n))
					continue
				}
				key := spec.keyTag + "-" + strconv.FormatInt(seq.Add(1), 36)
				hdr["Idempotency-Key"] = key
				t0 := time.Now()
				st, body, err := a.do(ctx, http.MethodPost, paths[i], invoiceBody, hdr)
				d := time.Since(t0)
				switch {
				case err != nil:
					if ctx.Err() != nil {
						wk.pending = append(wk.pending, pendingRequest{code: spec.codes[i], key: key})
						return
					}
					wk.pending = append(wk.pending, pendingRequest{code: spec.codes[i], key: key})
					wk.fail(err, 0, nil)
					errCnt.Add(1)
				case st == http.StatusCreated:
					serial, ok := serialOf(body)
					if !ok {
						wk.errors["201 without serial"]++
						errCnt.Add(1)
						continue
					}
					wk.ok++
					wk.acked[spec.codes[i]] = append(wk.acked[spec.codes[i]], serial)
					wk.lat = append(wk.lat, d)
					hist.record(d)
					okCount.Add(1)
				default:
					wk.fail(nil, st, body)
					errCnt.Add(1)
				}
			}
		})
	}

	done := make(chan struct{})
	var pwg sync.WaitGroup
	pwg.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		prev := hist.snapshot()
		var prevOK int64
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			cur := hist.snapshot()
			p99, _ := snapshotQuantile(cur, prev, 0.99)
			ok := okCount.Load()
			el := time.Since(start)
			fmt.Fprintf(progress, "  %-34s %3.0fs  %9d ok  %8.0f/s (last 1s %8.0f/s)  p99(1s) %7.2fms  errors %d\n",
				spec.label, el.Seconds(), ok, float64(ok)/el.Seconds(), float64(ok-prevOK), ms(p99), errCnt.Load())
			prev, prevOK = cur, ok
		}
	})
	wg.Wait()
	elapsed := time.Since(start)
	close(done)
	pwg.Wait()

	res := &loadResult{Errors: map[string]int64{}, Acked: map[string][]int64{}, Sample: map[string]string{}, Elapsed: elapsed}
	for _, wk := range workers {
		res.OK += wk.ok
		for k, v := range wk.errors {
			res.Errors[k] += v
		}
		for k, v := range wk.acked {
			res.Acked[k] = append(res.Acked[k], v...)
		}
		for k, v := range wk.sample {
			if _, ok := res.Sample[k]; !ok {
				res.Sample[k] = v
			}
		}
		res.Lat = append(res.Lat, wk.lat...)
		res.pending = append(res.pending, wk.pending...)
	}
	return res
}

// fail tallies a failed request: a transport error (err) or an answer
// with status st and body.
func (wk *worker) fail(err error, st int, body []byte) {
	s, sample := "transport", ""
	if err != nil {
		sample = err.Error()
	} else {
		s, sample = strconv.Itoa(st), string(bytes.TrimSpace(body))
	}
	wk.errors[s]++
	if _, ok := wk.sample[s]; !ok {
		wk.sample[s] = sample
	}
}

// batchBody returns a batch of n invoices, each with a fresh key.
func batchBody(tag string, seq *atomic.Int64, n int) []byte {
	item := invoiceBody[1:] // without its "{"
	var b bytes.Buffer
	b.Grow(n * (len(invoiceBody) + 48))
	b.WriteString(`{"invoices":[`)
	for j := range n {
		if j > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"idempotency_key":"`)
		b.WriteString(tag)
		b.WriteByte('-')
		b.WriteString(strconv.FormatInt(seq.Add(1), 36))
		b.WriteString(`",`)
		b.Write(item)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// tallyBatch records the results of a batch answer for series code and
// returns how many items were issued (201) and how many were not.
func (wk *worker) tallyBatch(code string, body []byte) (ok, failed int) {
	for _, r := range batchResults(body) {
		switch {
		case r.status == http.StatusCreated && r.serial > 0:
			wk.acked[code] = append(wk.acked[code], r.serial)
			ok++
		case r.status == http.StatusCreated:
			wk.errors["201 without serial"]++
			failed++
		default:
			wk.fail(nil, r.status, []byte(`(an item of a batch)`))
			failed++
		}
	}
	wk.ok += int64(ok)
	return ok, failed
}

// batchItemResult is one result of a batch answer, as the load generator
// reads it.
type batchItemResult struct {
	status int
	serial int64 // 0 for a refused item
}

// batchResults reads the status and serial of every result of a batch
// answer without decoding the invoices: each result starts with
// {"status":N, and an issued one holds "serial":N before the next
// result (a quote inside an error message is escaped, so neither pattern
// can appear inside one).
func batchResults(body []byte) []batchItemResult {
	const start = `{"status":`
	var out []batchItemResult
	for {
		i := bytes.Index(body, []byte(start))
		if i < 0 {
			return out
		}
		body = body[i+len(start):]
		st, _ := strconv.Atoi(string(digits(body)))
		r := batchItemResult{status: st}
		next := bytes.Index(body, []byte(start))
		this := body
		if next >= 0 {
			this = body[:next]
		}
		if serial, ok := serialOf(this); ok {
			r.serial = serial
		}
		out = append(out, r)
	}
}

// digits returns the leading ASCII digits of b.
func digits(b []byte) []byte {
	j := 0
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		j++
	}
	return b[:j]
}

// resolve replays every request whose outcome was unknown with its own
// Idempotency-Key: an invoice the server did commit is answered again (so it
// counts as acknowledged); one it did not is issued now. Either way the
// acknowledged count is exact afterwards. It returns an error when a replay
// still fails after three tries.
func (r *loadResult) resolve(ctx context.Context, a *apiClient) error {
	for _, p := range r.pending {
		var lastErr error
		for try := 0; try < 3; try++ {
			if p.batch != nil {
				st, body, err := a.do(ctx, http.MethodPost, "/v1/series/"+p.code+"/invoices/batch", p.batch, nil)
				if err == nil && st == http.StatusOK {
					lastErr = nil
					unsettled := 0
					for _, res := range batchResults(body) {
						if res.status == http.StatusCreated && res.serial > 0 {
							r.Acked[p.code] = append(r.Acked[p.code], res.serial)
							r.Resolved++
						} else {
							unsettled++
						}
					}
					if unsettled == 0 {
						break
					}
					// Items refused or in progress: none is issued twice
					// by replaying the whole batch again, but what was
					// acknowledged now must not count twice either.
					lastErr = fmt.Errorf("%d items of a replayed batch were not issued", unsettled)
					break
				}
				if err == nil {
					err = fmt.Errorf("HTTP %d: %.200s", st, bytes.TrimSpace(body))
				}
				lastErr = err
				time.Sleep(200 * time.Millisecond)
				continue
			}
			st, body, err := a.do(ctx, http.MethodPost, "/v1/series/"+p.code+"/invoices", invoiceBody, map[string]string{"Idempotency-Key": p.key})
			if err == nil && st == http.StatusCreated {
				if serial, ok := serialOf(body); ok {
					r.Acked[p.code] = append(r.Acked[p.code], serial)
					r.Resolved++
					lastErr = nil
					break
				}
			}
			if err == nil {
				err = fmt.Errorf("HTTP %d: %s", st, bytes.TrimSpace(body))
			}
			lastErr = err
			time.Sleep(200 * time.Millisecond)
		}
		if lastErr != nil {
			return fmt.Errorf("replaying Idempotency-Key %s on %s: %w", p.key, p.code, lastErr)
		}
	}
	r.pending = nil
	return nil
}

// serialOf extracts "serial":N from an invoice JSON body without decoding
// all of it.
func serialOf(body []byte) (int64, bool) {
	const field = `"serial":`
	i := bytes.Index(body, []byte(field))
	if i < 0 {
		return 0, false
	}
	rest := bytes.TrimLeft(body[i+len(field):], " ")
	j := 0
	for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
		j++
	}
	n, err := strconv.ParseInt(string(rest[:j]), 10, 64)
	return n, err == nil
}

// checkAcked verifies that, per series, the serials answered with 201 are
// exactly 1..N with no repeats. It returns "" when they are, else the first
// problem.
func checkAcked(acked map[string][]int64) string {
	codes := make([]string, 0, len(acked))
	for c := range acked {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	for _, c := range codes {
		s := append([]int64(nil), acked[c]...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		for i, v := range s {
			if v != int64(i)+1 {
				return fmt.Sprintf("series %s: acknowledged serials are not 1..%d: position %d holds %d", c, len(s), i+1, v)
			}
		}
	}
	return ""
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
