package series

import (
	"errors"

	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/db"
)

// Errors returned by this package. Match them with errors.Is; the returned
// errors carry a specific message and the sentinel's code.
var (
	ErrOverlap       = apperr.New(apperr.Conflict, "overlapping_format", "the format can render a number another series of this seller renders")
	ErrDuplicateCode = apperr.New(apperr.Conflict, "duplicate_series", "a series with this code already exists")
	// ErrTooManySeries: the seller has MaxPerSeller series already.
	ErrTooManySeries = apperr.New(apperr.Conflict, "too_many_series", "the seller has as many series as one seller may")
	ErrNotFound      = apperr.New(apperr.NotFound, "series_not_found", "series not found")
	// ErrLeased: the series is leased to an offline device (package
	// lease), and the transaction writing its counter rows does not name
	// the lease: the lease guard, a trigger on series_counters, refused it
	// (db.CodeLeased; IsLeased).
	ErrLeased         = apperr.New(apperr.Conflict, "series_leased", "the series is leased to an offline device: only that device numbers it until the lease ends")
	ErrDateOutOfOrder = apperr.New(apperr.Conflict, "date_out_of_order", "the invoice date is earlier than the last invoice date of the series in this financial year")
	// ErrLockTimeout is returned when a counter row stays locked past
	// Options.LockTimeout (db.ErrLockTimeout, class db.LockTimeout).
	ErrLockTimeout = db.ErrLockTimeout
	// ErrMoved is returned by a transaction that queued QueueAdvance when
	// a counter row was not in the predicted state; it took nothing
	// (db.ErrRowMoved, class db.RowMoved).
	ErrMoved = db.ErrRowMoved
)

// IsLeased reports whether err is the lease guard's refusal (ErrLeased).
func IsLeased(err error) bool {
	return errors.Is(err, ErrLeased) || db.SQLState(err) == db.CodeLeased
}
