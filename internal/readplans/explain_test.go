package readplans_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// plans collects the plan of every statement run on a pool while it is
// recording: auto_explain, loaded into each of the pool's sessions,
// sends each plan with its actual row counts as a notice.
type plans struct {
	mu        sync.Mutex
	recording bool
	got       []plan
}

// plan is one statement's plan as auto_explain reports it.
type plan struct {
	Query string `json:"Query Text"`
	Root  node   `json:"Plan"`
}

// node is a plan node with the counts EXPLAIN ANALYZE gives it; counts
// of rows are per loop.
type node struct {
	Type           string   `json:"Node Type"`
	Relation       string   `json:"Relation Name"`
	Index          string   `json:"Index Name"`
	IndexCond      string   `json:"Index Cond"`
	Filter         string   `json:"Filter"`
	JoinFilter     string   `json:"Join Filter"`
	SortKey        []string `json:"Sort Key"`
	Rows           float64  `json:"Actual Rows"`
	Loops          float64  `json:"Actual Loops"`
	Removed        float64  `json:"Rows Removed by Filter"`
	JoinRemoved    float64  `json:"Rows Removed by Join Filter"`
	RecheckRemoved float64  `json:"Rows Removed by Index Recheck"`
	Plans          []node   `json:"Plans"`
}

// work is how many rows the node handled in all its loops: those it
// returned and those its filters threw away.
func (n node) work() float64 {
	return (n.Rows + n.Removed + n.JoinRemoved + n.RecheckRemoved) * n.Loops
}

// describe is the node in one line, for failure messages.
func (n node) describe() string {
	var b strings.Builder
	b.WriteString(n.Type)
	if n.Index != "" {
		b.WriteString(" using " + n.Index)
	}
	if n.Relation != "" {
		b.WriteString(" on " + n.Relation)
	}
	fmt.Fprintf(&b, " (rows %.0f × loops %.0f", n.Rows, n.Loops)
	for _, r := range []struct {
		what string
		n    float64
	}{{"removed by filter", n.Removed}, {"removed by join filter", n.JoinRemoved}, {"removed by recheck", n.RecheckRemoved}} {
		if r.n > 0 {
			fmt.Fprintf(&b, ", %s %.0f", r.what, r.n)
		}
	}
	b.WriteString(")")
	for _, c := range []struct{ what, v string }{{"Index Cond", n.IndexCond}, {"Filter", n.Filter}, {"Join Filter", n.JoinFilter}} {
		if c.v != "" {
			b.WriteString(" " + c.what + ": " + c.v)
		}
	}
	if len(n.SortKey) > 0 {
		b.WriteString(" Sort Key: " + strings.Join(n.SortKey, ", "))
	}
	return b.String()
}

// walk calls fn for n and every node below it.
func (n node) walk(fn func(node)) {
	fn(n)
	for _, c := range n.Plans {
		c.walk(fn)
	}
}

// notice records a notice of auto_explain's.
func (p *plans) notice(_ *pgconn.PgConn, n *pgconn.Notice) {
	i := strings.IndexByte(n.Message, '{')
	if !strings.Contains(n.Message, "plan:") || i < 0 {
		return
	}
	var pl plan
	if err := json.Unmarshal([]byte(n.Message[i:]), &pl); err != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.recording {
		p.got = append(p.got, pl)
	}
}

// record starts recording afresh.
func (p *plans) record() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.recording, p.got = true, nil
}

// stop stops recording and returns the plans recorded since record.
func (p *plans) stop() []plan {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.recording = false
	return p.got
}

// explainedPool returns a pool of at most maxConns connections on a fresh
// database whose every session reports its statements' plans to the
// returned plans (auto_explain with ANALYZE, without timing).
func explainedPool(t *testing.T, maxConns int32) (*pgxpool.Pool, *plans) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dbtest.NewURL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = maxConns
	p := &plans{}
	cfg.ConnConfig.OnNotice = p.notice
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		for _, s := range []string{
			`LOAD 'auto_explain'`,
			`SET auto_explain.log_min_duration = 0`,
			`SET auto_explain.log_analyze = on`,
			`SET auto_explain.log_timing = off`,
			`SET auto_explain.log_format = json`,
			`SET auto_explain.log_level = notice`,
		} {
			if _, err := c.Exec(ctx, s); err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
		}
		return nil
	}
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool, p
}
