package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

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
	via       *apiClient // the series' seller's client; nil: the run's
}

// loadSpec says what to send.
type loadSpec struct {
	label    string
	clients  int
	duration time.Duration
	codes    []string // series to spread over, uniformly at random
	// via, when not nil, holds the client of each series' seller (its API
	// key), parallel to codes.
	via    []*apiClient
	keyTag string // Idempotency-Key prefix, unique per run
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
				a := a
				if spec.via != nil {
					a = spec.via[i]
				}
				if spec.batch > 0 {
					body := batchBody(spec.keyTag, &seq, spec.batch)
					t0 := time.Now()
					st, resp, err := a.do(ctx, http.MethodPost, paths[i]+"/batch", body, nil)
					d := time.Since(t0)
					if err != nil || st != http.StatusOK {
						if err != nil {
							wk.pending = append(wk.pending, pendingRequest{code: spec.codes[i], batch: body, via: a})
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
						wk.pending = append(wk.pending, pendingRequest{code: spec.codes[i], key: key, via: a})
						return
					}
					wk.pending = append(wk.pending, pendingRequest{code: spec.codes[i], key: key, via: a})
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
