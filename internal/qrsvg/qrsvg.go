// Package qrsvg draws a QR code as an inline SVG element: the IRP's signed
// QR code on a receipt (Rule 48(4)), sharp at any print size, on A4 and 80
// mm roll paper alike, and needing no image source, which the receipt's
// Content-Security-Policy (default-src 'none') would refuse. The encoding
// is github.com/yeqown/go-qrcode/v2's; this package only draws its
// modules.
package qrsvg

import (
	"fmt"
	"strings"

	qrcode "github.com/yeqown/go-qrcode/v2"
)

// quiet is the margin around the code, in modules (ISO/IEC 18004 asks
// for 4).
const quiet = 4

// Modules returns the QR code of text at error correction level M (15 %
// of the code may be smudged, as thermal paper is): true for a dark
// module, indexed [row][column]. It fails when text is too long for any
// QR code version (about 2,300 bytes at level M).
func Modules(text string) ([][]bool, error) {
	qr, err := qrcode.NewWith(text, qrcode.WithErrorCorrectionLevel(qrcode.ErrorCorrectionMedium), qrcode.WithEncodingMode(qrcode.EncModeByte))
	if err != nil {
		return nil, fmt.Errorf("qrsvg: %w", err)
	}
	w := &matrixWriter{}
	if err := qr.Save(w); err != nil {
		return nil, fmt.Errorf("qrsvg: %w", err)
	}
	return w.rows, nil
}

// matrixWriter keeps the matrix qrcode.Save hands it.
type matrixWriter struct{ rows [][]bool }

func (w *matrixWriter) Write(m qrcode.Matrix) error {
	w.rows = make([][]bool, m.Height())
	for y := range w.rows {
		w.rows[y] = make([]bool, m.Width())
	}
	m.Iterate(qrcode.IterDirection_ROW, func(x, y int, v qrcode.QRValue) { w.rows[y][x] = v.IsSet() })
	return nil
}

func (w *matrixWriter) Close() error { return nil }

// SVG returns the QR code of text (Modules) as an <svg> element whose
// viewBox counts modules, with the quiet zone, one path of dark runs per
// row; label is its accessible name. The caller sizes it with CSS. It
// fails as Modules does.
func SVG(text, label string) (string, error) {
	rows, err := Modules(text)
	if err != nil {
		return "", err
	}
	n := len(rows) + 2*quiet
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" role="img" aria-label="%s" shape-rendering="crispEdges">`, n, n, escape(label))
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/><path fill="#000" d="`, n, n)
	for y, row := range rows {
		for x := 0; x < len(row); {
			if !row[x] {
				x++
				continue
			}
			run := 1
			for x+run < len(row) && row[x+run] {
				run++
			}
			fmt.Fprintf(&b, "M%d %dh%dv1h-%dz", x+quiet, y+quiet, run, run)
			x += run
		}
	}
	b.WriteString(`"/></svg>`)
	return b.String(), nil
}

// escape returns s safe inside a double-quoted XML attribute.
func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
