package series

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/freetext"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// This file holds the package's SQL. pgx errors are translated here, once.

// CreateSeller registers a seller; see CreateSellerWith.
func CreateSeller(ctx context.Context, db DB, gstin, name string) (Seller, error) {
	return CreateSellerWith(ctx, db, gstin, name, Contact{})
}

// CreateSellerWith registers a seller with its contact. It returns
// ErrInvalidGSTIN for a bad GSTIN, ErrInvalidSeries for an empty name or
// an invalid contact (CheckContact) and ErrSellerExists when the GSTIN is
// already registered.
func CreateSellerWith(ctx context.Context, db DB, gstin, name string, c Contact) (Seller, error) {
	g, err := ParseGSTIN(gstin)
	if err != nil {
		return Seller{}, err
	}
	if err := checkSellerName(name); err != nil {
		return Seller{}, err
	}
	if p := freetext.Problem(name); p != "" {
		return Seller{}, apperr.Errorf(ErrInvalidSeries, "seller name holds %s; control, bidi and invisible characters are refused", p)
	}
	if err := CheckContact(c); err != nil {
		return Seller{}, err
	}
	s := Seller{GSTIN: g, Name: name, StateCode: g.StateCode(), Contact: c}
	err = db.QueryRow(ctx, `
		INSERT INTO sellers (gstin, name, state_code, address, phone, email) VALUES ($1, $2, $3, $4, $5, $6)
		RETURNING id, created_at`, string(g), name, s.StateCode, c.Address, c.Phone, c.Email).Scan(&s.ID, &s.CreatedAt)
	if isUnique(err) {
		return Seller{}, apperr.Errorf(ErrSellerExists, "seller %s already exists", g)
	}
	if err != nil {
		return Seller{}, fmt.Errorf("create seller: %w", err)
	}
	return s, nil
}

// SellerUpdate is a change to a seller: nil fields stay as they are.
type SellerUpdate struct {
	Name, Address, Phone, Email *string
}

// UpdateSeller applies u to the seller registered under gstin and returns
// it as stored. It returns ErrInvalidGSTIN, ErrInvalidSeries for an empty
// name or an invalid contact, and ErrSellerNotFound.
func UpdateSeller(ctx context.Context, db DB, gstin string, u SellerUpdate) (Seller, error) {
	s, err := SellerByGSTIN(ctx, db, gstin)
	if err != nil {
		return Seller{}, err
	}
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&s.Name, u.Name)
	set(&s.Address, u.Address)
	set(&s.Phone, u.Phone)
	set(&s.Email, u.Email)
	if err := checkSellerName(s.Name); err != nil {
		return Seller{}, err
	}
	if err := CheckContact(s.Contact); err != nil {
		return Seller{}, err
	}
	return scanSeller(db.QueryRow(ctx, `
		UPDATE sellers SET name = $2, address = $3, phone = $4, email = $5 WHERE id = $1
		RETURNING `+sellerCols, s.ID, s.Name, s.Address, s.Phone, s.Email))
}

// SellerByGSTIN returns the seller registered under gstin, or
// ErrSellerNotFound (ErrInvalidGSTIN when gstin is malformed).
func SellerByGSTIN(ctx context.Context, db DB, gstin string) (Seller, error) {
	g, err := ParseGSTIN(gstin)
	if err != nil {
		return Seller{}, err
	}
	return scanSeller(db.QueryRow(ctx, `SELECT `+sellerCols+` FROM sellers WHERE gstin = $1`, string(g)))
}

// SellerByID returns the seller with id, or ErrSellerNotFound.
func SellerByID(ctx context.Context, db DB, id int64) (Seller, error) {
	return scanSeller(db.QueryRow(ctx, `SELECT `+sellerCols+` FROM sellers WHERE id = $1`, id))
}

