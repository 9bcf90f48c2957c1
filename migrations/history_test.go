package migrations_test

import (
	"bufio"
	"os/exec"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/migrations"
)

// TestEditedMigrationIsRefused: the database records each migration's
// SHA-256; when an applied migration's text differs from what was
// recorded, migrate and serve's check refuse, naming the file and both
// hashes. A known rewrite (the first text of 00017) is accepted.
func TestEditedMigrationIsRefused(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := dbtest.New(t)
	var sum string
	if err := pool.QueryRow(ctx, `SELECT sha256 FROM invoiced_migration_history WHERE version = 5`).Scan(&sum); err != nil {
		t.Fatalf("no history recorded for 00005: %v", err)
	}
	const other = "0000000000000000000000000000000000000000000000000000000000000005"
	if _, err := pool.Exec(ctx, `UPDATE invoiced_migration_history SET sha256 = $1 WHERE version = 5`, other); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"migrate": func() error { _, err := migrations.Up(ctx, pool); return err }(),
		"serve":   migrations.CheckServable(ctx, pool),
	} {
		if err == nil || !strings.Contains(err.Error(), "00005_repair_counter_unique_index.sql") || !strings.Contains(err.Error(), other) || !strings.Contains(err.Error(), sum) {
			t.Errorf("%s with 00005 recorded as %s: %v; want a refusal naming the file and both hashes", name, other, err)
		}
	}
	if _, err := pool.Exec(ctx, `UPDATE invoiced_migration_history SET sha256 = $1 WHERE version = 5`, sum); err != nil {
		t.Fatal(err)
	}
	// The first released texts of 00017 (applied to a benchmark database)
	// and of 00022 (which declared only binaries of 00021 compatible):
	// serve refuses until migrate repairs them.
	if _, err := pool.Exec(ctx, `UPDATE invoiced_migration_history SET sha256 = CASE version
		WHEN 17 THEN '364ab3a9bf6a6d72137ec7550758b49df58f6ce58095fe73b4c9ba1667306a73'
		ELSE 'd0dc272f7b6b4c0f0e7019c006632ab2de5300ec1921bea4b38f980a28d1cc41' END WHERE version IN (17, 22)`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE schema_compat SET serves_from = 21 WHERE version = 22`); err != nil {
		t.Fatal(err)
	}
	if err := migrations.CheckServable(ctx, pool); err == nil || !strings.Contains(err.Error(), "run invoiced migrate") {
		t.Fatalf("serve with earlier texts of 00017 and 00022 recorded: %v, want a refusal", err)
	}
	if _, err := migrations.Up(ctx, pool); err != nil {
		t.Fatalf("migrate with earlier texts recorded: %v", err)
	}
	if err := migrations.CheckServable(ctx, pool); err != nil {
		t.Fatalf("serve after the repair: %v", err)
	}
	var servesFrom int
	if err := pool.QueryRow(ctx, `SELECT serves_from FROM schema_compat WHERE version = 22`).Scan(&servesFrom); err != nil || servesFrom != 20 {
		t.Fatalf("00022's declaration after the repair: serves_from %d (%v), want 20", servesFrom, err)
	}
}

// historicRewrites are the released manifest lines (on main) that
// changed before the manifest became append-only; no line may join this
// list. 00019-00022 of the seller keys were renumbered to 00017-00020 and
// rewritten twice (abe66c1, 8db40be); 00020_routed_public_ids became 00016; 00022's first text
// declared only binaries of 00021 compatible (migrate repairs databases
// that applied it: history.go, knownRewrites).
var historicRewrites = map[string]bool{
	"364ab3a9bf6a6d72137ec7550758b49df58f6ce58095fe73b4c9ba1667306a73  00017_seller_columns.sql":          true,
	"0a5961f0e8aa153b14fb455900ab9dc21dacd7ed0929a3fc340c8da6405b11f7  00018_seller_keys_build.sql":       true,
	"0b79b973d5e34b573368f234e2f858bcbeb4248ed156701cfab39efb3a03b82d  00019_seller_required.sql":         true,
	"904180798b27608038d5018d1282a68dfbf12c08fb3985f17fa1fa82953d9884  00020_seller_keys.sql":             true,
	"fd38c10ec86b419e748d008d8677edc60c7bd647db513249edd86e143d26c7c7  00019_seller_columns.sql":          true,
	"4c7b1bdec5f02a5c7048c6684f1e229201fe26e15756f927127331286196d8e9  00020_seller_keys_build.sql":       true,
	"d71755b27fd79d49c8fe674d63c2ce6c13982b831d3910da636e5030c0a667ed  00021_seller_required.sql":         true,
	"f10df5310a01d7c4d171ab2ed17590678d436910bec812460456a0e2d79a9567  00022_seller_keys.sql":             true,
	"eada7d6edbbb036de3a42e70781b5af0f21440fcf08a5f6d73a4031d87177b14  00020_routed_public_ids.sql":       true,
	"d0dc272f7b6b4c0f0e7019c006632ab2de5300ec1921bea4b38f980a28d1cc41  00022_series_replica_identity.sql": true,
}

// TestManifestLinesNeverChange reads migrations/manifest.sha256 as every
// commit of main that changed it had it, and requires each of its lines
// (released: on main) to be in today's manifest unchanged; lines may only
// be appended. The rewrites of 00017-00020 are the listed exception.
func TestManifestLinesNeverChange(t *testing.T) {
	t.Parallel()
	ref := "main"
	if err := exec.Command("git", "rev-parse", "--verify", "--quiet", ref).Run(); err != nil {
		ref = "HEAD"
	}
	out, err := exec.Command("git", "log", "--first-parent", "--format=%H", ref, "--", "manifest.sha256").Output()
	if err != nil {
		t.Fatalf("git log of the manifest: %v", err)
	}
	commits := strings.Fields(string(out))
	if len(commits) == 0 {
		t.Fatal("no commit of main changed migrations/manifest.sha256: is this a git checkout?")
	}
	current := lines(t, "HEAD", "")
	have := map[string]bool{}
	for _, l := range current {
		have[l] = true
	}
	for _, c := range commits {
		for _, l := range lines(t, c, "") {
			if !have[l] && !historicRewrites[l] {
				t.Errorf("released line %q (main at %.10s) is not in today's manifest: a released migration changed or went", l, c)
			}
		}
	}
	// The renumbered and rewritten 00017-00020 are no longer in today's
	// manifest: the exception list names exactly what happened.
	for l := range historicRewrites {
		if have[l] {
			t.Errorf("listed rewrite %q is in today's manifest", l)
		}
	}
}

// lines returns the manifest's lines at commit.
func lines(t *testing.T, commit, _ string) []string {
	t.Helper()
	out, err := exec.Command("git", "show", commit+":./manifest.sha256").Output()
	if err != nil {
		t.Fatalf("git show %s:migrations/manifest.sha256: %v", commit, err)
	}
	var ls []string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			ls = append(ls, l)
		}
	}
	return ls
}

// TestAdoptionFindsAnEarlierText: a database migrated before the history
// existed has every applied version adopted with the current file's hash,
// unless what a known earlier text left is seen. 00022's first text left
// schema_compat.serves_from = 21 (the current one 20): migrate recognises
// it, repairs it and records it repaired; a database with the current
// text's effect is adopted and left as it is.
func TestAdoptionFindsAnEarlierText(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	for _, tc := range []struct {
		servesFrom int
		recorded   string
	}{{21, "repaired"}, {20, "adopted"}} {
		pool := dbtest.New(t)
		if _, err := pool.Exec(ctx, `DROP TABLE invoiced_migration_history`); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `UPDATE schema_compat SET serves_from = $1 WHERE version = 22`, tc.servesFrom); err != nil {
			t.Fatal(err)
		}
		if _, err := migrations.Up(ctx, pool); err != nil {
			t.Fatalf("migrate of a database without history (00022 left serves_from %d): %v", tc.servesFrom, err)
		}
		var servesFrom int
		var recorded string
		if err := pool.QueryRow(ctx, `SELECT c.serves_from, h.recorded FROM schema_compat c JOIN invoiced_migration_history h USING (version) WHERE version = 22`).Scan(&servesFrom, &recorded); err != nil {
			t.Fatal(err)
		}
		if servesFrom != 20 || recorded != tc.recorded {
			t.Errorf("00022 left serves_from %d before the history existed; after migrate: serves_from %d, recorded %q; want 20, %q", tc.servesFrom, servesFrom, recorded, tc.recorded)
		}
		if err := migrations.CheckServable(ctx, pool); err != nil {
			t.Errorf("serve after migrate: %v", err)
		}
	}
}
