package bench

import (
	"math"
	"math/bits"
	"slices"
	"sync/atomic"
	"time"
)

// Latency summarises a set of request latencies. Percentiles use the
// nearest-rank method on the exact samples.
type Latency struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean_ms"`
	P50   float64 `json:"p50_ms"`
	P99   float64 `json:"p99_ms"`
	P999  float64 `json:"p999_ms"`
	Max   float64 `json:"max_ms"`
}

// summarize sorts samples in place and returns their summary; all zero for
// no samples.
func summarize(samples []time.Duration) Latency {
	if len(samples) == 0 {
		return Latency{}
	}
	slices.Sort(samples)
	var sum time.Duration
	for _, d := range samples {
		sum += d
	}
	return Latency{
		Count: int64(len(samples)),
		Mean:  ms(sum / time.Duration(len(samples))),
		P50:   ms(percentile(samples, 0.50)),
		P99:   ms(percentile(samples, 0.99)),
		P999:  ms(percentile(samples, 0.999)),
		Max:   ms(samples[len(samples)-1]),
	}
}

// percentile returns the q-quantile (0 < q ≤ 1) of sorted by the
// nearest-rank method: the smallest sample with at least q of all samples
// at or below it. It returns 0 for no samples.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(q * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// ms converts d to milliseconds, rounded to microseconds.
func ms(d time.Duration) float64 {
	return math.Round(float64(d)/float64(time.Microsecond)) / 1000
}

// histogram is a lock-free log-linear latency histogram (HDR-style, about
// 3% precision) that many goroutines record into; the progress line reads
// it. Buckets: microseconds below 32 exactly, then 32 buckets per power of
// two.
type histogram struct {
	counts [histBuckets]atomic.Uint64
}

const (
	histSub     = 32 // buckets per power of two
	histBuckets = histSub + 40*histSub
)

// bucketOf returns the bucket index of d.
func bucketOf(d time.Duration) int {
	v := uint64(max(d, 0) / time.Microsecond)
	if v < histSub {
		return int(v)
	}
	shift := bits.Len64(v) - 6 // keep the top 6 bits: 32..63
	top := v >> shift
	return min(histSub+shift*histSub+int(top-histSub), histBuckets-1)
}

// bucketValue returns the lower bound of bucket i.
func bucketValue(i int) time.Duration {
	if i < histSub {
		return time.Duration(i) * time.Microsecond
	}
	shift := (i - histSub) / histSub
	top := uint64(histSub + (i-histSub)%histSub)
	return time.Duration(top<<shift) * time.Microsecond
}

// record adds one sample.
func (h *histogram) record(d time.Duration) { h.counts[bucketOf(d)].Add(1) }

// snapshot copies the counts.
func (h *histogram) snapshot() []uint64 {
	out := make([]uint64, histBuckets)
	for i := range h.counts {
		out[i] = h.counts[i].Load()
	}
	return out
}

// snapshotQuantile returns the q-quantile of the samples counted in
// now minus before (two snapshots), and how many there were.
func snapshotQuantile(now, before []uint64, q float64) (time.Duration, uint64) {
	var total uint64
	for i := range now {
		total += now[i] - before[i]
	}
	if total == 0 {
		return 0, 0
	}
	want := uint64(math.Ceil(q * float64(total)))
	var seen uint64
	for i := range now {
		seen += now[i] - before[i]
		if seen >= want {
			return bucketValue(i), total
		}
	}
	return bucketValue(len(now) - 1), total
}
