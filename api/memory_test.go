package api

import (
	"bytes"
	"io"
	"net/http"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"
)

// heapPeak samples the bytes of live and not yet collected heap objects
// every millisecond until stop is closed, and returns the largest sample.
func heapPeak(stop <-chan struct{}) uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak uint64
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		metrics.Read(s)
		peak = max(peak, s[0].Value.Uint64())
		select {
		case <-stop:
			return peak
		case <-t.C:
		}
	}
}

// watchHeap collects garbage, then samples the heap (heapPeak) until the
// function it returns is called; it returns the heap in use before and
// that function, which returns the peak.
func watchHeap() (before uint64, stop func() (peak uint64)) {
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	done := make(chan struct{})
	peakc := make(chan uint64)
	go func() { peakc <- heapPeak(done) }()
	return base.HeapAlloc, func() uint64 {
		close(done)
		return <-peakc
	}
}

// postAtOnce sends body to path (under e.url) from clients goroutines at
// once, with the issue key and hdr, and returns each answer's status, the
// heap before (after a GC) and its peak while they ran (heapPeak).
func postAtOnce(t *testing.T, e *env, path string, body []byte, clients int, hdr map[string]string) (statuses []int, before, peak uint64) {
	t.Helper()
	before, stop := watchHeap()
	var wg sync.WaitGroup
	statuses = make([]int, clients)
	for i := range clients {
		wg.Go(func() {
			req, _ := http.NewRequest("POST", e.url+path, bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+e.issue)
			req.Header.Set("Content-Type", "application/json")
			for k, v := range hdr {
				req.Header.Set(k, v)
			}
			res, err := e.client.Do(req)
			if err != nil {
				t.Errorf("request %d: %v", i, err)
				return
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			statuses[i] = res.StatusCode
		})
	}
	wg.Wait()
	return statuses, before, stop()
}

// TestIssueBodyMemoryBounded sends 64 issue requests at once, each a body
// of empty items just under the issue body limit, with the lowest-trust
// key. Each must be refused with a 4xx, and the server's heap (this
// process: the server runs in it) must stay within a bound proportional
// to the bodies themselves, not to what decoding them whole would cost.
func TestIssueBodyMemoryBounded(t *testing.T) {
	// Not parallel: the heap of other tests would blur the measurement.
	e := setup(t)
	const size = 500 << 10
	if size > issueBodyMax {
		t.Fatalf("the bodies must be under the issue body limit, %d bytes", issueBodyMax)
	}
	var b bytes.Buffer
	b.WriteString(`{"items":[{}`)
	for b.Len() < size-16 {
		b.WriteString(`,{}`)
	}
	b.WriteString(`]}`)
	body := b.Bytes()

	const clients = 64
	statuses, before, peak := postAtOnce(t, e, "/v1/series/CH1/invoices", body, clients, nil)
	for i, s := range statuses {
		if s < 400 || s >= 500 {
			t.Errorf("request %d: status %d, want 4xx", i, s)
		}
	}
	grew := int64(peak) - int64(before)
	t.Logf("heap: %d MiB before, peak %d MiB during %d requests of %d KiB", before>>20, peak>>20, clients, len(body)>>10)
	// The bodies alone are 64 × 500 KiB = 31 MiB if all are held at once.
	// Decoded whole, the same requests took 2.4 GiB.
	const bound = 64 << 20
	if grew > bound {
		t.Fatalf("the heap grew by %d MiB under %d requests of %d KiB, more than %d MiB", grew>>20, clients, len(body)>>10, bound>>20)
	}
}
