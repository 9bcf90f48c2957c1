package faults

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// cluster is a throw-away PostgreSQL cluster made by a test, like
// scripts/pg makes one, but with fsync on: a crash must lose nothing that
// was committed. As root it runs as the postgres OS user, under /tmp.
type cluster struct {
	t      testing.TB
	dir    string // holds data/ and server.log
	port   int
	bindir string
}

// pgBindir finds initdb and pg_ctl like scripts/pg does.
func pgBindir(t testing.TB) string {
	t.Helper()
	ok := func(d string) bool {
		for _, b := range []string{"initdb", "pg_ctl", "postgres", "pg_basebackup"} {
			if _, err := os.Stat(filepath.Join(d, b)); err != nil {
				return false
			}
		}
		return true
	}
	if d := os.Getenv("PG_BINDIR"); d != "" && ok(d) {
		return d
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil && ok(strings.TrimSpace(string(out))) {
		return strings.TrimSpace(string(out))
	}
	ds, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(ds, func(i, j int) bool {
		a, _ := strconv.Atoi(filepath.Base(filepath.Dir(ds[i])))
		b, _ := strconv.Atoi(filepath.Base(filepath.Dir(ds[j])))
		return a < b
	})
	for i := len(ds) - 1; i >= 0; i-- {
		if ok(ds[i]) {
			return ds[i]
		}
	}
	t.Fatalf("PostgreSQL binaries (initdb, pg_ctl, postgres, pg_basebackup) not found: set PG_BINDIR or install postgresql (make test's scripts/pg does)")
	return ""
}

func isRoot() bool { return os.Geteuid() == 0 }

// asPG runs a PostgreSQL tool as the cluster owner (postgres when we are
// root), from /, and returns its combined output.
func asPG(timeout time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var cmd *exec.Cmd
	if isRoot() {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", "postgres", "--", name}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, name, args...)
	}
	cmd.Dir = "/"
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// freePort returns a loopback port nobody listens on now, from the range
// scripts/pg uses (clear of 5432 and of the ephemeral range).
func freePort(t testing.TB) int {
	t.Helper()
	for i := 0; i < 200; i++ {
		p := 20000 + int(time.Now().UnixNano()/7%12000+int64(i*97))%12000
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		ln.Close()
		return p
	}
	t.Fatal("no free port")
	return 0
}

// newClusterDir makes an empty folder under /tmp the cluster owner may use.
func newClusterDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "invoiced-faults-pg-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if isRoot() {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("as root the cluster runs as the postgres OS user, which does not exist (scripts/pg creates it): %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// writeConf writes the cluster's settings (included from postgresql.conf).
func (c *cluster) writeConf(extra ...string) {
	c.t.Helper()
	lines := append([]string{
		"listen_addresses = '127.0.0.1'",
		"unix_socket_directories = ''",
		fmt.Sprintf("port = %d", c.port),
		"max_connections = 100",
		"shared_buffers = 32MB",
		"fsync = on",
		"synchronous_commit = on",
		"full_page_writes = on",
	}, extra...)
	conf := filepath.Join(c.dir, "data", "faults.conf")
	if err := os.WriteFile(conf, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		c.t.Fatal(err)
	}
	if isRoot() {
		exec.Command("chown", "postgres", conf).Run()
	}
}

// newCluster initdb's and starts a cluster on a free loopback port. It is
// stopped (immediate) and removed when the test ends. extra lines are added
// to its configuration.
func newCluster(t testing.TB, extra ...string) *cluster {
	t.Helper()
	c := &cluster{t: t, dir: newClusterDir(t), bindir: pgBindir(t)}
	t.Cleanup(c.destroy)
	if out, err := asPG(2*time.Minute, filepath.Join(c.bindir, "initdb"), "-D", filepath.Join(c.dir, "data"),
		"--auth=trust", "-U", "postgres", "--encoding=UTF8", "--no-locale", "--no-instructions", "--no-sync"); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	pgconf := filepath.Join(c.dir, "data", "postgresql.conf")
	f, err := os.OpenFile(pgconf, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(f, "include_if_exists = 'faults.conf'")
	f.Close()
	c.port = freePort(t)
	c.writeConf(extra...)
	c.start()
	return c
}

// url is the cluster's URL for database db.
func (c *cluster) url(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, db)
}

func (c *cluster) addr() string { return fmt.Sprintf("127.0.0.1:%d", c.port) }

// start starts the cluster and waits until it accepts connections.
func (c *cluster) start() {
	c.t.Helper()
	logf := filepath.Join(c.dir, "server.log")
	if out, err := asPG(2*time.Minute, filepath.Join(c.bindir, "pg_ctl"), "start", "-D", filepath.Join(c.dir, "data"),
		"-l", logf, "-w", "-t", "90", "-s"); err != nil {
		log, _ := os.ReadFile(logf)
		c.t.Fatalf("pg_ctl start: %v\n%s\nserver log:\n%s", err, out, log)
	}
	c.waitReady(60 * time.Second)
}

// waitReady waits until a session can be opened.
func (c *cluster) waitReady(timeout time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, c.url("postgres"))
		if err == nil {
			conn.Close(ctx)
			cancel()
			return
		}
		cancel()
		if time.Now().After(deadline) {
			c.t.Fatalf("cluster on port %d not ready after %s: %v", c.port, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop stops the cluster in mode (fast or immediate).
func (c *cluster) stop(mode string) {
	c.t.Helper()
	if out, err := asPG(90*time.Second, filepath.Join(c.bindir, "pg_ctl"), "stop", "-D", filepath.Join(c.dir, "data"),
		"-m", mode, "-w", "-t", "60", "-s"); err != nil {
		c.t.Fatalf("pg_ctl stop -m %s: %v\n%s", mode, err, out)
	}
}

// postmasterPID reads the postmaster's pid from postmaster.pid, 0 if none.
func (c *cluster) postmasterPID() int {
	b, err := os.ReadFile(filepath.Join(c.dir, "data", "postmaster.pid"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	return pid
}

// kill9 SIGKILLs this cluster's postmaster and every one of its children,
// as a machine that loses power would stop them. Only this cluster's
// processes are touched (children are found by parent pid).
func (c *cluster) kill9() {
	c.t.Helper()
	pm := c.postmasterPID()
	if pm <= 0 {
		c.t.Fatal("kill9: no postmaster.pid")
	}
	children := childrenOf(pm)
	_ = syscall.Kill(pm, syscall.SIGKILL)
	for _, p := range children {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	// Wait until the port is closed.
	for i := 0; i < 100; i++ {
		conn, err := net.DialTimeout("tcp", c.addr(), 200*time.Millisecond)
		if err != nil {
			return
		}
		conn.Close()
		time.Sleep(50 * time.Millisecond)
	}
}

// childrenOf lists the pids whose parent is pid.
func childrenOf(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces: split after ')'.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, p)
		}
	}
	return out
}

// destroy stops the cluster if it runs and removes its folder.
func (c *cluster) destroy() {
	if c.postmasterPID() > 0 {
		asPG(60*time.Second, filepath.Join(c.bindir, "pg_ctl"), "stop", "-D", filepath.Join(c.dir, "data"), "-m", "immediate", "-w", "-t", "30", "-s")
		if pm := c.postmasterPID(); pm > 0 && syscall.Kill(pm, 0) == nil {
			// Still there (pg_ctl failed): it is ours, end it.
			syscall.Kill(pm, syscall.SIGQUIT)
		}
	}
	os.RemoveAll(c.dir)
}

// newStandby makes a streaming replica of primary with pg_basebackup -R on
// a free port and starts it.
func newStandby(t testing.TB, primary *cluster, extra ...string) *cluster {
	t.Helper()
	c := &cluster{t: t, dir: newClusterDir(t), bindir: primary.bindir}
	t.Cleanup(c.destroy)
	if out, err := asPG(2*time.Minute, filepath.Join(c.bindir, "pg_basebackup"), "-h", "127.0.0.1", "-p", strconv.Itoa(primary.port),
		"-U", "postgres", "-D", filepath.Join(c.dir, "data"), "-R", "-X", "stream", "-c", "fast",
		"-d", fmt.Sprintf("host=127.0.0.1 port=%d user=postgres application_name=standby1", primary.port)); err != nil {
		t.Fatalf("pg_basebackup: %v\n%s", err, out)
	}
	c.port = freePort(t)
	c.writeConf(extra...)
	c.start()
	return c
}

// promote promotes a standby and waits until it accepts writes.
func (c *cluster) promote() {
	c.t.Helper()
	if out, err := asPG(90*time.Second, filepath.Join(c.bindir, "pg_ctl"), "promote", "-D", filepath.Join(c.dir, "data"), "-w", "-t", "60", "-s"); err != nil {
		c.t.Fatalf("pg_ctl promote: %v\n%s", err, out)
	}
}

// query runs one query returning one value on db of the cluster.
func (c *cluster) queryString(db, sql string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.url(db))
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	var s string
	err = conn.QueryRow(ctx, sql).Scan(&s)
	return s, err
}
