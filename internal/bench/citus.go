package bench

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/invoiced/invoiced/internal/db"
	"github.com/jackc/pgx/v5"
)

// citusCluster is the Citus cluster behind the benchmark's database, when
// it is a coordinator: its nodes' data directories, by which the CPU of
// PostgreSQL's processes is told apart (a backend's working directory is
// its server's data directory), and its worker count. On a coordinator the
// pgbench baselines run on tables distributed by seller (pgbench/citus/).
type citusCluster struct {
	coordinator string   // data directory; "" when it could not be read
	workers     []string // data directories of the workers that could be read
	nworkers    int
}

// findCitus returns the cluster whose coordinator dbURL names, or nil on
// plain PostgreSQL. It fails when the database cannot be asked, or when
// it is a coordinator without workers (nothing to distribute to). The
// data directories are read with current_setting('data_directory'),
// which needs a superuser or pg_read_all_settings; without it they stay
// empty and the CPU is not split by node.
func findCitus(ctx context.Context, dbURL string) (*citusCluster, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	citus, err := db.IsCitus(ctx, conn)
	if err != nil || !citus {
		return nil, err
	}
	cl := &citusCluster{}
	if cl.nworkers, err = db.CitusWorkers(ctx, conn); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	if cl.nworkers == 0 {
		return nil, errors.New("bench: the database is a Citus coordinator without workers (citus_add_node one first)")
	}
	if conn.QueryRow(ctx, `SELECT current_setting('data_directory')`).Scan(&cl.coordinator) != nil {
		return cl, nil
	}
	cl.coordinator = resolved(cl.coordinator)
	rows, err := conn.Query(ctx, `SELECT result FROM run_command_on_workers($$SELECT current_setting('data_directory')$$) WHERE success`)
	if err != nil {
		return cl, nil
	}
	dirs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return cl, nil
	}
	for _, d := range dirs {
		cl.workers = append(cl.workers, resolved(d))
	}
	return cl, nil
}

// resolved returns dir with its symbolic links resolved, as the kernel
// shows a process's working directory, or dir when it cannot be.
func resolved(dir string) string {
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		return r
	}
	return dir
}

// split sets c's Coordinator and Workers, the CPU per invoice of the
// PostgreSQL processes of the coordinator and of every worker together,
// from the samples a and b of n invoices. It leaves them zero when some
// node's data directory is unknown (on another machine, or unreadable).
func (cl *citusCluster) split(c *CPU, a, b cpuSample, n int64) {
	if cl == nil || cl.coordinator == "" || len(cl.workers) != cl.nworkers || !a.ok || !b.ok || n <= 0 {
		return
	}
	per := func(dir string) float64 {
		return float64(max(0, b.pgDirs[dir]-a.pgDirs[dir]).Microseconds()) / float64(n)
	}
	c.Coordinator = per(cl.coordinator)
	for _, w := range cl.workers {
		c.Workers += per(w)
	}
}

// note says, for the report, how the baselines ran on the cluster and
// whether the CPU is split by node.
func (cl *citusCluster) note(sellers int) string {
	s := fmt.Sprintf("Citus coordinator with %d workers: the pgbench baselines ran on tables distributed by seller (%d sellers, co-located, pgbench/citus/), each transaction naming its seller; (b)'s CTE Citus pulls through the coordinator and commits in two phases", cl.nworkers, sellers)
	if cl.coordinator == "" || len(cl.workers) != cl.nworkers {
		return s + "; the nodes' data directories could not be read (superuser or pg_read_all_settings, nodes on this machine), so PostgreSQL's CPU is not split by node"
	}
	return s + "; cpu coordinator/workers: PostgreSQL's CPU per invoice on the coordinator and on the workers together"
}
