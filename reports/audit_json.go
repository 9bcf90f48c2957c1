package reports

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
)

// This file holds the JSON export of the serial audit.

type jsonWriter struct {
	w     *bufio.Writer
	first bool
	rows  bool // beginRows was called
}

func newJSONWriter(w io.Writer) *jsonWriter {
	return &jsonWriter{w: bufio.NewWriterSize(w, 64<<10), first: true}
}

func (jw *jsonWriter) summary(s Summary) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if _, err := jw.w.WriteString(`{"summary":`); err != nil {
		return err
	}
	_, err = jw.w.Write(b)
	return err
}

func (jw *jsonWriter) beginRows() error {
	jw.rows = true
	_, err := jw.w.WriteString(",\n\"rows\":[")
	return err
}

func (jw *jsonWriter) row(r *Row) error {
	items, err := rowItems(r.items)
	if err != nil {
		return fmt.Errorf("reports: items of serial %d: %w", r.Serial, err)
	}
	r.Items = items
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	sep := ",\n"
	if jw.first {
		sep = "\n"
	}
	jw.first = false
	if _, err := jw.w.WriteString(sep); err != nil {
		return err
	}
	_, err = jw.w.Write(b)
	return err
}

func (jw *jsonWriter) close() error {
	end := "}\n"
	if jw.rows {
		end = "\n]}\n"
	}
	if _, err := jw.w.WriteString(end); err != nil {
		return err
	}
	return jw.w.Flush()
}

func (jw *jsonWriter) abort() {}