// Sellers returns every seller, oldest first.
func Sellers(ctx context.Context, db DB) ([]Seller, error) {
	rows, err := db.Query(ctx, `SELECT `+sellerCols+` FROM sellers ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("list sellers: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Seller, error) { return scanSeller(r) })
}

const sellerCols = `id, gstin, name, state_code, created_at, address, phone, email`

func scanSeller(row pgx.Row) (Seller, error) {
	var s Seller
	var g string
	err := row.Scan(&s.ID, &g, &s.Name, &s.StateCode, &s.CreatedAt, &s.Address, &s.Phone, &s.Email)
	if errors.Is(err, pgx.ErrNoRows) {
		return Seller{}, ErrSellerNotFound
	}
	if err != nil {
		return Seller{}, fmt.Errorf("read seller: %w", err)
	}
	s.GSTIN = GSTIN(g)
	return s, nil
}

// CreateSeries creates a series in its own transaction; see CreateSeriesTx.
func CreateSeries(ctx context.Context, db interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}, n NewSeries) (Series, error) {
	tx, err := db.Begin(ctx)
	if err != nil {
		return Series{}, translate(err, "begin")
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	s, err := CreateSeriesTx(ctx, tx, n)
	if err != nil {
		return Series{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return Series{}, translate(err, "commit")
	}
	return s, nil
}

// CreateSeriesTx validates n and inserts the series inside tx. It locks the
// seller row so that concurrent creations for one seller are checked against
// each other. It returns ErrInvalidSeries, ErrInvalidDocType or
// ErrInvalidFormat for bad values, ErrSellerNotFound, ErrDuplicateCode when
// the seller has a series with that code, and ErrOverlap when the format can
// render a number that another series of the seller renders in the same year.
func CreateSeriesTx(ctx context.Context, tx pgx.Tx, n NewSeries) (Series, error) {
	code, dt, f, err := n.validate()
	if err != nil {
		return Series{}, err
	}
	var one int
	// NO KEY UPDATE: serialises series creations of the seller without
	// conflicting with the KEY SHARE locks that invoice inserts take.
	err = tx.QueryRow(ctx, `SELECT 1 FROM sellers WHERE id = $1 FOR NO KEY UPDATE`, n.SellerID).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return Series{}, ErrSellerNotFound
	}
	if err != nil {
		return Series{}, translate(err, "lock seller")
	}
	existing, err := listSeries(ctx, tx, n.SellerID)
	if err != nil {
		return Series{}, err
	}
	for _, e := range existing {
		if e.Code == code {
			return Series{}, apperr.Errorf(ErrDuplicateCode, "series %s already exists", code)
		}
		if ex, ok := Overlap(f, e.Format); ok {
			return Series{}, apperr.Errorf(ErrOverlap, "format %s can render %s, which series %s (%s) can render too", f, ex, e.Code, e.Format)
		}
	}
	s := Series{SellerID: n.SellerID, Code: code, DocType: dt, Format: f, Shop: n.Shop}
	err = tx.QueryRow(ctx, `
		INSERT INTO series (seller_id, code, doc_type, format, capacity, shop)
		VALUES ($1, $2, $3, $4, $5, $6)
		RETURNING id, created_at`,
		n.SellerID, code, string(dt), f.String(), f.Capacity(), n.Shop).Scan(&s.ID, &s.CreatedAt)
	if isUnique(err) {
		return Series{}, apperr.Errorf(ErrDuplicateCode, "series %s already exists", code)
	}
	if err != nil {
		return Series{}, translate(err, "create series")
	}
	return s, nil
}

const seriesCols = `id, seller_id, code, doc_type, format, shop, created_at`

func scanSeries(row pgx.Row) (Series, error) {
	var s Series
	var dt, f string
	if err := row.Scan(&s.ID, &s.SellerID, &s.Code, &dt, &f, &s.Shop, &s.CreatedAt); err != nil {
		return Series{}, err
	}
	s.DocType = DocType(dt)
	var err error
	if s.Format, err = ParseFormat(f); err != nil {
		return Series{}, fmt.Errorf("stored format of series %d: %w", s.ID, err)
	}
	return s, nil
}

// Get returns the seller's series with code (case-insensitive), or ErrNotFound.
func Get(ctx context.Context, db DB, sellerID int64, code string) (Series, error) {
	c, err := ParseCode(code)
	if err != nil {
		return Series{}, apperr.Errorf(ErrNotFound, "series %q not found", code)
	}
	s, err := scanSeries(db.QueryRow(ctx, `SELECT `+seriesCols+` FROM series WHERE seller_id = $1 AND code = $2`, sellerID, c))
	if errors.Is(err, pgx.ErrNoRows) {
		return Series{}, apperr.Errorf(ErrNotFound, "series %s not found", c)
	}
	if err != nil {
		return Series{}, translate(err, "get series")
	}
	return s, nil
}

// GetByID returns the series with id, or ErrNotFound.
func GetByID(ctx context.Context, db DB, id int64) (Series, error) {
	s, err := scanSeries(db.QueryRow(ctx, `SELECT `+seriesCols+` FROM series WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return Series{}, ErrNotFound
	}
	if err != nil {
		return Series{}, translate(err, "get series")
	}
	return s, nil
}

