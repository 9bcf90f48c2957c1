package faults

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/invoiced/invoiced/internal/testwait"
)

// TestRestoreDrill is the backup-and-restore drill of docs/operations.md:
// with WAL archiving on and invoices being issued, it takes a base backup
// (pg_basebackup), marks a restore point, keeps issuing, then restores the
// backup into a new cluster up to that point (point-in-time recovery from
// the archive). There every invoice acknowledged before the point is
// present, `invoiced verify` finds the chains, serials and counters intact,
// and a server on the restored cluster issues each series' next number
// right after the restored counter.
func TestRestoreDrill(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	archive := newClusterDir(t)
	t.Cleanup(func() { os.RemoveAll(archive) })
	primary := newCluster(t, "wal_level = replica", "max_wal_senders = 5", "archive_mode = on",
		fmt.Sprintf("archive_command = 'test ! -f %[1]s/%%f && cp %%p %[1]s/%%f'", archive))
	fx := seed(t, primary.url("postgres"))
	srv := startServer(t, fx.dbURL, "127.0.0.1:0")
	h := &History{}
	c := newClient(h, fx.key, "http://"+srv.Addr, "drill")
	defer c.close()
	end := time.Now().Add(retryWindow)
	l := startLoad(ctx, c, workers, codes, func() time.Time { return end })
	if !l.waitIssued(40, 20*time.Second) {
		t.Fatal("load did not start")
	}

	// 1. The base backup, taken while invoices are issued.
	backup := newClusterDir(t)
	t.Cleanup(func() { os.RemoveAll(backup) })
	h.Mark("pg_basebackup")
	if out, err := asPG(2*time.Minute, filepath.Join(primary.bindir, "pg_basebackup"), "-h", "127.0.0.1", "-p", strconv.Itoa(primary.port),
		"-U", "postgres", "-D", filepath.Join(backup, "data"), "-X", "stream", "-c", "fast", "--no-sync"); err != nil {
		t.Fatalf("pg_basebackup: %v\n%s", err, out)
	}
	if !l.waitIssued(40, 20*time.Second) {
		t.Fatal("issuing stopped after the backup")
	}
	// 2. The point to restore to; everything acknowledged before it must
	// come back.
	beforePoint := time.Now()
	if _, err := primary.queryString("postgres", `SELECT pg_create_restore_point('drill')::text`); err != nil {
		t.Fatal(err)
	}
	h.Mark("restore point")
	if !l.waitIssued(40, 20*time.Second) {
		t.Fatal("issuing stopped after the restore point")
	}
	// 3. The WAL holding the point reaches the archive.
	seg, err := primary.queryString("postgres", `SELECT pg_walfile_name(pg_switch_wal())`)
	if err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 30*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(archive, seg))
		return err == nil
	}, "WAL segment %s archived", seg)
	l.end(t, retryWindow)
	srv.Kill()

	// 4. Restore into a new cluster: the backup's files, recovery from the
	// archive up to the restore point, then promotion.
	restored := &cluster{t: t, dir: newClusterDir(t), bindir: primary.bindir}
	t.Cleanup(restored.destroy)
	if out, err := asPG(time.Minute, "cp", "-a", filepath.Join(backup, "data"), filepath.Join(restored.dir, "data")); err != nil {
		t.Fatalf("copy the backup: %v\n%s", err, out)
	}
	restored.port = freePort(t)
	restored.writeConf("archive_mode = off",
		fmt.Sprintf("restore_command = 'cp %s/%%f %%p'", archive),
		"recovery_target_name = 'drill'",
		"recovery_target_action = 'promote'")
	signal := filepath.Join(restored.dir, "data", "recovery.signal")
	if out, err := asPG(10*time.Second, "touch", signal); err != nil {
		t.Fatalf("recovery.signal: %v\n%s", err, out)
	}
	restored.start()
	testwait.Until(t, 60*time.Second, func() bool {
		v, err := restored.queryString("postgres", `SELECT pg_is_in_recovery()::text`)
		return err == nil && v == "false"
	}, "the restored cluster to finish recovery")

	// 5. What was acknowledged before the point is there, exactly as
	// answered; the chains, serials and counters are intact.
	stored := storedInvoices(t, restored.url("postgres"))
	byKey := map[string]Stored{}
	for _, s := range stored {
		byKey[s.Key] = s
	}
	before := 0
	for _, op := range h.Ops() {
		if op.Type != OK || !op.Time.Before(beforePoint) {
			continue
		}
		before++
		s, ok := byKey[op.Key]
		if !ok {
			t.Errorf("invoice %s (%s), acknowledged before the restore point, is missing after the restore", op.Number, op.Key)
		} else if s.Number != op.Number || s.Serial != op.Serial {
			t.Errorf("invoice of %s restored as %s/%d, answered as %s/%d", op.Key, s.Number, s.Serial, op.Number, op.Serial)
		}
	}
	all := storedInvoices(t, primary.url("postgres"))
	if len(stored) >= len(all) {
		t.Errorf("the restore holds %d invoices, the primary %d: it did not stop at the restore point", len(stored), len(all))
	}
	// verify exits non-zero unless intact, and cli fails the test then.
	cli(t, restored.url("postgres"), "verify", "--gstin", sellerGSTIN)

	// 6. Issuing goes on from the restored counters.
	last := map[string]int64{}
	for _, s := range stored {
		last[s.Series] = max(last[s.Series], s.Serial)
	}
	srv2 := startServer(t, restored.url("postgres"), "127.0.0.1:0")
	h2 := &History{}
	c2 := newClient(h2, fx.key, "http://"+srv2.Addr, "after-restore")
	defer c2.close()
	for i, code := range codes {
		if !c2.issue(ctx, i, code, fmt.Sprintf("after-restore-%s", code), time.Now().Add(30*time.Second)) {
			t.Fatalf("issuing on %s after the restore failed", code)
		}
	}
	for _, op := range h2.Ops() {
		if op.Type == OK && op.Serial != last[op.Series]+1 {
			t.Errorf("after the restore %s issued serial %d, want %d (right after the restored counter)", op.Series, op.Serial, last[op.Series]+1)
		}
	}
	cli(t, restored.url("postgres"), "verify", "--gstin", sellerGSTIN)
	t.Logf("FAULTS restore-drill acked-before-point=%d restored=%d primary=%d", before, len(stored), len(all))
}
