package series

import (
	"context"
	"regexp"
	"strings"
	"time"

	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/freetext"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DB is what the store needs from a connection: *pgxpool.Pool, *pgx.Conn and
// pgx.Tx all satisfy it.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Seller is one GST registration.
type Seller struct {
	ID        int64
	GSTIN     GSTIN
	Name      string
	StateCode string
	CreatedAt time.Time
}

// Series is one numbering series of a seller.
type Series struct {
	ID        int64
	SellerID  int64
	Code      string
	DocType   DocType
	Format    Format
	Shop      string
	CreatedAt time.Time
}

// NewSeries is what CreateSeries needs.
type NewSeries struct {
	SellerID int64
	Code     string
	DocType  string
	Format   string
	Shop     string
}

// Usage is the state of one series-year's counter.
type Usage struct {
	FY              FY
	LastSerial      int64
	LastNumber      string
	LastInvoiceDate time.Time
	LastIssuedAt    time.Time
}

// SeriesUsage is a series with its counters, newest year first.
type SeriesUsage struct {
	Series
	Years []Usage
}

var codeRE = regexp.MustCompile(`^[A-Z0-9][A-Z0-9-]{0,15}$`)

// ParseCode upper-cases and validates a series code: 1–16 characters of
// A-Z, 0-9 and '-', not starting with '-'. It returns ErrInvalidSeries
// otherwise. Codes appear in URL paths, so '/' is not allowed.
func ParseCode(s string) (string, error) {
	c := strings.ToUpper(strings.TrimSpace(s))
	if !codeRE.MatchString(c) {
		return "", apperr.Errorf(ErrInvalidSeries, "series code %q must be 1 to 16 characters of A-Z, 0-9 and '-', starting with a letter or digit", s)
	}
	return c, nil
}

const maxShopLen = 200

func (n NewSeries) validate() (code string, dt DocType, f Format, err error) {
	if code, err = ParseCode(n.Code); err != nil {
		return
	}
	if dt, err = ParseDocType(n.DocType); err != nil {
		return
	}
	if f, err = ParseFormat(n.Format); err != nil {
		return
	}
	if len(n.Shop) > maxShopLen {
		err = apperr.Errorf(ErrInvalidSeries, "shop label is longer than %d bytes", maxShopLen)
	} else if p := freetext.Problem(n.Shop); p != "" {
		err = apperr.Errorf(ErrInvalidSeries, "shop label holds %s; control, bidi and invisible characters are refused", p)
	}
	return
}