func listSeries(ctx context.Context, db DB, sellerID int64) ([]Series, error) {
	rows, err := db.Query(ctx, `SELECT `+seriesCols+` FROM series WHERE seller_id = $1 ORDER BY code`, sellerID)
	if err != nil {
		return nil, translate(err, "list series")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Series, error) { return scanSeries(r) })
	if err != nil {
		return nil, translate(err, "list series")
	}
	return out, nil
}

// List returns the seller's series ordered by code, each with its counters
// (newest financial year first) and the last number issued in each.
func List(ctx context.Context, db DB, sellerID int64) ([]SeriesUsage, error) {
	all, err := listSeries(ctx, db, sellerID)
	if err != nil {
		return nil, err
	}
	rows, err := db.Query(ctx, `
		SELECT c.series_id, c.fy, c.last_serial, c.last_invoice_date, c.last_issued_at
		FROM series_counters c JOIN series s ON s.id = c.series_id
		WHERE s.seller_id = $1 ORDER BY c.series_id, c.fy DESC`, sellerID)
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
		u.FY = FY(fy)
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

// Block is a run of consecutive numbers taken in one step: serials First to
// First+N-1 of one series-year, all issued at IssuedAt.
type Block struct {
	Series   Series
	FY       FY
	First    int64
	N        int
	IssuedAt time.Time
	// ChainLength and ChainHead are the counter row's tamper-evident chain
	// state before this block: records appended for the block continue it.
	ChainLength int64
	ChainHead   []byte
}

// Serial returns the i-th serial of the block (0-based).
func (b Block) Serial(i int) int64 { return b.First + int64(i) }

// Number returns the rendered i-th number of the block (0-based).
func (b Block) Number(i int) string {
	n, _ := b.Series.Format.Render(b.FY, b.Serial(i))
	return n
}

// Options tune an allocation.
type Options struct {
	// LockTimeout bounds the wait for the counter row's lock; 0 waits as long
	// as the transaction's own lock_timeout allows.
	LockTimeout time.Duration
	// LockWaited, when set, is told how long each round trip that locks
	// counter rows took (NextMany's: the lock wait plus one round trip),
	// also when it gave up at LockTimeout. For metrics; it must return at
	// once.
	LockWaited func(time.Duration)
}

// Next takes the next number of s for an invoice dated date (a civil date in
// IST, see FYOf) inside the caller's transaction, stamped with now or, if the
// clock went back, the series-year's last issue time. See NextN.
func Next(ctx context.Context, tx pgx.Tx, s Series, date, now time.Time, opt Options) (Block, error) {
	return NextN(ctx, tx, s, date, now, 1, opt)
}

// NextN takes n consecutive numbers of s for invoices dated date inside the
// caller's transaction. The counter row of (s, FY of date) is created on first
// use and stays locked until tx ends: a rollback returns the numbers, a commit
// makes them final. Call it as late as possible in the transaction, right
// before inserting the rows it numbers and committing: the time the lock is
// held caps the series' throughput (one writer per series-year).
//
// It returns ErrInvalidDate when date lies outside the supported financial
// years, ErrDateOutOfOrder when date is earlier than the series-year's last
// invoice date, ErrExhausted when the format has fewer than n numbers left,
// and ErrLockTimeout when opt.LockTimeout passes before the lock is had. After
// any error from the database the transaction is aborted and must be rolled
// back.
func NextN(ctx context.Context, tx pgx.Tx, s Series, date, now time.Time, n int, opt Options) (Block, error) {
	blocks, errs, err := NextMany(ctx, tx, []Take{{Series: s, Date: date, N: n}}, now, opt)
	if err != nil {
		return Block{}, err
	}
	return blocks[0], errs[0]
}

// Take asks for N consecutive numbers of Series for invoices dated Date.
type Take struct {
	Series Series
	Date   time.Time
	N      int
}

// NextMany takes numbers for several series-years in one statement and one
// round trip, inside the caller's transaction: it is NextN for many series
// at once, so that one transaction and one COMMIT can number invoices of
// many series. The counter rows are locked in (series, year) order, so two
// transactions that each take their counter rows in one NextMany call never
// deadlock each other (one that calls NextN for one series and later for a
// series of lower id can; its lock timeout then ends the wait). Every row
// stays locked until tx ends.
// No two takes may name the same series-year.
//
// It returns a block and an error per take, in order: a take refused on
// its own (ErrInvalidDate, ErrDateOutOfOrder, ErrExhausted) has its error
// and a zero block, and consumed nothing. The last result is an error that
// concerns them all (ErrLockTimeout when some row stayed locked past
// opt.LockTimeout, a database error); the transaction is then aborted.
func NextMany(ctx context.Context, tx pgx.Tx, takes []Take, now time.Time, opt Options) ([]Block, []error, error) {
	blocks := make([]Block, len(takes))
	errs := make([]error, len(takes))
	type rowKey struct {
		id int64
		fy FY
	}
	index := map[rowKey]int{}
	var ids, ns, caps, sellers []int64
	var fys []int32
	var dates []time.Time
	for i, t := range takes {
		fy := FYOf(t.Date)
		switch {
		case !fy.Valid():
			errs[i] = apperr.Errorf(ErrInvalidDate, "invoice date %s is outside the supported financial years %s to %s", t.Date.Format(time.DateOnly), FY(MinFY), FY(MaxFY))
			continue
		case t.N < 1:
			return nil, nil, fmt.Errorf("series: NextMany: n = %d, want at least 1", t.N)
		case int64(t.N) > t.Series.Format.Capacity():
			errs[i] = apperr.Errorf(ErrExhausted, "series %s holds only %d numbers a year", t.Series.Code, t.Series.Format.Capacity())
			continue
		}
		k := rowKey{t.Series.ID, fy}
		if _, dup := index[k]; dup {
			return nil, nil, fmt.Errorf("series: NextMany: series %d year %s taken twice in one call", t.Series.ID, fy)
		}
		index[k] = i
		blocks[i] = Block{Series: t.Series, FY: fy, N: t.N}
		ids, fys, ns, caps, dates = append(ids, t.Series.ID), append(fys, int32(fy)), append(ns, int64(t.N)), append(caps, t.Series.Format.Capacity()), append(dates, t.Date)
		sellers = append(sellers, t.Series.SellerID)
	}
	if len(ids) == 0 {
		return blocks, errs, nil
	}
	got := map[rowKey]bool{}
	// One round trip: the lock timeout (transaction-local, restored
	// afterwards) and the upsert are pipelined. ORDER BY fixes the order
	// in which rows are locked.
	batch := &pgx.Batch{}
	QueueLockTimeout(batch, opt)
	batch.Queue(`
		INSERT INTO series_counters AS c (series_id, fy, seller_id, last_serial, capacity, last_invoice_date, last_issued_at)
		SELECT u.series_id, u.fy, u.seller_id, u.n, u.cap, u.d, $6
		FROM unnest($1::bigint[], $2::int[], $3::bigint[], $4::date[], $5::bigint[], $7::bigint[]) AS u(series_id, fy, n, d, cap, seller_id)
		ORDER BY u.series_id, u.fy
		ON CONFLICT (series_id, fy, seller_id) DO UPDATE
		SET last_serial = c.last_serial + EXCLUDED.last_serial,
		    last_invoice_date = EXCLUDED.last_invoice_date,
		    last_issued_at = GREATEST(c.last_issued_at, EXCLUDED.last_issued_at)
		WHERE c.last_invoice_date <= EXCLUDED.last_invoice_date
		  AND c.last_serial + EXCLUDED.last_serial <= EXCLUDED.capacity
		RETURNING series_id, fy, last_serial, last_issued_at, chain_length, chain_head`,
		ids, fys, ns, dates, caps, now, sellers).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var id, last int64
			var fy int32
			var b Block
			if err := rows.Scan(&id, &fy, &last, &b.IssuedAt, &b.ChainLength, &b.ChainHead); err != nil {
				return err
			}
			k := rowKey{id, FY(fy)}
			i, ok := index[k]
			if !ok {
				return fmt.Errorf("series: counter row %d/%d not asked for", id, fy)
			}
			got[k] = true
			blocks[i].IssuedAt, blocks[i].ChainLength, blocks[i].ChainHead = b.IssuedAt, b.ChainLength, b.ChainHead
			blocks[i].First = last - int64(blocks[i].N) + 1
		}
		return rows.Err()
	})
	QueueLockTimeoutRestore(batch, opt)
	began := time.Now()
	err := tx.SendBatch(ctx, batch).Close()
	if opt.LockWaited != nil {
		opt.LockWaited(time.Since(began))
	}
	if err != nil {
		return nil, nil, translate(err, "take numbers")
	}
	for k, i := range index {
		if got[k] {
			continue
		}
		blocks[i] = Block{}
		var err error
		if errs[i], err = explainRefusal(ctx, tx, takes[i].Series, k.fy, takes[i].Date, takes[i].N); err != nil {
			return nil, nil, err
		}
	}
	return blocks, errs, nil
}

