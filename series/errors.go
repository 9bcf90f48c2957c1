package series

import (
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/db"
)

// Errors returned by this package. Match them with errors.Is; the returned
// errors carry a specific message and the sentinel's code.
var (
	ErrOverlap       = apperr.New(apperr.Conflict, "overlapping_format", "the format can render a number another series of this seller renders")
	ErrDuplicateCode = apperr.New(apperr.Conflict, "duplicate_series", "a series with this code already exists")
	// ErrTooManySeries: the seller has MaxPerSeller series already.
	ErrTooManySeries  = apperr.New(apperr.Conflict, "too_many_series", "the seller has as many series as one seller may")
	ErrNotFound       = apperr.New(apperr.NotFound, "series_not_found", "series not found")
	ErrDateOutOfOrder = apperr.New(apperr.Conflict, "date_out_of_order", "the invoice date is earlier than the last invoice date of the series in this financial year")
	// ErrLockTimeout is returned when a counter row stays locked past
	// Options.LockTimeout (db.ErrLockTimeout, class db.LockTimeout).
	ErrLockTimeout = db.ErrLockTimeout
	// ErrMoved is returned by a transaction that queued QueueAdvance when
	// a counter row was not in the predicted state; it took nothing
	// (db.ErrRowMoved, class db.RowMoved).
	ErrMoved = db.ErrRowMoved
)
