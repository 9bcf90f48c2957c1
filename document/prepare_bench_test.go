package document_test

import (
	"testing"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/internal/benchcpu"
)

// BenchmarkPrepareContent measures the per-invoice work done before any
// transaction (validation, amounts, items' JSON, the chain's content part)
// for a two-line POS invoice: CPU per invoice, relative.
func BenchmarkPrepareContent(b *testing.B) {
	s := mustSeries(b, "invoice", "CH1/{FY}/{SEQ:5}")
	req := document.Request{Items: []document.ItemInput{chai("2", "10.00", "5"), chai("1", "15.00", "18")}}
	now := time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	defer benchcpu.Start(b, "op", 1)()
	for b.Loop() {
		if _, err := document.PrepareContent(req, seller, s, now); err != nil {
			b.Fatal(err)
		}
	}
}