// explainRefusal reads the (already locked) counter row after the upsert's
// WHERE refused to advance it and returns the reason as the first result;
// the second is a database error.
func explainRefusal(ctx context.Context, tx pgx.Tx, s Series, fy FY, date time.Time, n int) (error, error) {
	var last int64
	var lastDate time.Time
	err := tx.QueryRow(ctx, `SELECT last_serial, last_invoice_date FROM series_counters WHERE series_id = $1 AND fy = $2`,
		s.ID, int(fy)).Scan(&last, &lastDate)
	if err != nil {
		return nil, translate(err, "read counter")
	}
	if date.Before(lastDate) {
		return apperr.Errorf(ErrDateOutOfOrder, "invoice date %s is earlier than %s, the last invoice date of series %s in %s",
			date.Format(time.DateOnly), lastDate.Format(time.DateOnly), s.Code, fy), nil
	}
	return apperr.Errorf(ErrExhausted, "series %s has %d of %d numbers left in %s, %d asked", s.Code, s.Format.Capacity()-last, s.Format.Capacity(), fy, n), nil
}

// Counter returns the counter row of series id in fy without locking it, or
// ErrNotFound when no number was ever taken there.
func Counter(ctx context.Context, db DB, seriesID int64, fy FY) (Usage, error) {
	u := Usage{FY: fy}
	err := db.QueryRow(ctx, `SELECT last_serial, last_invoice_date, last_issued_at FROM series_counters WHERE series_id = $1 AND fy = $2`,
		seriesID, int(fy)).Scan(&u.LastSerial, &u.LastInvoiceDate, &u.LastIssuedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Usage{}, ErrNotFound
	}
	if err != nil {
		return Usage{}, translate(err, "read counter")
	}
	return u, nil
}

