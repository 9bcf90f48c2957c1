package reports

import "github.com/invoiced/invoiced/internal/apperr"

// Errors returned by this package; match them with errors.Is.
var (
	// ErrInvalidFormat is returned by WriteAudit for a format other than
	// csv, json and xlsx.
	ErrInvalidFormat = apperr.New(apperr.Invalid, "invalid_report_format", "the report format must be csv, json or xlsx")
	// ErrInvalidPeriod is returned by ParsePeriod for a period it cannot read.
	ErrInvalidPeriod = apperr.New(apperr.Invalid, "invalid_period", "the return period is not valid")
	// ErrSeriesYearNotFound is returned by the audit and Verify when the
	// series-year (or, for Verify, every series-year its filters select)
	// holds nothing: no counter row, invoice or chain record.
	ErrSeriesYearNotFound = apperr.New(apperr.NotFound, "series_year_not_found", "no series-year matches")
)
