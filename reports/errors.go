package reports

import "github.com/invoiced/invoiced/internal/apperr"

// Errors returned by this package; match them with errors.Is.
var (
	// ErrInvalidFormat is returned by WriteAudit for a format other than
	// csv, json and xlsx.
	ErrInvalidFormat = apperr.New(apperr.Invalid, "invalid_report_format", "the report format must be csv, json or xlsx")
	// ErrInvalidPeriod is returned by ParsePeriod for a period it cannot read.
	ErrInvalidPeriod = apperr.New(apperr.Invalid, "invalid_period", "the return period is not valid")
)
