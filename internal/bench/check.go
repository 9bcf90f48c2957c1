package bench

import (
	"context"
	"fmt"
	"maps"
	"sort"

	"github.com/jackc/pgx/v5"
)

// checkInvoiced verifies the run's series after a load run and returns ""
// when they are contiguous, else the first problem:
//   - the serials answered with 201 are exactly 1..N per series (always);
//   - via the API (views: one client per seller, as the series' last
//     serials are listed to their seller's key), each series' last_serial
//     equals its acknowledged count;
//   - with a database, each series-year's serials are exactly 1..N in the
//     invoices table and its counter row says N, N summed over the years
//     being the acknowledged count.
func checkInvoiced(ctx context.Context, views []*apiClient, dbURL string, codes []string, acked map[string][]int64) (string, error) {
	if p := checkAcked(acked); p != "" {
		return p, nil
	}
	last := map[string]int64{}
	for _, a := range views {
		l, err := a.lastSerials(ctx)
		if err != nil {
			return "", err
		}
		maps.Copy(last, l)
	}
	for _, c := range codes {
		got, ok := last[c]
		if !ok {
			return fmt.Sprintf("series %s missing from GET /v1/series", c), nil
		}
		if want := int64(len(acked[c])); got != want {
			return fmt.Sprintf("series %s: last_serial %d, but %d invoices acknowledged with 201", c, got, want), nil
		}
	}
	if dbURL == "" {
		return "", nil
	}
	return checkInvoicedDB(ctx, dbURL, codes, acked)
}

// checkInvoicedDB is the database half of checkInvoiced.
func checkInvoicedDB(ctx context.Context, dbURL string, codes []string, acked map[string][]int64) (string, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	// Every join and the grouping name seller_id, the column Citus
	// distributes these tables by: each seller's part runs on its shard.
	rows, err := conn.Query(ctx, `
		SELECT s.id, s.code, i.fy, count(*), count(DISTINCT i.serial), min(i.serial), max(i.serial), c.last_serial
		FROM series s
		JOIN invoices i ON i.seller_id = s.seller_id AND i.series_id = s.id
		LEFT JOIN series_counters c ON c.seller_id = s.seller_id AND c.series_id = s.id AND c.fy = i.fy
		WHERE s.code = ANY($1)
		GROUP BY s.seller_id, s.id, s.code, i.fy, c.last_serial
		ORDER BY s.code, i.fy`, codes)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	total := map[string]int64{}
	ids := map[string]int64{}
	for rows.Next() {
		var id int64
		var code string
		var fy int
		var n, distinct, lo, hi int64
		var counter *int64
		if err := rows.Scan(&id, &code, &fy, &n, &distinct, &lo, &hi, &counter); err != nil {
			return "", err
		}
		if prev, ok := ids[code]; ok && prev != id {
			return fmt.Sprintf("series code %s exists for more than one seller; cannot check", code), nil
		}
		ids[code] = id
		switch {
		case distinct != n || lo != 1 || hi != n:
			return fmt.Sprintf("series %s FY %d: %d invoices, %d distinct serials, min %d, max %d (want exactly 1..%d)", code, fy, n, distinct, lo, hi, n), nil
		case counter == nil || *counter != n:
			c := "missing"
			if counter != nil {
				c = fmt.Sprint(*counter)
			}
			return fmt.Sprintf("series %s FY %d: counter last_serial %s, %d invoices", code, fy, c, n), nil
		}
		total[code] += n
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	sorted := append([]string(nil), codes...)
	sort.Strings(sorted)
	for _, c := range sorted {
		if want := int64(len(acked[c])); total[c] != want {
			return fmt.Sprintf("series %s: %d invoices in the database, %d acknowledged with 201", c, total[c], want), nil
		}
	}
	return "", nil
}

// pgVersion returns PostgreSQL's version() and its fsync and
// synchronous_commit settings, for the report.
func pgVersion(ctx context.Context, dbURL string) string {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return ""
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var v, fsync, sc string
	if err := conn.QueryRow(ctx, `SELECT version(), current_setting('fsync'), current_setting('synchronous_commit')`).Scan(&v, &fsync, &sc); err != nil {
		return ""
	}
	return fmt.Sprintf("%s; fsync=%s synchronous_commit=%s", v, fsync, sc)
}

// checkAcked verifies that, per series, the serials answered with 201 are
// exactly 1..N with no repeats. It returns "" when they are, else the first
// problem.
func checkAcked(acked map[string][]int64) string {
	codes := make([]string, 0, len(acked))
	for c := range acked {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	for _, c := range codes {
		s := append([]int64(nil), acked[c]...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		for i, v := range s {
			if v != int64(i)+1 {
				return fmt.Sprintf("series %s: acknowledged serials are not 1..%d: position %d holds %d", c, len(s), i+1, v)
			}
		}
	}
	return ""
}
