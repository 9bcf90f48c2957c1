// Package servetest builds the invoiced binary and runs `invoiced serve`
// processes for tests that need the real thing: killed with SIGKILL,
// restarted on the same address, their stderr kept for failure messages.
package servetest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Binary is a built invoiced binary.
type Binary struct {
	Path string
	dir  string
}

// Build builds ./cmd/invoiced of the module the working directory is in,
// into a temporary directory (for TestMain: call Close when m.Run returns).
// It fails when go is missing or the build fails, with the compiler's
// output.
func Build() (*Binary, error) {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || len(bytes.TrimSpace(gomod)) == 0 {
		return nil, fmt.Errorf("go env GOMOD: %v", err)
	}
	root := filepath.Dir(string(bytes.TrimSpace(gomod)))
	dir, err := os.MkdirTemp("", "invoiced-bin-")
	if err != nil {
		return nil, err
	}
	b := &Binary{Path: filepath.Join(dir, "invoiced"), dir: dir}
	cmd := exec.Command("go", "build", "-o", b.Path, "./cmd/invoiced")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("go build ./cmd/invoiced: %v\n%s", err, out)
	}
	return b, nil
}

// Close removes the binary.
func (b *Binary) Close() { os.RemoveAll(b.dir) }

// Main is a package's TestMain for tests of the real binary: it builds the
// binary into *bin, runs the tests and removes the binary, then exits with
// the tests' status (1, naming pkg, when the build fails).
func Main(m *testing.M, pkg string, bin **Binary) {
	code := func() int {
		var err error
		*bin, err = Build()
		if err != nil {
			fmt.Fprintln(os.Stderr, pkg+":", err)
			return 1
		}
		defer (*bin).Close()
		return m.Run()
	}()
	os.Exit(code)
}

// CLI runs the binary with DATABASE_URL=dbURL and returns its stdout; the
// test fails if it exits non-zero or takes over a minute.
func (b *Binary) CLI(t testing.TB, dbURL string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.Path, args...)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("invoiced %s: %v\nstderr: %s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String()
}

// Server is one `invoiced serve` process started by a test.
type Server struct {
	Addr  string        // host:port it listens on
	Cmd   *exec.Cmd     // the process
	Done  chan struct{} // closed when it has exited
	Err   error         // Wait's result, valid after Done
	Flags []string
	DBURL string

	bin *Binary
	mu  sync.Mutex
	log bytes.Buffer
}

var listenRE = regexp.MustCompile(`^listening on http://(\S+)$`)

// Start starts `invoiced serve` on addr (127.0.0.1:0 for a free port) and
// waits until it prints its address; the test fails if it exits first or
// does not listen within 30 s. The process is killed when the test ends if
// it is still running.
func (b *Binary) Start(t testing.TB, dbURL, addr string, flags ...string) *Server {
	t.Helper()
	// A few warm connections, not serve's default of --max-conns (32):
	// tests run their servers in parallel, and 32 backends each, forked at
	// once, are a burst that two cores feel in other packages' timing.
	// Later flags override.
	args := append([]string{"serve", "--addr", addr, "--log-format", "text", "--min-conns", "4"}, flags...)
	cmd := exec.Command(b.Path, args...)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Cmd: cmd, Done: make(chan struct{}), Flags: flags, DBURL: dbURL, bin: b}
	cmd.Stderr = &lockedWriter{mu: &s.mu, w: &s.log}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start serve: %v", err)
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		first := true
		for sc.Scan() {
			if m := listenRE.FindStringSubmatch(sc.Text()); m != nil && first {
				first = false
				lines <- m[1]
			}
		}
	}()
	go func() {
		s.Err = cmd.Wait()
		close(s.Done)
	}()
	t.Cleanup(func() { s.Kill() })
	select {
	case s.Addr = <-lines:
	case <-s.Done:
		t.Fatalf("serve exited before listening: %v\nstderr: %s", s.Err, s.Stderr())
	case <-time.After(30 * time.Second):
		s.Kill()
		t.Fatalf("serve did not listen within 30s\nstderr: %s", s.Stderr())
	}
	return s
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Stderr returns the last 8000 bytes the process wrote to stderr.
func (s *Server) Stderr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.log.String()
	if len(out) > 8000 {
		out = "…" + out[len(out)-8000:]
	}
	return out
}

// Kill sends SIGKILL to the process (only this one) and waits for it to
// exit, at most 10 s.
func (s *Server) Kill() {
	select {
	case <-s.Done:
		return
	default:
	}
	_ = s.Cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-s.Done:
	case <-time.After(10 * time.Second):
	}
}

// Restart starts a new process with the same flags on the same address
// and database (retrying for a second while the kernel frees the port);
// the test fails if it cannot.
func (s *Server) Restart(t testing.TB) *Server {
	t.Helper()
	for range 5 {
		ns, err := s.bin.tryStart(t, s.DBURL, s.Addr, s.Flags...)
		if err == nil {
			return ns
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("could not restart serve on %s", s.Addr)
	return nil
}

// InternalErrors returns the log's "internal error" lines (at most ten),
// to explain a 500 in a failure message.
func (s *Server) InternalErrors() string {
	var out []string
	for _, line := range strings.Split(s.Stderr(), "\n") {
		if strings.Contains(line, "internal error") && len(out) < 10 {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// tryStart is Start that reports a failure to listen instead of failing
// the test.
func (b *Binary) tryStart(t testing.TB, dbURL, addr string, flags ...string) (s *Server, err error) {
	ft := &fatalCatcher{TB: t}
	func() {
		defer func() {
			if v := recover(); v != nil {
				if _, ok := v.(fatalPanic); !ok {
					panic(v)
				}
				err = fmt.Errorf("%s", ft.msg)
			}
		}()
		s = b.Start(ft, dbURL, addr, flags...)
	}()
	return s, err
}

type fatalPanic struct{}

// fatalCatcher turns Fatalf into a panic that tryStart recovers.
type fatalCatcher struct {
	testing.TB
	msg string
}

func (f *fatalCatcher) Fatalf(format string, a ...any) {
	f.msg = fmt.Sprintf(format, a...)
	panic(fatalPanic{})
}
func (f *fatalCatcher) Fatal(a ...any) { f.msg = fmt.Sprint(a...); panic(fatalPanic{}) }
func (f *fatalCatcher) Helper()        {}
