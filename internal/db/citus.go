package db

import (
	"context"
	"fmt"
	"strings"

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
	// SET LOCAL (the counter lock's 250 ms shared wait, --lock-timeout,
	// the lease id of a device upload) reaches the workers' side of a
	// transaction only with this; a node configured without it would make
	// those waits unbounded and refuse every upload. Set per session, so
	// invoiced does not depend on the nodes' configuration for it.
	cfg.RuntimeParams["citus.propagate_set_commands"] = "local"
	// A COMMIT is answered once its WAL is written: the coordinator's
	// two-phase commit decisions survive a crash. The workers' own
	// setting is theirs (CheckCitusSettings refuses off there).
	cfg.RuntimeParams["synchronous_commit"] = "on"
}

// citusSettings are the settings invoiced depends on on a Citus
// coordinator, per session, as SHOW reports them, with why.
var citusSettings = []struct{ name, want, why string }{
	{"citus.propagate_set_commands", "local", "SET LOCAL lock and statement timeouts and the lease id must reach the workers (docs/scale-out.md)"},
	{"plan_cache_mode", "force_custom_plan", "generic plans hide the seller from Citus' router"},
	{"synchronous_commit", "on", "a COMMIT answered before its WAL is written can be lost, and with it an acknowledged invoice"},
}

// CheckCitusSettings returns nil when the session settings invoiced
// depends on (citusSettings) hold on a connection of pool, the
// coordinator and every worker allow prepared transactions (two-phase
// commits of reference-table writes), and every worker commits the
// database synchronously (synchronous_commit not off: a shard move's
// switch-over can leave an asynchronously committed transaction behind on
// the old placement, docs/scale-out.md); otherwise an error naming each
// setting that does not, where, its value and the value needed. It fails
// too when the database cannot be asked.
func CheckCitusSettings(ctx context.Context, q Querier) error {
	var bad []string
	for _, s := range citusSettings {
		var got string
		if err := q.QueryRow(ctx, `SELECT current_setting($1)`, s.name).Scan(&got); err != nil {
			return fmt.Errorf("db: citus settings: %w", err)
		}
		if got != s.want {
			bad = append(bad, fmt.Sprintf("%s is %q, invoiced needs %q (%s)", s.name, got, s.want, s.why))
		}
	}
	rows, err := q.Query(ctx, `SELECT 'coordinator', current_setting('max_prepared_transactions'), current_setting('synchronous_commit')
		UNION ALL SELECT p.nodename || ':' || p.nodeport, p.result, s.result
		FROM run_command_on_workers('SHOW max_prepared_transactions') p
		JOIN run_command_on_workers('SHOW synchronous_commit') s USING (nodename, nodeport)`)
	if err != nil {
		return fmt.Errorf("db: citus settings: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var node, prepared, commit string
		if err := rows.Scan(&node, &prepared, &commit); err != nil {
			return fmt.Errorf("db: citus settings: %w", err)
		}
		if prepared == "0" {
			bad = append(bad, fmt.Sprintf("max_prepared_transactions is 0 on %s, invoiced needs it above 0 (writes to reference tables are two-phase commits)", node))
		}
		if commit == "off" && node != "coordinator" { // the coordinator's session is checked above
			bad = append(bad, fmt.Sprintf("synchronous_commit is off on %s, invoiced needs it on (a shard move can lose a transaction committed asynchronously just before its switch-over: docs/scale-out.md)", node))
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("db: citus settings: %w", err)
	}
	if len(bad) > 0 {
		return fmt.Errorf("the Citus coordinator's settings are not what invoiced depends on: %s", strings.Join(bad, "; "))
	}
	return nil
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
