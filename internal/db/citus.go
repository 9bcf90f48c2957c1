package db

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// IsCitus reports whether the database q is connected to has the citus
// extension: it is then a Citus coordinator, whose seller-owned tables
// migrations.Up distributed (docs/scale-out.md). It fails only when the
// database cannot be asked.
func IsCitus(ctx context.Context, q Querier) (bool, error) {
	var citus bool
	if err := q.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'citus')`).Scan(&citus); err != nil {
		return false, fmt.Errorf("db: citus: %w", err)
	}
	return citus, nil
}

// ForCitus sets in cfg the session settings invoiced needs on a Citus
// coordinator: custom plans only. pgx prepares its statements, and after
// five runs PostgreSQL may choose a generic plan, whose parameters Citus
// cannot see; a statement that names its seller only through a parameter
// (or an array parameter) is then not routed to one shard, or not planned
// at all. A custom plan is made with the values, so Citus routes it.
func ForCitus(cfg *pgx.ConnConfig) {
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	cfg.RuntimeParams["plan_cache_mode"] = "force_custom_plan"
}

// CitusWorkers returns how many active primary worker nodes of the Citus
// coordinator q is connected to may hold shards (the coordinator itself,
// group 0, is not counted). It fails when the database cannot be asked or
// is not a Citus coordinator (no pg_dist_node).
func CitusWorkers(ctx context.Context, q Querier) (int, error) {
	var n int
	if err := q.QueryRow(ctx, `SELECT count(*) FROM pg_dist_node
		WHERE groupid <> 0 AND noderole = 'primary' AND isactive AND shouldhaveshards`).Scan(&n); err != nil {
		return 0, fmt.Errorf("db: citus workers: %w", err)
	}
	return n, nil
}
