package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/invoiced/invoiced/internal/testwait"
)

// TestMaxConnections holds --max-connections idle keep-alive connections
// open: one more client waits (its request is not answered) instead of the
// process accepting without bound, and is served as soon as one closes.
func TestMaxConnections(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx, cancel := context.WithCancel(t.Context())
	var srvOut, srvErr testwait.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--max-conns", "8", "--min-conns", "0", "--max-connections", "3"}, f.getenv, &srvOut, &srvErr)
	}()
	t.Cleanup(func() { cancel(); <-done })
	addr := strings.TrimPrefix(waitListening(t, &srvOut, &srvErr, done, 15*time.Second), "http://")

	// healthz sends one request on c and reads the answer within wait.
	send := func(c net.Conn) {
		t.Helper()
		if _, err := fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
	}
	receive := func(c net.Conn, br *bufio.Reader, wait time.Duration) error {
		c.SetReadDeadline(time.Now().Add(wait))
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			return err
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", res.StatusCode)
		}
		return nil
	}
	var held []net.Conn
	for i := range 3 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		send(c)
		if err := receive(c, bufio.NewReader(c), 5*time.Second); err != nil {
			t.Fatalf("connection %d of 3: %v", i+1, err)
		}
		held = append(held, c)
	}
	extra, err := net.Dial("tcp", addr) // the kernel's listen queue takes it
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	send(extra)
	br := bufio.NewReader(extra)
	var ne net.Error
	if err := receive(extra, br, time.Second); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("a fourth connection with --max-connections 3 was served (%v); want it to wait", err)
	}
	held[0].Close()
	if err := receive(extra, br, 5*time.Second); err != nil {
		t.Fatalf("the fourth connection after one of three closed: %v", err)
	}
}

// TestConnectionLimitDefault: without --max-connections the cap is the
// open-file limit less the pool, the export spools and the reserve.
func TestConnectionLimitDefault(t *testing.T) {
	t.Parallel()
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	l := limits{maxExports: 4}
	if got, want := l.connectionLimit(32), max(16, int(rl.Cur)-32-4-fdReserve); got != want {
		t.Fatalf("connection limit %d with an open-file limit of %d, want %d", got, rl.Cur, want)
	}
	if got := (limits{maxConnections: 7}).connectionLimit(32); got != 7 {
		t.Fatalf("--max-connections 7 gives %d", got)
	}
}
