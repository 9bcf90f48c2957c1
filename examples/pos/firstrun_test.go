package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/internal/dbtest"
)

// offlineSetup makes a seller and a key with scopes on a fresh database,
// starts a server and returns its URL and the key.
func offlineSetup(t *testing.T, scopes string) (url, key string, stop func()) {
	t.Helper()
	dbURL := dbtest.NewURL(t)
	bin.CLI(t, dbURL, "sellers", "add", "--gstin", sellerGSTIN, "--name", "Offline POS Stall", "--address", "Pune")
	key = strings.TrimSpace(bin.CLI(t, dbURL, "keys", "add", "--gstin", sellerGSTIN, "--scopes", scopes))
	srv := bin.Start(t, dbURL, "127.0.0.1:0")
	return "http://" + srv.Addr, key, srv.Kill
}

// TestOfflineFirstRun: as a new user runs it, pos --offline on a seller
// without the series creates a till series of its own (a key with
// manage) and says so; it prints plain text, one line per sale;
// --sales counts the sales of this run, so a second run adds as many.
func TestOfflineFirstRun(t *testing.T) {
	t.Parallel()
	url, key, _ := offlineSetup(t, "issue,read,manage")
	journal := filepath.Join(t.TempDir(), "till.journal")
	args := []string{"--offline", "--url", url, "--key", key, "--journal", journal, "--series", "T09", "--sales", "2"}
	cmd, out, errOut := pos(t, args...)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("first offline run: %v\n%s", err, errOut)
	}
	if !strings.Contains(errOut.String(), "created series T09") {
		t.Fatalf("pos did not say it created series T09:\n%s", errOut)
	}
	sale := regexp.MustCompile(`^sale T09/\d\d-\d\d/0000([0-9]) \(serial [0-9]+, FY \d{4}-\d\d\)$`)
	lines := out.lines()
	if len(lines) != 2 || !sale.MatchString(lines[0]) || !sale.MatchString(lines[1]) {
		t.Fatalf("first run printed %q, want two plain sale lines", lines)
	}
	cmd, out, errOut = pos(t, args...)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("second offline run: %v\n%s", err, errOut)
	}
	if lines := out.lines(); len(lines) != 2 || !strings.Contains(lines[1], "T09/") || sale.FindStringSubmatch(lines[1])[1] != "4" {
		t.Fatalf("second run with --sales 2 printed %q, want sales 3 and 4", lines)
	}
}

// TestOfflineUploadReportsProgress: --upload with the server down says
// what it is doing and each failed attempt, then gives up at
// --sale-timeout naming what is still pending, instead of blocking in
// silence.
func TestOfflineUploadReportsProgress(t *testing.T) {
	t.Parallel()
	url, key, stop := offlineSetup(t, "issue,read,manage")
	journal := filepath.Join(t.TempDir(), "till.journal")
	common := []string{"--offline", "--url", url, "--key", key, "--journal", journal, "--series", "T09", "--max-backoff", "200ms"}
	cmd, _, errOut := pos(t, append(common, "--sales", "0")...)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("lease: %v\n%s", err, errOut)
	}
	stop()
	cmd, _, errOut = pos(t, append(common, "--sales", "3", "--upload", "--sale-timeout", "4s")...)
	err := cmd.Wait()
	text := errOut.String()
	if err == nil || !strings.Contains(text, "uploading 3 pending") || strings.Count(text, "retrying") < 2 || !strings.Contains(text, "3 still pending") {
		t.Fatalf("--upload with the server down: %v, stderr:\n%s\nwant the upload announced, each retry reported and the pending count at the end", err, text)
	}
}
