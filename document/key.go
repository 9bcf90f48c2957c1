package document

import (
	"strconv"
	"strings"

	"github.com/invoiced/invoiced/gst"
)

// An invoice's key is its id in the API and the console: series code,
// financial year and serial, "CH1-2026-7". Unlike the database's global
// id it says nothing the invoice number does not already say to its seller
// (docs/threat-model.md).

// Key returns the key of the invoice with serial in series code and year
// fy: "CH1-2026-7".
func Key(code string, fy gst.FY, serial int64) string {
	return code + "-" + strconv.Itoa(int(fy)) + "-" + strconv.FormatInt(serial, 10)
}

// KeyOf returns inv's key (Key of its series, year and serial).
func KeyOf(inv Invoice) string { return Key(inv.SeriesCode, inv.FY, inv.Serial) }

// ParseKey returns the series code (as written, not yet normalised),
// financial year and serial of key, and false when key is not of Key's
// form: a valid year and a serial from 1, both written canonically (no
// sign, no leading zero).
func ParseKey(key string) (code string, fy gst.FY, serial int64, ok bool) {
	i := strings.LastIndexByte(key, '-')
	if i < 0 {
		return "", 0, 0, false
	}
	j := strings.LastIndexByte(key[:i], '-')
	if j < 1 {
		return "", 0, 0, false
	}
	y, ferr := strconv.Atoi(key[j+1 : i])
	n, serr := strconv.ParseInt(key[i+1:], 10, 64)
	if ferr != nil || serr != nil || !gst.FY(y).Valid() || n < 1 ||
		strconv.Itoa(y) != key[j+1:i] || strconv.FormatInt(n, 10) != key[i+1:] {
		return "", 0, 0, false
	}
	return key[:j], gst.FY(y), n, true
}
