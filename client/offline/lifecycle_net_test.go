package offline_test

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/invoiced/invoiced/client"
	"github.com/invoiced/invoiced/client/offline"
	"github.com/invoiced/invoiced/gst"
)

// The lifecycle's network and tills (lifecycle_run_test.go drives them).

// randomDrops is a transport that loses the answer of a request (after the
// server did it) with probability p, drawn from a seeded source: the
// network of the manager and of the online issuers.
type randomDrops struct {
	mu  sync.Mutex
	rng *rand.Rand
	p   float64
}

func (d *randomDrops) drop(*http.Request) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.rng.Float64() < d.p
}

// tillNet is a till's network: each request's fate is drawn from a seeded
// source, by the link's quality, which the run changes between steps. Most
// are answered; some answers are lost after the server acted; some
// requests are lost on the way; some are held in flight (the client gets a
// proxy's 408) and reach the server only when release is called, steps
// later; and the link may go down, losing that request's answer and
// failing every later request until up is called. While the link is down
// the operation in progress gives up after three attempts (its context is
// cancelled), as a till's would.
type tillNet struct {
	mu       sync.Mutex
	rng      *rand.Rand
	base     http.RoundTripper
	bad      bool // a poor link: more of every fault
	down     bool
	failures int                // attempts failed while down, in this operation
	cancel   context.CancelFunc // the operation's
	held     []*http.Request
	heard    bool // an answer reached the till since heard was reset
	wentDown int  // times the link went down
	quiet    bool // every request is answered (calm)
	// ending, when set, is the fate of every end request (DELETE) and
	// every resume, in that order of the pair, whatever the link.
	ending *[2]fate
}

// faults are the thresholds of a request's fate on a link: below down it
// goes down, then held, lost on the way, answer lost.
var faults = map[bool][4]float64{false: {0.01, 0.03, 0.05, 0.12}, true: {0.10, 0.20, 0.25, 0.50}}

type fate int

const (
	delivered fate = iota
	answerLost
	requestLost
	heldInFlight
)

func (n *tillNet) RoundTrip(r *http.Request) (*http.Response, error) {
	n.mu.Lock()
	if n.down {
		n.failures++
		if n.failures >= 3 && n.cancel != nil {
			n.cancel()
		}
		n.mu.Unlock()
		return nil, errors.New("network down")
	}
	var f fate
	th := faults[n.bad]
	if r.Method == http.MethodDelete || strings.HasSuffix(r.URL.Path, "/lease/resume") {
		// A slow end or resume: its answer lost as the link goes down,
		// given up on by a proxy that passed it on, or its answer lost.
		for i := range th {
			th[i] += 0.05 + 0.10*float64(min(i, 1))
		}
	}
	x := n.rng.Float64()
	switch {
	case n.ending != nil && r.Method == http.MethodDelete:
		x, f = 1, n.ending[0]
	case n.ending != nil && strings.HasSuffix(r.URL.Path, "/lease/resume"):
		x, f = 1, n.ending[1]
	}
	switch {
	case x == 1, n.quiet:
	case x < th[0]:
		f, n.down = answerLost, true
		n.wentDown++
	case x < th[1]:
		f = heldInFlight
	case x < th[2]:
		f = requestLost
	case x < th[3]:
		f = answerLost
	}
	n.mu.Unlock()
	switch f {
	case requestLost:
		return nil, errors.New("request lost on the way")
	case heldInFlight:
		kept, timeout, err := holdInFlight(r)
		if err != nil {
			return nil, err
		}
		n.mu.Lock()
		n.held = append(n.held, kept)
		n.mu.Unlock()
		return timeout, nil
	}
	res, err := n.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	if f == answerLost {
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return nil, errors.New("connection reset by peer (answer lost)")
	}
	n.mu.Lock()
	n.heard = true
	n.mu.Unlock()
	return res, nil
}

// op starts an operation of the till: its context, cancelled after 3
// seconds or when the link is down for three attempts, and its end.
func (n *tillNet) op(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	n.mu.Lock()
	n.failures, n.cancel = 0, cancel
	n.mu.Unlock()
	return ctx, func() {
		n.mu.Lock()
		n.cancel = nil
		n.mu.Unlock()
		cancel()
	}
}

// endWith makes every end request take fate del and every resume fate
// res until endWith is called with ok false.
func (n *tillNet) endWith(ok bool, del, res fate) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.ending = nil
	if ok {
		n.ending = &[2]fate{del, res}
	}
}

// calm brings the link back for good: from now on every request is
// answered.
func (n *tillNet) calm() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.down, n.quiet = false, true
}

// goDown takes the link down.
func (n *tillNet) goDown() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.down = true
}

// weather changes the link between steps: down links come up at
// random, and its quality changes now and then.
func (n *tillNet) weather(rng *rand.Rand) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.down && rng.IntN(3) == 0 {
		n.down = false
	}
	if rng.IntN(4) == 0 {
		n.bad = rng.IntN(3) == 0
	}
}

// release delivers every held request to the server, in order, and
// returns how many; their answers go nowhere (the client gave up on them).
func (n *tillNet) release() int {
	n.mu.Lock()
	held := n.held
	n.held = nil
	n.mu.Unlock()
	for _, r := range held {
		if res, err := n.base.RoundTrip(r); err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
	}
	return len(held)
}

// hasHeard reports whether an answer reached the till since the last
// call, and resets it.
func (n *tillNet) hasHeard() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	h := n.heard
	n.heard = false
	return h
}

// lane is one series of a run and the till that leases it: its terminal
// while one is open, the device's state, its clock's skew, and the paper
// trail of its current lease (what an accountant reads).
type lane struct {
	code   string
	s      gst.Series
	net    *tillNet
	cl     *client.Client // the till's client, over net
	term   *offline.Terminal
	path   string
	skew   time.Duration
	lease  client.Lease // the current lease, as taken
	key    string       // the Idempotency-Key it was taken with
	lost   bool         // the device is away, its journal intact: it may turn up
	broken bool         // its journal was damaged: it never turns up
	// The paper trail of the current lease: the last serial printed per
	// year, every receipt and cancellation receipt.
	paper    map[gst.FY]int64
	receipts []offline.Receipt
	cancels  []offline.CancelReceipt
	lastAt   time.Time // the till's last record's time, or the lease's floor
	later    gst.FY    // the lease's later year, when it held serials already (0: not)
	// unheard: the accountant settled the lease while the till could
	// still sell, and no answer has reached the till since: what it prints
	// meanwhile, online issuance may print too (the settlement said the
	// device was lost); the till stops at its first answer.
	unheard bool
}

// holds reports whether the lane's current lease was taken and its
// device still numbers or may turn up.
func (ln *lane) device() bool { return ln.term != nil || (ln.lost && !ln.broken) }

// reserved reports whether fy is a year the lane's current lease
// reserves.
func (ln *lane) reserved(fy gst.FY) bool {
	for _, p := range ln.lease.Years {
		if p.FY == fy.String() {
			return true
		}
	}
	return false
}

// startFY returns the first year the lane's current lease reserves.
func (ln *lane) startFY() gst.FY {
	fy, _ := gst.ParseFY(ln.lease.Next.FY)
	return fy
}
