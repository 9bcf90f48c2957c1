package bench

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// palette colours the designs, in order of first appearance.
var palette = []string{"#d62728", "#ff7f0e", "#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"}

// Chart geometry, in SVG user units.
const (
	panelW, panelH = 460, 300
	marginL        = 70
	marginT        = 40
	gapX, gapY     = 90, 80
	legendH        = 22
)

// writeSVG draws, for each series count, invoices/s and p99 latency against
// concurrency (log-scaled y), one line per design, as a standalone SVG.
func writeSVG(out io.Writer, rep Report) error {
	w := bufio.NewWriter(out)
	var designs []string
	labels := map[string]string{}
	var phases, concs []int
	for _, r := range rep.Results {
		if !slices.Contains(designs, r.Design) {
			designs = append(designs, r.Design)
			labels[r.Design] = r.Label
			if r.Kind == "invoiced" {
				labels[r.Design] = r.Design
			}
		}
		if !slices.Contains(phases, r.Series) {
			phases = append(phases, r.Series)
		}
		if !slices.Contains(concs, r.Concurrency) {
			concs = append(concs, r.Concurrency)
		}
	}
	slices.Sort(phases)
	slices.Sort(concs)
	legendRows := (len(designs) + 2) / 3
	width := marginL + 2*panelW + gapX + 20
	height := marginT + legendRows*legendH + len(phases)*(panelH+gapY) + 20
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(w, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	title := fmt.Sprintf("invoiced bench: %s each, added DB round trip %s", rep.Duration, rep.DBLatency)
	fmt.Fprintf(w, `<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", marginL, esc(title))
	for i, d := range designs {
		x := marginL + (i%3)*((2*panelW+gapX)/3)
		y := marginT + (i/3)*legendH
		c := palette[i%len(palette)]
		fmt.Fprintf(w, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"/>`, x, y, x+24, y, c)
		fmt.Fprintf(w, `<text x="%d" y="%d">%s</text>`+"\n", x+30, y+4, esc(labels[d]))
	}
	top := marginT + legendRows*legendH + 10
	for pi, ph := range phases {
		y0 := top + pi*(panelH+gapY)
		for col, metric := range []string{"invoices/s", "p99 latency, ms"} {
			x0 := marginL + col*(panelW+gapX)
			val := func(r Result) float64 {
				if col == 0 {
					return r.PerSecond
				}
				return r.Latency.P99
			}
			lo, hi := math.Inf(1), math.Inf(-1)
			for _, r := range rep.Results {
				if v := val(r); r.Series == ph && v > 0 {
					lo, hi = min(lo, v), max(hi, v)
				}
			}
			if math.IsInf(lo, 1) {
				lo, hi = 1, 10
			}
			lo = math.Pow(10, math.Floor(math.Log10(lo)))
			hi = math.Pow(10, math.Ceil(math.Log10(hi)))
			if hi <= lo {
				hi = lo * 10
			}
			yOf := func(v float64) float64 {
				return float64(y0+panelH) - (math.Log10(v)-math.Log10(lo))/(math.Log10(hi)-math.Log10(lo))*panelH
			}
			xOf := func(c int) float64 {
				i := slices.Index(concs, c)
				if len(concs) == 1 {
					return float64(x0) + panelW/2
				}
				return float64(x0) + 20 + float64(i)*float64(panelW-40)/float64(len(concs)-1)
			}
			fmt.Fprintf(w, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#444"/>`+"\n", x0, y0, panelW, panelH)
			fmt.Fprintf(w, `<text x="%d" y="%d" font-weight="bold">%s</text>`+"\n", x0, y0-8, esc(fmt.Sprintf("%s, %d series", metric, ph)))
			for v := lo; v <= hi*1.0001; v *= 10 {
				y := yOf(v)
				fmt.Fprintf(w, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`, x0, y, x0+panelW, y)
				fmt.Fprintf(w, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", x0-6, y+4, esc(shortNum(v)))
			}
			for _, c := range concs {
				x := xOf(c)
				fmt.Fprintf(w, `<text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", x, y0+panelH+16, c)
			}
			fmt.Fprintf(w, `<text x="%d" y="%d" text-anchor="middle">clients</text>`+"\n", x0+panelW/2, y0+panelH+32)
			for di, d := range designs {
				var pts []string
				for _, c := range concs {
					for _, r := range rep.Results {
						if r.Design == d && r.Series == ph && r.Concurrency == c && val(r) > 0 {
							pts = append(pts, fmt.Sprintf("%.1f,%.1f", xOf(c), yOf(val(r))))
						}
					}
				}
				if len(pts) == 0 {
					continue
				}
				color := palette[di%len(palette)]
				fmt.Fprintf(w, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", color, strings.Join(pts, " "))
				for _, p := range pts {
					x, y, _ := strings.Cut(p, ",")
					fmt.Fprintf(w, `<circle cx="%s" cy="%s" r="3" fill="%s"/>`, x, y, color)
				}
				fmt.Fprintln(w)
			}
		}
	}
	fmt.Fprintln(w, `</svg>`)
	return w.Flush()
}

// esc escapes s for XML text and attribute values.
func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder never fails to write
	return b.String()
}

// shortNum renders an axis value: 0.1, 1, 10, 1k, 10k, 1M.
func shortNum(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%gk", v/1e3)
	}
	return fmt.Sprintf("%g", v)
}
