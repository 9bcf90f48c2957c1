package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// invoiced runs the invoiced binary's admin subcommands.
type invoiced struct {
	bin   string
	dbURL string
}

// env returns the process environment with DATABASE_URL set to dbURL.
func envWith(dbURL string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DATABASE_URL=") {
			out = append(out, kv)
		}
	}
	return append(out, "DATABASE_URL="+dbURL)
}

// run runs `bin args…` and returns its stdout; the error carries stderr.
func (iv invoiced) run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, iv.bin, args...)
	cmd.Env = envWith(iv.dbURL)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %v: %s", iv.bin, strings.Join(args, " "), err, lastLines(stderr.Bytes(), 3))
	}
	return stdout.String(), nil
}

// hasClassicMode reports whether `bin serve -h` lists a --batching flag
// that is not deprecated: a binary older than the Committer's single
// strategy, which can issue one transaction per invoice.
func (iv invoiced) hasClassicMode(ctx context.Context) bool {
	cmd := exec.CommandContext(ctx, iv.bin, "serve", "-h")
	out, _ := cmd.CombinedOutput()
	i := bytes.Index(out, []byte("-batching"))
	if i < 0 {
		return false
	}
	line, _, _ := bytes.Cut(out[i:], []byte("\n  -"))
	return !bytes.Contains(line, []byte("deprecated"))
}

// server is a running `invoiced serve` the harness started.
type server struct {
	cmd  *exec.Cmd
	url  string
	done chan error // receives cmd.Wait's result
	log  *os.File
}

// startServer runs `bin serve --addr 127.0.0.1:0 flags…` with DATABASE_URL
// = iv.dbURL, its stderr appended to logPath, and waits (at most 60 s) for
// the "listening on http://ADDR" line. It fails when the process exits or
// does not print the line in time.
func (iv invoiced) startServer(ctx context.Context, flags []string, logPath string) (*server, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	// No background chain verification: it reads every invoice of the
	// database a minute after start, which would land inside a measurement.
	// Later flags (--serve-flags) override.
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--verify-interval", "0"}, flags...)
	fmt.Fprintf(logf, "### %s %s\n", iv.bin, strings.Join(args, " "))
	cmd := exec.Command(iv.bin, args...)
	cmd.Env = envWith(iv.dbURL)
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	s := &server{cmd: cmd, done: make(chan error, 1), log: logf}
	urlc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logf, line)
			if _, u, ok := strings.Cut(line, "listening on "); ok {
				select {
				case urlc <- strings.TrimSpace(u):
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout) // drained so the server never blocks on a full pipe
		s.done <- cmd.Wait()
	}()
	select {
	case u := <-urlc:
		s.url = u
		return s, nil
	case err := <-s.done:
		logf.Close()
		return nil, fmt.Errorf("invoiced serve exited before listening: %v (log: %s)", err, logPath)
	case <-time.After(60 * time.Second):
	case <-ctx.Done():
	}
	_ = s.stop() // the missing address is the error to report
	return nil, fmt.Errorf("invoiced serve did not print its address (log: %s)", logPath)
}

// pid returns the server's process id, or 0 for none (a server the
// harness did not start).
func (s *server) pid() int {
	if s == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// stop sends SIGTERM and waits up to 60 s for a clean exit, then kills the
// process. It returns the server's exit error, if any.
func (s *server) stop() error {
	defer s.log.Close()
	// Signal and Kill fail only when the process has exited already, and
	// then s.done holds its exit status.
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		return err
	case <-time.After(60 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done //nolint:errcheck // its exit status after a kill says only "killed"
		return errors.New("invoiced serve did not exit within 60s of SIGTERM; killed")
	}
}