// LockChain locks the counter row of (seriesID, fy) for a record that takes
// no number (a cancellation) and returns its chain state. It returns
// ErrNotFound when the row does not exist and ErrLockTimeout as NextN does.
func LockChain(ctx context.Context, tx pgx.Tx, seriesID int64, fy FY, opt Options) (length int64, head []byte, err error) {
	batch := &pgx.Batch{}
	QueueLockTimeout(batch, opt)
	batch.Queue(`SELECT chain_length, chain_head FROM series_counters WHERE series_id = $1 AND fy = $2 FOR UPDATE`,
		seriesID, int(fy)).QueryRow(func(row pgx.Row) error { return row.Scan(&length, &head) })
	QueueLockTimeoutRestore(batch, opt)
	err = tx.SendBatch(ctx, batch).Close()
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil, ErrNotFound
	}
	return length, head, translate(err, "lock counter")
}

// QueueLockTimeout queues, when opt asks for one, a transaction-local
// lock_timeout for the statements queued after it, saving the
// transaction's own value so that QueueLockTimeoutRestore, queued after
// them, can put it back in the same round trip. A lock wait past it fails
// with SQLSTATE 55P03, which the store packages translate to
// ErrLockTimeout.
func QueueLockTimeout(b *pgx.Batch, opt Options) {
	if opt.LockTimeout <= 0 {
		return
	}
	b.Queue(`SELECT set_config('invoiced.saved_lock_timeout', current_setting('lock_timeout'), true),
	                set_config('lock_timeout', $1, true)`,
		fmt.Sprintf("%dms", max(1, opt.LockTimeout.Milliseconds())))
}

