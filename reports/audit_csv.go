package reports

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"strings"
)

// This file holds the CSV export of the serial audit.

// utf8BOM lets Excel detect UTF-8.
const utf8BOM = "\uFEFF"

type csvWriter struct {
	w             *bufio.Writer
	c             *csv.Writer
	rec           []string
	summaryFields []summaryField // set by summary until beginRows
}

func newCSVWriter(w io.Writer) *csvWriter {
	bw := bufio.NewWriterSize(w, 64<<10)
	c := csv.NewWriter(bw)
	c.UseCRLF = true // RFC 4180
	return &csvWriter{w: bw, c: c, rec: make([]string, len(auditColumns))}
}

// summary writes the summary as a table of its own (Field, Value), which
// only WriteAuditSummary asks for: the audit's CSV is the rows alone.
func (cw *csvWriter) summary(s Summary) error {
	cw.summaryFields = s.fields()
	return nil
}

func (cw *csvWriter) beginRows() error {
	cw.summaryFields = nil
	if _, err := cw.w.WriteString(utf8BOM); err != nil {
		return err
	}
	return cw.c.Write(columnHeaders())
}

func (cw *csvWriter) row(r *Row) error {
	for i, c := range auditColumns {
		cw.rec[i] = c.csv(r)
	}
	return cw.c.Write(cw.rec)
}

func (cw *csvWriter) close() error {
	if cw.summaryFields != nil { // the summary alone
		if _, err := cw.w.WriteString(utf8BOM); err != nil {
			return err
		}
		if err := cw.c.Write([]string{"Field", "Value"}); err != nil {
			return err
		}
		for _, f := range cw.summaryFields {
			if err := cw.c.Write([]string{f.label, defuse(fmt.Sprint(f.value))}); err != nil {
				return err
			}
		}
	}
	cw.c.Flush()
	if err := cw.c.Error(); err != nil {
		return err
	}
	return cw.w.Flush()
}

func (cw *csvWriter) abort() {}

// defuse prefixes free text that a spreadsheet would run as a formula
// (leading =, +, -, @, tab or CR, after any spaces) with an apostrophe
// (OWASP "CSV injection"). A spreadsheet in a locale whose list separator
// is ';' splits each line at semicolons, quotes or not (a quote opens a
// field only at its start), so every ';'-separated part is defused as if
// it began a cell. The cancel reason and the buyer's name are the free
// text in the rows.
func defuse(s string) string {
	if !strings.ContainsRune(s, ';') {
		return defusePart(s)
	}
	parts := strings.Split(s, ";")
	for i, p := range parts {
		parts[i] = defusePart(p)
	}
	return strings.Join(parts, ";")
}

func defusePart(s string) string {
	if t := strings.TrimLeft(s, " "); t != "" && strings.ContainsRune("=+-@\t\r", rune(t[0])) {
		return "'" + s
	}
	return s
}
