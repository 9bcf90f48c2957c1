package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
)

// writeTable prints one table per (series, concurrency) with every design's
// throughput, latency, errors, contiguity and the ratio ours / baseline,
// "ours" being the first invoiced design measured.
func writeTable(w io.Writer, rep Report) {
	type group struct{ series, conc int }
	var groups []group
	seen := map[group]bool{}
	for _, r := range rep.Results {
		g := group{r.Series, r.Concurrency}
		if !seen[g] {
			seen[g] = true
			groups = append(groups, g)
		}
	}
	sort.SliceStable(groups, func(i, j int) bool {
		if groups[i].series != groups[j].series {
			return groups[i].series < groups[j].series
		}
		return groups[i].conc < groups[j].conc
	})
	fmt.Fprintf(w, "\ninvoiced bench: %s per measurement, added DB round trip %s; %s\n", rep.Duration, rep.DBLatency, rep.Host)
	if rep.Postgres != "" {
		fmt.Fprintf(w, "PostgreSQL: %s\n", rep.Postgres)
	}
	for _, g := range groups {
		var ours *Result
		for i := range rep.Results {
			r := &rep.Results[i]
			if r.Kind == "invoiced" && r.Series == g.series && r.Concurrency == g.conc {
				ours = r
				break
			}
		}
		if ours != nil && ours.Sellers > 1 {
			fmt.Fprintf(w, "\n%d series of %d sellers, %d clients\n", g.series, ours.Sellers, g.conc)
		} else {
			fmt.Fprintf(w, "\n%d series, %d clients\n", g.series, g.conc)
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "design\tinvoices/s\tp50 ms\tp99 ms\tp99.9 ms\tbatch\tcpu µs/inv srv+pg+load\terrors\tnumbering\tours / it\t")
		for _, r := range rep.Results {
			if r.Series != g.series || r.Concurrency != g.conc {
				continue
			}
			ratio := "-"
			if ours != nil && r.Kind != "invoiced" && r.PerSecond > 0 {
				ratio = fmt.Sprintf("%.1f×", ours.PerSecond/r.PerSecond)
			}
			batch := "-"
			if r.MeanBatch > 0 {
				batch = fmt.Sprintf("%.1f", r.MeanBatch)
			}
			fmt.Fprintf(tw, "%s\t%.0f\t%.2f\t%.2f\t%.2f\t%s\t%s\t%s\t%s\t%s\t\n",
				r.Label, r.PerSecond, r.Latency.P50, r.Latency.P99, r.Latency.P999, batch, cpuText(r.CPU), errorText(r), checkText(r), ratio)
		}
		tw.Flush()
	}
	var notes []string
	for _, r := range rep.Results {
		if r.Note != "" {
			notes = append(notes, fmt.Sprintf("%s S=%d C=%d: %s", r.Design, r.Series, r.Concurrency, r.Note))
		}
		for st, body := range r.Samples {
			notes = append(notes, fmt.Sprintf("%s S=%d C=%d: first %s: %.200s", r.Design, r.Series, r.Concurrency, st, body))
		}
	}
	notes = append(notes, rep.Notes...)
	if len(notes) > 0 {
		fmt.Fprintln(w, "\nnotes:")
		for _, n := range notes {
			fmt.Fprintln(w, "  "+n)
		}
	}
}

// cpuText shows a result's CPU per invoice as "srv+pg+load" microseconds
// and the machine's busy share, then PostgreSQL's on a Citus cluster's
// coordinator and workers when measured, or "-" when nothing was.
func cpuText(c CPU) string {
	if c == (CPU{}) {
		return "-"
	}
	s := fmt.Sprintf("%.0f+%.0f+%.0f (%.0f%%)", c.Server, c.Postgres, c.Load, 100*c.Busy)
	if c.Coordinator > 0 || c.Workers > 0 {
		s += fmt.Sprintf(" coordinator %.0f workers %.0f", c.Coordinator, c.Workers)
	}
	return s
}

// errorText summarises a result's errors: "0", "503:12 transport:1", or
// pgbench's failed transactions and aborted clients.
func errorText(r Result) string {
	var parts []string
	keys := make([]string, 0, len(r.Errors))
	for k := range r.Errors {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s:%d", k, r.Errors[k]))
	}
	if r.Failed > 0 {
		parts = append(parts, fmt.Sprintf("failed:%d", r.Failed))
	}
	if r.AbortedClients > 0 {
		parts = append(parts, fmt.Sprintf("aborted:%d/%d", r.AbortedClients, r.Concurrency))
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, " ")
}

// checkText is the numbering column: "contiguous", "FAILED" or why it was
// not checked.
func checkText(r Result) string {
	switch {
	case !r.GapFree:
		return "not gap-free"
	case !r.Checked:
		return "unchecked"
	case r.Problem != "":
		return "FAILED"
	}
	return "contiguous"
}

// writeOutputs writes results.json and chart.svg into rep.Out.
func writeOutputs(rep Report) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(rep.Out, "results.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(rep.Out, "chart.svg"))
	if err != nil {
		return err
	}
	if err := writeSVG(f, rep); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
