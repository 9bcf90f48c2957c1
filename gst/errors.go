package gst

import "github.com/invoiced/invoiced/internal/apperr"

// Errors returned by this package. Match them with errors.Is; the returned
// errors carry a specific message and the sentinel's code.
var (
	ErrInvalidGSTIN   = apperr.New(apperr.Invalid, "invalid_gstin", "the GSTIN is not valid")
	ErrInvalidFormat  = apperr.New(apperr.Invalid, "invalid_format", "the number format is not valid")
	ErrInvalidSeries  = apperr.New(apperr.Invalid, "invalid_series", "the series is not valid")
	ErrInvalidDate    = apperr.New(apperr.Invalid, "invalid_date", "the invoice date is not valid")
	ErrExhausted      = apperr.New(apperr.Conflict, "series_exhausted", "the series has no numbers left in this financial year")
	ErrInvalidDocType = apperr.New(apperr.Invalid, "invalid_doc_type", "unknown document type")
)
