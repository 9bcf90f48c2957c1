//go:build citus

package db_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestCitusSettingsChecked: a coordinator session without the settings
// the Citus paths depend on (as behind a pooler that drops the session's
// own, or with citus.propagate_set_commands left at none, where SET LOCAL
// lock timeouts never reach the workers) is refused, naming each setting;
// a pool opened with db.ForCitus sets them itself, whatever the URL asked.
// A worker whose commits for the database are asynchronous is refused,
// named (docs/scale-out.md: a shard move can lose such a commit).
func TestCitusSettingsChecked(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := dbtest.NewURL(t)
	open := func(params map[string]string, forCitus bool) *pgxpool.Pool {
		cfg, err := pgxpool.ParseConfig(url)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range params {
			cfg.ConnConfig.RuntimeParams[k] = v
		}
		if forCitus {
			db.ForCitus(cfg.ConnConfig)
		}
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		return pool
	}
	wrong := map[string]string{"citus.propagate_set_commands": "none", "plan_cache_mode": "auto", "synchronous_commit": "off"}
	err := db.CheckCitusSettings(ctx, open(wrong, false))
	for name := range wrong {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("a session with %s=%s: %v; want a refusal naming it", name, wrong[name], err)
		}
	}
	if err := db.CheckCitusSettings(ctx, open(wrong, true)); err != nil {
		t.Errorf("a pool opened with ForCitus: %v", err)
	}

	// A worker that commits the database asynchronously is refused by
	// name, whatever the coordinator's session says.
	w := dbtest.CitusWorkers(t)[0]
	conn, err := pgx.Connect(ctx, w.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	name := open(nil, true).Config().ConnConfig.Database
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{name}.Sanitize()+" SET synchronous_commit = off"); err != nil {
		t.Fatal(err)
	}
	err = db.CheckCitusSettings(ctx, open(nil, true))
	if want := fmt.Sprintf("synchronous_commit is off on 127.0.0.1:%d", w.Port); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a worker committing asynchronously: %v; want a refusal saying %q", err, want)
	}
}
