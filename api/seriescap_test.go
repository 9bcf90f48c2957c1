package api

import (
	"net/http"
	"testing"

	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/series"
)

// A seller may have series.MaxPerSeller series: the next is refused with
// 409 too_many_series and nothing is created, and another seller is not
// affected.
func TestSeriesCapPerSeller(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	// CH1 and these make one less than the cap.
	if _, err := e.pool.Exec(ctx, `
		INSERT INTO series (seller_id, code, doc_type, format, capacity)
		SELECT $1, 'Z' || lpad(g::text, 4, '0'), 'invoice', 'Z' || lpad(g::text, 4, '0') || '/{SEQ:5}', 99999
		FROM generate_series(1, $2) g`, e.seller.ID, series.MaxPerSeller-2); err != nil {
		t.Fatal(err)
	}
	e.createSeries("LAST", "invoice", "LAST/{FY}/{SEQ:5}")
	r := e.do("POST", "/v1/series", e.all, `{"code":"MORE","doc_type":"invoice","format":"MORE/{FY}/{SEQ:5}"}`)
	e.wantError(r, http.StatusConflict, "too_many_series")
	var n int
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM series WHERE seller_id = $1`, e.seller.ID).Scan(&n); err != nil || n != series.MaxPerSeller {
		t.Fatalf("the seller has %d series (%v), want %d", n, err, series.MaxPerSeller)
	}
	other := testfactory.Seller(t, e.pool, &testfactory.SellerOpts{GSTIN: otherGSTIN, Name: "Bengaluru Beans"})
	key := mustKey(t, e.pool, other.ID, apikey.ScopeManage)
	e.wantStatus(e.do("POST", "/v1/series", key, `{"code":"MORE","doc_type":"invoice","format":"MORE/{FY}/{SEQ:5}"}`), http.StatusCreated)
}