// QueueLockTimeoutRestore queues the restore of the lock_timeout that
// QueueLockTimeout saved.
func QueueLockTimeoutRestore(b *pgx.Batch, opt Options) {
	if opt.LockTimeout <= 0 {
		return
	}
	b.Queue(`SELECT set_config('lock_timeout', current_setting('invoiced.saved_lock_timeout'), true)`)
}

// translate maps database errors to the package's errors; nil stays nil.
func translate(err error, what string) error {
	if err == nil {
		return nil
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		switch pg.Code {
		case pgerrcode.LockNotAvailable:
			return apperr.WithCause(ErrLockTimeout, err)
		case codeLeased:
			return apperr.WithCause(ErrLeased, err)
		}
	}
	return fmt.Errorf("series: %s: %w", what, err)
}

func isUnique(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && pg.Code == pgerrcode.UniqueViolation
}

// QueueAdvanceChains queues on b one update storing the chain state of
// several series-years (parallel slices), after records were appended. The
// counter rows must already be locked by the transaction b runs in.
func QueueAdvanceChains(b *pgx.Batch, seriesIDs []int64, fys []int32, lengths []int64, heads [][]byte) {
	b.Queue(`UPDATE series_counters c SET chain_length = u.len, chain_head = u.head
		FROM unnest($1::bigint[], $2::int[], $3::bigint[], $4::bytea[]) AS u(series_id, fy, len, head)
		WHERE c.series_id = u.series_id AND c.fy = u.fy`, seriesIDs, fys, lengths, heads)
}

// codeMoved is the SQLSTATE QueueAdvance's check raises (invoiced_require,
// migration 00002).
const codeMoved = "IV001"

// IsMoved reports whether err is the database error of a failed
// QueueAdvance check.
func IsMoved(err error) bool {
	var pg *pgconn.PgError
	return errors.Is(err, ErrMoved) || errors.As(err, &pg) && pg.Code == codeMoved
}

// State is a counter row as a transaction left it: the last serial taken,
// its invoice date and issue time, and the chain after the last record. A
// process that remembers the state it committed can predict the next block
// without reading the row first (Predict, QueueAdvance).
type State struct {
	LastSerial   int64
	LastDate     time.Time
	LastIssuedAt time.Time
	ChainLength  int64
	ChainHead    []byte
}

// After returns the state of the counter row once block b (dated date) and
// its records are committed: appended records and head as given.
func (b Block) After(date time.Time, chainLength int64, chainHead []byte) State {
	return State{LastSerial: b.First + int64(b.N) - 1, LastDate: date, LastIssuedAt: b.IssuedAt,
		ChainLength: chainLength, ChainHead: chainHead}
}

