package document

import "github.com/invoiced/invoiced/internal/apperr"

// ErrInvalid is returned, with a message naming the field, for a request
// or a value that is not a valid invoice: see Prepare, PrepareContent,
// ParseMoney and CancelOffline. Match it with errors.Is.
var ErrInvalid = apperr.New(apperr.Invalid, "invalid_invoice", "the invoice is not valid")
