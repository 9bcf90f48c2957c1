package invoice

import (
	"strconv"

	"github.com/invoiced/invoiced/series"
)

// APIID returns an invoice's id in the API: its series code, financial
// year and serial, "CH1-2026-7". It is unique per seller, says nothing a
// seller does not know from the number itself, and nothing about other
// sellers (the database's own ids are global, so they would tell each
// seller how many invoices everyone else issued in between). The API's
// answers and the audit exports both name invoices by it.
func APIID(code string, fy series.FY, serial int64) string {
	return code + "-" + strconv.Itoa(int(fy)) + "-" + strconv.FormatInt(serial, 10)
}
