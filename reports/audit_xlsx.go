package reports

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"

	"github.com/xuri/excelize/v2"
)

// This file holds the XLSX export of the serial audit.

// maxSheetRows is how many invoice rows one sheet takes below its header
// (Excel's limit is 1,048,576 rows); more continue on "Rows 2", "Rows 3"….
const maxSheetRows = 1048576 - 1

type xlsxWriter struct {
	w     io.Writer
	f     *excelize.File
	sw    *excelize.StreamWriter
	sheet int // number of the current rows sheet
	n     int // rows written to it
	st    cellStyles
	cells []any
}

func newXLSXWriter(w io.Writer) *xlsxWriter {
	return &xlsxWriter{w: w, f: excelize.NewFile(), cells: make([]any, len(auditColumns))}
}

func (xw *xlsxWriter) styles() error {
	var err error
	styles := []struct {
		id *int
		st *excelize.Style
	}{
		{&xw.st.bold, &excelize.Style{Font: &excelize.Font{Bold: true}}},
		{&xw.st.left, &excelize.Style{Alignment: &excelize.Alignment{Horizontal: "left"}}},
		{&xw.st.amount, &excelize.Style{CustomNumFmt: ptr("#,##0.00")}},
		{&xw.st.date, &excelize.Style{CustomNumFmt: ptr("yyyy-mm-dd")}},
		// An IST date-time shown as the CSV writes it (without the
		// microseconds): a cell holds no time zone, the format names it.
		// The offset's characters are escaped one by one: in quotes,
		// excelize's renderer reads the 05 as minutes.
		{&xw.st.datetime, &excelize.Style{CustomNumFmt: ptr(`yyyy-mm-dd\Thh:mm:ss\+\0\5\:\3\0`)}},
	}
	for _, s := range styles {
		if *s.id, err = xw.f.NewStyle(s.st); err != nil {
			return err
		}
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// printLayout makes sheet print landscape, fitted to the page width.
func (xw *xlsxWriter) printLayout(sheet string) error {
	if err := xw.f.SetPageLayout(sheet, &excelize.PageLayoutOptions{
		Orientation: ptr("landscape"), FitToWidth: ptr(1), FitToHeight: ptr(0),
	}); err != nil {
		return err
	}
	return xw.f.SetSheetProps(sheet, &excelize.SheetPropsOptions{FitToPage: ptr(true)})
}

func (xw *xlsxWriter) summary(s Summary) error {
	if err := xw.styles(); err != nil {
		return err
	}
	if err := xw.f.SetSheetName("Sheet1", "Summary"); err != nil {
		return err
	}
	if err := xw.printLayout("Summary"); err != nil {
		return err
	}
	sw, err := xw.f.NewStreamWriter("Summary")
	if err != nil {
		return err
	}
	if err := sw.SetColWidth(1, 1, 26); err != nil {
		return err
	}
	if err := sw.SetColWidth(2, 2, 100); err != nil {
		return err
	}
	if err := sw.SetRow("A1", []any{excelize.Cell{StyleID: xw.st.bold, Value: "Field"}, excelize.Cell{StyleID: xw.st.bold, Value: "Value"}}); err != nil {
		return err
	}
	for i, f := range s.fields() {
		cell, _ := excelize.CoordinatesToCellName(1, i+2)
		if err := sw.SetRow(cell, []any{excelize.Cell{StyleID: xw.st.bold, Value: f.label}, excelize.Cell{StyleID: xw.st.left, Value: f.value}}); err != nil {
			return err
		}
	}
	return sw.Flush()
}

func (xw *xlsxWriter) beginRows() error { return xw.newRowsSheet() }

// newRowsSheet flushes the current rows sheet, if any, and starts the next.
func (xw *xlsxWriter) newRowsSheet() error {
	if xw.sw != nil {
		if err := xw.sw.Flush(); err != nil {
			return err
		}
	}
	xw.sheet++
	name := "Rows"
	if xw.sheet > 1 {
		name = fmt.Sprintf("Rows %d", xw.sheet)
	}
	if _, err := xw.f.NewSheet(name); err != nil {
		return err
	}
	if err := xw.printLayout(name); err != nil {
		return err
	}
	sw, err := xw.f.NewStreamWriter(name)
	if err != nil {
		return err
	}
	for i, c := range auditColumns {
		if err := sw.SetColWidth(i+1, i+1, c.width); err != nil {
			return err
		}
	}
	if err := sw.SetPanes(&excelize.Panes{Freeze: true, YSplit: 1, TopLeftCell: "A2", ActivePane: "bottomLeft"}); err != nil {
		return err
	}
	head := make([]any, len(auditColumns))
	for i, c := range auditColumns {
		head[i] = cellOf(xw.st.bold, c.header)
	}
	if err := sw.SetRow("A1", head); err != nil {
		return err
	}
	xw.sw, xw.n = sw, 0
	return nil
}

func (xw *xlsxWriter) row(r *Row) error {
	if xw.n == maxSheetRows {
		if err := xw.newRowsSheet(); err != nil {
			return err
		}
	}
	xw.n++
	for i, c := range auditColumns {
		v, err := c.xlsx(r, &xw.st)
		if err != nil {
			return err
		}
		xw.cells[i] = v
	}
	cell, _ := excelize.CoordinatesToCellName(1, xw.n+1)
	return xw.sw.SetRow(cell, xw.cells)
}

// cellOf returns a cell holding v in style.
func cellOf(style int, v any) excelize.Cell { return excelize.Cell{StyleID: style, Value: v} }

func (xw *xlsxWriter) close() error {
	if xw.sw != nil {
		if err := xw.sw.Flush(); err != nil {
			return err
		}
	}
	// File.WriteTo assembles the whole zip in a bytes.Buffer it passes to
	// the ZipWriter factory; ignoring that buffer and zipping straight to
	// w keeps memory flat. (SetActiveSheet is not called: it would parse
	// the streamed sheets back into memory; Summary, the first sheet, is
	// active already.)
	var zw *zip.Writer
	xw.f.SetZipWriter(func(io.Writer) excelize.ZipWriter {
		zw = zip.NewWriter(xw.w)
		return zw
	})
	if _, err := xw.f.WriteTo(io.Discard); err != nil {
		return err
	}
	if zw == nil {
		return errors.New("reports: excelize did not use the zip writer")
	}
	return nil
}

func (xw *xlsxWriter) abort() { xw.f.Close() }