// Predict returns the block NextMany would take for t, stamped now, if the
// counter row were in state st. ok is false when NextMany would refuse it
// (date invalid or out of order, numbers exhausted): only NextMany gives the
// refusal its error.
func Predict(t Take, st State, now time.Time) (Block, bool) {
	fy := FYOf(t.Date)
	if !fy.Valid() || t.N < 1 || t.Date.Before(st.LastDate) || st.LastSerial+int64(t.N) > t.Series.Format.Capacity() {
		return Block{}, false
	}
	at := now.Truncate(time.Microsecond)
	if at.Before(st.LastIssuedAt) {
		at = st.LastIssuedAt // the clock went back: issue times never do
	}
	return Block{Series: t.Series, FY: fy, First: st.LastSerial + 1, N: t.N, IssuedAt: at,
		ChainLength: st.ChainLength, ChainHead: st.ChainHead}, true
}

// Advance moves one counter row from the state a block was predicted from
// (Predict) to the state after it: After is Block.After(the block's
// invoice date, the chain after the block's records).
type Advance struct {
	Block Block
	After State
}

// QueueAdvance queues on b the statements that lock the rows of advs in a
// fixed order, check that each is still in the state its block was
// predicted from, and write each once with the block taken and the new
// chain state. When a row has moved since (another transaction took
// numbers or appended to its chain), the batch fails with an error for
// which IsMoved reports true, and the transaction is aborted having taken
// nothing; the caller rolls back and takes the numbers with NextMany. A
// lock wait past opt.LockTimeout fails with SQLSTATE 55P03 (lock not
// available). No two advs may share a series-year.
func QueueAdvance(b *pgx.Batch, advs []Advance, opt Options) {
	n := len(advs)
	ids, lasts, news, lens0, lens := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	fys := make([]int32, n)
	heads0, heads := make([][]byte, n), make([][]byte, n)
	dates, ats := make([]time.Time, n), make([]time.Time, n)
	for i, a := range advs {
		ids[i], fys[i] = a.Block.Series.ID, int32(a.Block.FY)
		lasts[i], news[i] = a.Block.First-1, a.After.LastSerial
		lens0[i], heads0[i], lens[i], heads[i] = a.Block.ChainLength, a.Block.ChainHead, a.After.ChainLength, a.After.ChainHead
		dates[i], ats[i] = a.After.LastDate, a.After.LastIssuedAt
	}
	QueueLockTimeout(b, opt)
	// ORDER BY sits below the row locking, so rows are locked in key order.
	b.Queue(`
		SELECT invoiced_require(count(*) = $6 AND bool_and(r.last_serial = u.last AND r.chain_length = u.len
			AND r.chain_head IS NOT DISTINCT FROM u.head), $7, 'counter row moved since it was predicted')
		FROM (SELECT c.series_id, c.fy, c.last_serial, c.chain_length, c.chain_head
		      FROM series_counters c JOIN unnest($1::bigint[], $2::int[]) AS k(series_id, fy)
		        ON c.series_id = k.series_id AND c.fy = k.fy
		      ORDER BY c.series_id, c.fy FOR UPDATE OF c) r
		JOIN unnest($1::bigint[], $2::int[], $3::bigint[], $4::bigint[], $5::bytea[]) AS u(series_id, fy, last, len, head)
		  ON r.series_id = u.series_id AND r.fy = u.fy`,
		ids, fys, lasts, lens0, heads0, n, codeMoved)
	QueueLockTimeoutRestore(b, opt)
	b.Queue(`
		UPDATE series_counters c SET last_serial = u.last, last_invoice_date = u.d, last_issued_at = u.at,
			chain_length = u.len, chain_head = u.head
		FROM unnest($1::bigint[], $2::int[], $3::bigint[], $4::date[], $5::timestamptz[], $6::bigint[], $7::bytea[])
			AS u(series_id, fy, last, d, at, len, head)
		WHERE c.series_id = u.series_id AND c.fy = u.fy`,
		ids, fys, news, dates, ats, lens, heads)
}
