package sellers

import "github.com/invoiced/invoiced/internal/apperr"

// Errors returned by this package. Match them with errors.Is; the returned
// errors carry a specific message and the sentinel's code.
var (
	ErrNotFound = apperr.New(apperr.NotFound, "seller_not_found", "seller not found")
	ErrExists   = apperr.New(apperr.Conflict, "duplicate_seller", "a seller with this GSTIN already exists")
)
