//go:build citus

package db_test

import (
	"strings"
	"testing"

	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestCitusSettingsChecked: a coordinator session without the settings
// the Citus paths depend on (as behind a pooler that drops the session's
// own, or with citus.propagate_set_commands left at none, where SET LOCAL
// lock timeouts never reach the workers) is refused, naming each setting;
// a pool opened with db.ForCitus sets them itself, whatever the URL asked.
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
	wrong := map[string]string{"citus.propagate_set_commands": "none", "plan_cache_mode": "auto"}
	err := db.CheckCitusSettings(ctx, open(wrong, false))
	for name := range wrong {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("a session with %s=%s: %v; want a refusal naming it", name, wrong[name], err)
		}
	}
	if err := db.CheckCitusSettings(ctx, open(map[string]string{"citus.propagate_set_commands": "none", "plan_cache_mode": "auto"}, true)); err != nil {
		t.Errorf("a pool opened with ForCitus: %v", err)
	}
}
