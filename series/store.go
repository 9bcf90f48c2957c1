package series

import (
	"context"
	"errors"
	"fmt"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/sellers"
	"github.com/jackc/pgx/v5"
)

// This file holds the SQL of series; database errors are translated where
// they arise (translate, below).

// CreateSeries creates a series in its own transaction; see CreateSeriesTx.
func CreateSeries(ctx context.Context, b db.Beginner, n NewSeries) (gst.Series, error) {
	var s gst.Series
	err := db.InTx(ctx, b, func(tx pgx.Tx) (err error) {
		s, err = CreateSeriesTx(ctx, tx, n)
		return err
	})
	if err != nil {
		return gst.Series{}, db.TranslateTx(err, "series")
	}
	return s, nil
}

// MaxPerSeller is the most series one seller may have. A series is a
// numbering sequence (a shop's, a till's, a document type's): a large
// retailer's 300 stores with three document types each fit. Past it the
// series list, its cache and every creation's overlap check (which reads
// all of them) would grow with whatever a manage key chose to create.
const MaxPerSeller = 1000

// CreateSeriesTx validates n and inserts the series inside tx. It locks the
// seller row so that concurrent creations for one seller are checked against
// each other. It returns ErrInvalidSeries, ErrInvalidDocType or
// ErrInvalidFormat for bad values, sellers.ErrNotFound, ErrDuplicateCode when
// the seller has a series with that code, ErrTooManySeries when it has
// MaxPerSeller, and ErrOverlap when the format can render a number that
// another series of the seller renders in the same year.
func CreateSeriesTx(ctx context.Context, tx pgx.Tx, n NewSeries) (gst.Series, error) {
	code, dt, f, err := n.validate()
	if err != nil {
		return gst.Series{}, err
	}
	var one int
	// NO KEY UPDATE: serialises series creations of the seller without
	// conflicting with the KEY SHARE locks that invoice inserts take.
	err = tx.QueryRow(ctx, `SELECT 1 FROM sellers WHERE id = $1 FOR NO KEY UPDATE`, n.SellerID).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return gst.Series{}, sellers.ErrNotFound
	}
	if err != nil {
		return gst.Series{}, translate(err, "lock seller")
	}
	existing, err := listSeries(ctx, tx, n.SellerID)
	if err != nil {
		return gst.Series{}, err
	}
	if len(existing) >= MaxPerSeller {
		return gst.Series{}, apperr.Errorf(ErrTooManySeries, "the seller has %d series, the most one seller may have", len(existing))
	}
	for _, e := range existing {
		if e.Code == code {
			return gst.Series{}, apperr.Errorf(ErrDuplicateCode, "series %s already exists", code)
		}
		if ex, ok := gst.Overlap(f, e.Format); ok {
			return gst.Series{}, apperr.Errorf(ErrOverlap, "format %s can render %s, which series %s (%s) can render too", f, ex, e.Code, e.Format)
		}
	}
	s := gst.Series{SellerID: n.SellerID, Code: code, DocType: dt, Format: f, Shop: n.Shop}
	err = tx.QueryRow(ctx, `
		INSERT INTO series (seller_id, code, doc_type, format, capacity, shop)
		VALUES (@seller_id, @code, @doc_type, @format, @capacity, @shop)
		RETURNING id, created_at`, pgx.NamedArgs{
		"seller_id": n.SellerID, "code": code, "doc_type": string(dt),
		"format": f.String(), "capacity": f.Capacity(), "shop": n.Shop,
	}).Scan(&s.ID, &s.CreatedAt)
	if db.IsUnique(err) {
		return gst.Series{}, apperr.Errorf(ErrDuplicateCode, "series %s already exists", code)
	}
	if err != nil {
		return gst.Series{}, translate(err, "create series")
	}
	return s, nil
}

const seriesCols = `id, seller_id, code, doc_type, format, shop, created_at`

func scanSeries(row pgx.Row) (gst.Series, error) {
	var s gst.Series
	var dt, f string
	if err := row.Scan(&s.ID, &s.SellerID, &s.Code, &dt, &f, &s.Shop, &s.CreatedAt); err != nil {
		return gst.Series{}, err
	}
	s.DocType = gst.DocType(dt)
	var err error
	if s.Format, err = gst.ParseFormat(f); err != nil {
		return gst.Series{}, fmt.Errorf("stored format of series %d: %w", s.ID, err)
	}
	return s, nil
}

