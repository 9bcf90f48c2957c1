// Package latencyproxy is a TCP proxy that delays every byte by a fixed
// one-way latency in each direction, for benchmarking a client and a server
// (here: invoiced or pgbench, and PostgreSQL) as if they were some
// milliseconds apart. It also has fault hooks for tests: CutAll drops every
// live connection, Pause and Resume stop and restart forwarding.
//
// The delay is pipelined, not serialised: each direction of a connection has
// a reader that timestamps every chunk it reads and a writer that delivers
// the chunk at read time + delay, in order. A stream of many small messages
// therefore keeps its throughput and only gains latency, as on a real link.
package latencyproxy

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// chunkSize is the largest chunk read at once from one side.
const chunkSize = 32 << 10

// queueLen is how many chunks may be in flight per direction before the
// reader stops reading (and TCP flow control pushes back on the sender).
const queueLen = 256

// Proxy forwards TCP connections accepted on its listener to a target
// address, adding a one-way delay in each direction. Make one with New.
// Its methods are safe for concurrent use.
type Proxy struct {
	ln     net.Listener
	target string
	delay  atomic.Int64 // one-way delay in nanoseconds

	mu      sync.Mutex
	conns   map[*link]struct{}
	paused  bool
	resumed chan struct{} // closed by Resume; replaced by Pause
	closed  bool

	wg sync.WaitGroup
}

// link is one proxied connection: the accepted client side and the dialled
// target side.
type link struct {
	client, server net.Conn
	done           chan struct{} // closed by close
	once           sync.Once
}

// close closes both sides of l and l.done; it is safe to call more than
// once.
func (l *link) close() {
	l.once.Do(func() {
		close(l.done)
		l.client.Close()
		l.server.Close()
	})
}

// New listens on listenAddr (e.g. "127.0.0.1:0") and returns a running Proxy
// that forwards each accepted connection to target, delaying each direction
// by oneWay (so the round trip grows by 2×oneWay). It fails when oneWay is
// negative or listenAddr cannot be bound. The target is dialled per
// connection; when that fails, the client connection is closed.
func New(listenAddr, target string, oneWay time.Duration) (*Proxy, error) {
	if oneWay < 0 {
		return nil, errors.New("latencyproxy: negative delay")
	}
	ln, err := net.Listen("tcp", listenAddr)
	if err != nil {
		return nil, err
	}
	p := &Proxy{
		ln:      ln,
		target:  target,
		conns:   make(map[*link]struct{}),
		resumed: make(chan struct{}),
	}
	close(p.resumed)
	p.delay.Store(int64(oneWay))
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr returns the address the proxy listens on, as "host:port".
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Delay returns the current one-way delay.
func (p *Proxy) Delay() time.Duration { return time.Duration(p.delay.Load()) }

// SetDelay changes the one-way delay. Chunks read from then on are delivered
// at their read time plus d; chunks already queued keep their delivery time,
// except that a later chunk is never delivered before an earlier one.
func (p *Proxy) SetDelay(d time.Duration) {
	if d < 0 {
		d = 0
	}
	p.delay.Store(int64(d))
}

// CutAll closes every live connection, both sides, as a network failure
// would. New connections are still accepted. It returns how many
// connections it closed.
func (p *Proxy) CutAll() int {
	p.mu.Lock()
	links := make([]*link, 0, len(p.conns))
	for l := range p.conns {
		links = append(links, l)
	}
	p.mu.Unlock()
	for _, l := range links {
		l.close()
	}
	return len(links)
}

// Pause stops forwarding in both directions on every connection, present
// and future, until Resume: bytes are still read (until the queue fills)
// but not delivered. Pausing twice is the same as once.
func (p *Proxy) Pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.paused {
		p.paused = true
		p.resumed = make(chan struct{})
	}
}

// Resume restarts forwarding after Pause. Queued chunks whose delivery time
// has passed are delivered at once.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused {
		p.paused = false
		close(p.resumed)
	}
}

// waitResumed blocks while the proxy is paused. It returns false when the
// link was closed meanwhile (done is closed).
func (p *Proxy) waitResumed(done <-chan struct{}) bool {
	p.mu.Lock()
	ch := p.resumed
	p.mu.Unlock()
	select {
	case <-ch:
		return true
	case <-done:
		return false
	}
}

// Close stops accepting, closes every live connection and waits until all
// of the proxy's goroutines have finished. It returns the listener's close
// error, if any.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	err := p.ln.Close()
	p.CutAll()
	p.Resume() // release paused writers
	p.wg.Wait()
	return err
}

// acceptLoop accepts connections until the listener is closed.
func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		p.wg.Add(1)
		go p.handle(c)
	}
}

// handle dials the target for the accepted client connection c and runs the
// two directions until both have finished.
func (p *Proxy) handle(c net.Conn) {
	defer p.wg.Done()
	s, err := net.DialTimeout("tcp", p.target, 10*time.Second)
	if err != nil {
		c.Close()
		return
	}
	setNoDelay(c)
	setNoDelay(s)
	l := &link{client: c, server: s, done: make(chan struct{})}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		l.close()
		return
	}
	p.conns[l] = struct{}{}
	p.mu.Unlock()

	var dirs sync.WaitGroup
	var halves atomic.Int32
	finish := func(clean bool) {
		// A clean EOF in one direction half-closes; the link is torn down
		// when both directions are finished or either failed.
		if !clean || halves.Add(1) == 2 {
			l.close()
		}
	}
	dirs.Add(2)
	go func() { defer dirs.Done(); finish(p.pipe(c, s, l.done)) }()
	go func() { defer dirs.Done(); finish(p.pipe(s, c, l.done)) }()
	dirs.Wait()
	l.close()
	p.mu.Lock()
	delete(p.conns, l)
	p.mu.Unlock()
}

// chunk is one read from a connection and the time it is due at the other
// side.
type chunk struct {
	data []byte
	due  time.Time
}

// pipe copies src to dst, delaying each chunk by the proxy's one-way delay.
// A reader goroutine timestamps chunks into a queue; this goroutine writes
// them when due, in order. It returns true when src ended cleanly (EOF) and
// everything read was delivered (dst is then half-closed), false on any
// error.
func (p *Proxy) pipe(src, dst net.Conn, done <-chan struct{}) bool {
	q := make(chan chunk, queueLen)
	readErr := make(chan error, 1)
	go func() {
		defer close(q)
		for {
			buf := make([]byte, chunkSize)
			n, err := src.Read(buf)
			if n > 0 {
				q <- chunk{data: buf[:n], due: time.Now().Add(p.Delay())}
			}
			if err != nil {
				readErr <- err
				return
			}
		}
	}()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	ok := true
	for c := range q {
		if !ok {
			continue // drain so the reader can finish
		}
		if wait := time.Until(c.due); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-done:
				ok = false
				continue
			}
		}
		if !p.waitResumed(done) {
			ok = false
			continue
		}
		if _, err := dst.Write(c.data); err != nil {
			ok = false
			// Unblock the reader: closing src makes its Read fail.
			src.Close()
		}
	}
	err := <-readErr
	if !ok || !errors.Is(err, io.EOF) {
		return false
	}
	if tc, isTCP := dst.(*net.TCPConn); isTCP {
		_ = tc.CloseWrite() // fails only when the peer has gone, which ends the copy anyway
	}
	return true
}

// setNoDelay turns off Nagle's algorithm on c when it is a TCP connection,
// so that small messages are not held back on top of the injected delay.
func setNoDelay(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true) // a latency tweak; the connection works without it
	}
}