// Get returns the seller's series with code (case-insensitive), or ErrNotFound.
func Get(ctx context.Context, q db.Querier, sellerID int64, code string) (gst.Series, error) {
	c, err := ParseCode(code)
	if err != nil {
		return gst.Series{}, apperr.Errorf(ErrNotFound, "series %q not found", code)
	}
	s, err := scanSeries(q.QueryRow(ctx, `SELECT `+seriesCols+` FROM series WHERE seller_id = $1 AND code = $2`, sellerID, c))
	if errors.Is(err, pgx.ErrNoRows) {
		return gst.Series{}, apperr.Errorf(ErrNotFound, "series %s not found", c)
	}
	if err != nil {
		return gst.Series{}, translate(err, "get series")
	}
	return s, nil
}

// GetByID returns the seller's series with id, or ErrNotFound (also when
// the series is another seller's). The seller is named because series is
// keyed by (id, seller_id): on Citus the lookup runs on the seller's shard
// alone, and nothing depends on id being unique by itself.
func GetByID(ctx context.Context, q db.Querier, sellerID, id int64) (gst.Series, error) {
	s, err := scanSeries(q.QueryRow(ctx, `SELECT `+seriesCols+` FROM series WHERE seller_id = $1 AND id = $2`, sellerID, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return gst.Series{}, ErrNotFound
	}
	if err != nil {
		return gst.Series{}, translate(err, "get series")
	}
	return s, nil
}

func listSeries(ctx context.Context, q db.Querier, sellerID int64) ([]gst.Series, error) {
	rows, err := q.Query(ctx, `SELECT `+seriesCols+` FROM series WHERE seller_id = $1 ORDER BY code`, sellerID)
	if err != nil {
		return nil, translate(err, "list series")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (gst.Series, error) { return scanSeries(r) })
	if err != nil {
		return nil, translate(err, "list series")
	}
	return out, nil
}

// List returns the seller's series ordered by code, each with its counters
// (newest financial year first) and the last number issued in each. Both
// tables are filtered by the seller, so that on Citus the statement goes
// to the seller's shard group alone (docs/scale-out.md).
func List(ctx context.Context, q db.Querier, sellerID int64) ([]SeriesUsage, error) {
	all, err := listSeries(ctx, q, sellerID)
	if err != nil {
		return nil, err
	}
	rows, err := q.Query(ctx, `
		SELECT c.series_id, c.fy, c.last_serial, c.last_invoice_date, c.last_issued_at
		FROM series_counters c JOIN series s ON s.id = c.series_id AND s.seller_id = $1
		WHERE c.seller_id = $1 ORDER BY c.series_id, c.fy DESC`, sellerID)
	if err != nil {
		return nil, translate(err, "list counters")
	}
	defer rows.Close()
	byID := map[int64][]Usage{}
	for rows.Next() {
		var id int64
		var u Usage
		var fy int
		if err := rows.Scan(&id, &fy, &u.LastSerial, &u.LastInvoiceDate, &u.LastIssuedAt); err != nil {
			return nil, translate(err, "list counters")
		}
		u.FY = gst.FY(fy)
		byID[id] = append(byID[id], u)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err, "list counters")
	}
	out := make([]SeriesUsage, 0, len(all))
	for _, s := range all {
		years := byID[s.ID]
		for i := range years {
			if years[i].LastSerial > 0 {
				years[i].LastNumber, _ = s.Format.Render(years[i].FY, years[i].LastSerial)
			}
		}
		out = append(out, SeriesUsage{Series: s, Years: years})
	}
	return out, nil
}

// translate returns err as db.Translate does (ErrLockTimeout, ErrMoved),
// otherwise wrapped as "series: what: err"; nil stays nil.
func translate(err error, what string) error {
	if IsLeased(err) {
		return apperr.WithCause(ErrLeased, err)
	}
	return db.Translate(err, "series: "+what)
}
