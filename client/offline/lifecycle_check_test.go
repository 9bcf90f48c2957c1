package offline_test

import (
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/invoiced/invoiced/client"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/lease"
	"github.com/invoiced/invoiced/reports"
)

// The lifecycle's manager, accountant and tamperer, and the checks of
// what the server did for them.

// stored returns the last serial stored in ln's series in fy.
func (r *lifecycleRun) stored(ln *lane, fy gst.FY) lease.Position {
	p, err := lease.NextPosition(r.ctx, r.e.pool, ln.s, fy)
	if err != nil {
		r.fail("read %s %s: %v", ln.code, fy, err)
	}
	return p
}

// force ends the lease in force on ln's series, if any, as for a lost
// device: the forced end must list every year the lease reserves, and
// the audit of each must show what the device may not have uploaded.
func (r *lifecycleRun) force(ln *lane) {
	h := r.holder(ln)
	if h == nil || h.EndedAt != "" {
		return
	}
	l, err := r.e.all.EndLease(r.ctx, ln.code, "", client.EndLeaseRequest{Force: true, Reason: "till not answering"})
	if err != nil {
		r.fail("force the lease of %s: %v", ln.code, err)
		return
	}
	r.logf("%s: the manager ended %s's lease by force (%+v)", ln.code, l.DeviceID, l.EndYears)
	r.st.ForcedEnds++
	if h.LeaseID == ln.lease.LeaseID && len(l.EndYears) != len(ln.lease.Years) {
		r.fail("the forced end of %s lists %+v, want every year the lease reserves (%+v)", ln.code, l.EndYears, ln.lease.Years)
	}
	for _, y := range l.EndYears {
		fy, _ := gst.ParseFY(y.FY)
		sum, err := reports.AuditSummary(r.ctx, r.e.pool, r.e.seller, ln.s, fy)
		if err != nil {
			r.fail("audit %s %s: %v", ln.code, fy, err)
			return
		}
		if len(findings(sum, reports.DeviceNotUploaded)) == 0 {
			r.fail("the audit of %s %s after the forced end has no device_not_uploaded finding: %+v", ln.code, fy, sum.Findings)
		}
	}
}

// Mistakes an accountant makes in a settlement.
const (
	noMistake   = iota
	belowPaper  // a year below the paper trail, not below what the server knows: accepted
	belowKnown  // a year below what was uploaded or reported: declared_too_low
	missingYear // a reserved year left out: lease_years_undeclared
	otherYear   // a year the lease does not reserve: invalid_lease
	mistakes
)

// settle has the accountant settle the lease ended by force on ln's
// series, if one holds it. It reads the paper trail (ln's, for ln's
// lease) and what the server knows (the last serial stored in each year
// the lease reserves, and the device's report), and declares each year
// at the later of the two, sometimes more; unless correct, with one
// mistake drawn at random. The server must accept it exactly when no
// mistake makes it refusable (see the mistakes above); after a refusal
// the accountant declares again, correctly. A declaration below the paper
// trail that the server accepts releases those numbers (online issuance
// prints them again: the accountant's doing), and a till still selling
// prints what online issuance will print too until it hears from the
// server.
func (r *lifecycleRun) settle(ln *lane, correct bool) {
	h := r.holder(ln)
	if h == nil || h.EndedAt == "" {
		return
	}
	paper := map[gst.FY]int64{}
	if h.LeaseID == ln.lease.LeaseID {
		paper = ln.paper
	}
	var years []gst.FY
	known, decl := map[gst.FY]int64{}, map[gst.FY]int64{}
	for _, y := range h.EndYears {
		fy, _ := gst.ParseFY(y.FY)
		years = append(years, fy)
		known[fy] = r.stored(ln, fy).Serial - 1
		if h.Reported != nil && h.Reported.FY == fy.String() {
			known[fy] = max(known[fy], h.Reported.Through)
		}
		decl[fy] = max(paper[fy], known[fy])
		if r.rng.IntN(2) == 0 {
			decl[fy] += int64(r.rng.IntN(3)) // spent more than printed
		}
	}
	mistake, want := noMistake, ""
	var under gst.FY
	if !correct {
		mistake = 1 + r.rng.IntN(mistakes-1)
		for _, y := range years {
			if known[y] > r.stored(ln, y).Serial-1 && r.rng.IntN(2) == 0 {
				mistake = belowKnown // the device reported more than it uploaded: below its report
			}
		}
		switch mistake {
		case belowPaper:
			for _, y := range years {
				if paper[y] > known[y] {
					under, decl[y] = y, known[y]+int64(r.rng.IntN(int(paper[y]-known[y])))
					break
				}
			}
			if under == 0 {
				mistake = noMistake
			}
		case belowKnown:
			// Below what was uploaded, or (when the device reported more)
			// at or above that and below its report.
			mistake, want = noMistake, ""
			for _, y := range years {
				stored := r.stored(ln, y).Serial - 1
				switch {
				case known[y] > stored && r.rng.IntN(2) == 0:
					decl[y] = stored + int64(r.rng.IntN(int(known[y]-stored)))
				case known[y] > 0:
					decl[y] = int64(r.rng.IntN(int(known[y])))
				default:
					continue
				}
				mistake, want = belowKnown, client.CodeDeclaredTooLow
				break
			}
		case missingYear:
			want = client.CodeLeaseYearsUndeclared
			delete(decl, years[r.rng.IntN(len(years))])
		case otherYear:
			want = client.CodeInvalidLease
			decl[years[len(years)-1]+1] = 0
		}
	}
	var declared []client.YearSerial
	for fy, n := range decl {
		declared = append(declared, client.YearSerial{FY: fy.String(), Through: n})
	}
	slices.SortFunc(declared, func(a, b client.YearSerial) int { return strings.Compare(a.FY, b.FY) })
	_, err := r.e.all.EndLease(r.ctx, ln.code, "", client.EndLeaseRequest{Declared: declared, Reason: "paper receipts"})
	r.logf("%s: the accountant declares %+v (paper %v, known %v, mistake %d): %v", ln.code, declared, paper, known, mistake, err)
	var ce *client.Error
	switch {
	case want == "" && err != nil:
		r.fail("settlement %+v of %s refused (paper %v, known %v): %v", declared, ln.code, paper, known, err)
		return
	case want != "" && err == nil:
		r.fail("settlement %+v of %s accepted (paper %v, known %v), want %s", declared, ln.code, paper, known, want)
		return
	case want != "" && !(errors.As(err, &ce) && ce.Code == want):
		r.fail("settlement %+v of %s: %v, want %s", declared, ln.code, err, want)
		return
	case want != "":
		r.st.Refused++
		r.settle(ln, true)
		return
	}
	r.st.Settled++
	r.settled[ln.code] = true
	r.accountantSettled[h.LeaseID] = true
	if mistake == belowPaper {
		r.st.Under++
		for s := decl[under] + 1; s <= paper[under]; s++ {
			n, _ := ln.s.Format.Render(under, s)
			r.released[n] = true
		}
	}
	if h.LeaseID == ln.lease.LeaseID && ln.device() {
		ln.net.hasHeard()
		ln.unheard = true
	}
}

// askLeaseAgain has the manager send the request that took ln's lease
// again, with its Idempotency-Key: the same lease, as first answered,
// while the device has not been in touch; otherwise lease_held.
func (r *lifecycleRun) askLeaseAgain(ln *lane) {
	h := r.holder(ln)
	if h == nil || h.LeaseID != ln.lease.LeaseID || ln.key == "" {
		return
	}
	l, err := r.e.all.Lease(r.ctx, ln.code, "till", client.IdempotencyKey(ln.key))
	var ce *client.Error
	switch {
	case err == nil && (l.LeaseID != ln.lease.LeaseID || l.NotBefore != ln.lease.NotBefore || !reflect.DeepEqual(l.Years, ln.lease.Years)):
		r.fail("the lease of %s asked again answered %+v (not before %s), first %+v (not before %s)", ln.code, l.Years, l.NotBefore, ln.lease.Years, ln.lease.NotBefore)
	case err == nil:
	case !(errors.As(err, &ce) && ce.Code == client.CodeLeaseHeld):
		r.fail("the lease of %s asked again: %v, want it again or lease_held", ln.code, err)
	}
}

// allUploaded checks, after ln's till ended its lease l by itself, that
// the server holds every invoice it journaled and every cancellation (but
// those it refused for a locked month, which the till reports).
func (r *lifecycleRun) allUploaded(ln *lane, l client.Lease) {
	refused := map[string]bool{}
	for _, c := range ln.term.RefusedCancels() {
		refused[c.Number] = true
	}
	status := func(number string) string {
		var s string
		if err := r.e.pool.QueryRow(r.ctx, `SELECT status FROM invoices WHERE series_id = $1 AND number = $2`, ln.s.ID, number).Scan(&s); err != nil {
			return "missing (" + err.Error() + ")"
		}
		return s
	}
	for _, rec := range ln.receipts {
		if s := status(rec.Number); s != "issued" && s != "cancelled" {
			r.fail("%s's till ended its lease (%s %d) without %s stored: %s", ln.code, l.EndFY, l.EndSerial, rec.Number, s)
		}
	}
	for _, c := range ln.cancels {
		if s := status(c.Number); (s == "cancelled") == refused[c.Number] {
			r.fail("%s's till ended its lease with %s %s (its cancel refused: %v)", ln.code, c.Number, s, refused[c.Number])
		}
	}
}

// tamper sends, under ln's lease, an upload or an end request that breaks
// exactly one rule, built with the server's own code as a rogue device
// would: an invoice issued before the lease, one dated in the year
// before the lease's or after its two, one dated after the server's
// tomorrow, a cancellation of an invoice the lease did not number, an end
// at serials never uploaded. Each must be refused with its rule's code,
// storing nothing; the refused end's report must be recorded.
func (r *lifecycleRun) tamper(ln *lane) {
	h := r.holder(ln)
	if h == nil || h.LeaseID != ln.lease.LeaseID {
		return
	}
	l, start := ln.lease, ln.startFY()
	leasedAt, _ := time.Parse(time.RFC3339Nano, l.LeasedAt)
	now := r.srv.now()
	var fy gst.FY
	var code, rule string
	var send func() error
	upload := func(at time.Time) bool {
		p := r.stored(ln, fy)
		if !at.After(p.LastIssuedAt) || gst.FYAt(at) != fy {
			return false
		}
		inv := forge(r.t, l, p.Serial, p.ChainLength+1, hex.EncodeToString(p.ChainHead), at)
		send = func() error {
			_, err := r.e.all.UploadDeviceInvoices(r.ctx, ln.code, l.LeaseID, []client.DeviceInvoice{inv})
			return err
		}
		return true
	}
	switch r.rng.IntN(8) {
	case 0:
		fy, code, rule = start, client.CodeIssuedBeforeLease, "an invoice issued before the lease"
		if !upload(leasedAt.Add(-time.Millisecond)) {
			return
		}
	case 1:
		fy, code, rule = start-1, client.CodeYearBeforeLease, "an invoice of the year before the lease's"
		if !upload(time.Date(int(start), 3, 31, 23, 0, 0, 0, gst.IST)) {
			return
		}
	case 2:
		fy, code, rule = start+2, client.CodeYearAfterLease, "an invoice of a year after the lease's two"
		if !upload(time.Date(int(start)+2, 4, 1, 12, 0, 0, 0, gst.IST)) {
			return
		}
	case 3:
		d := gst.DateIST(now).AddDate(0, 0, 3)
		at := time.Date(d.Year(), d.Month(), d.Day(), 12, 0, 0, 0, gst.IST)
		fy, code, rule = gst.FYAt(at), "invalid_invoice", "an invoice dated after the server's tomorrow"
		if !ln.reserved(fy) || !upload(at) {
			return
		}
	case 4:
		var id int64
		err := r.e.pool.QueryRow(r.ctx, `SELECT id FROM invoices WHERE series_id = $1 AND status = 'issued' AND (issued_at < $2 OR fy < $3 OR (fy = $3 AND serial < $4))
			ORDER BY id DESC LIMIT 1`, ln.s.ID, leasedAt, int(start), l.Next.Serial).Scan(&id)
		if err != nil {
			return // none
		}
		inv, err := invoice.Get(r.ctx, r.e.pool, r.e.seller.ID, id)
		if err != nil {
			r.fail("read invoice %d: %v", id, err)
			return
		}
		fy, code, rule = inv.FY, client.CodeInvoiceNotLeased, "a cancellation of "+inv.Number+", not numbered under the lease"
		p := r.stored(ln, fy)
		var last time.Time
		if err := r.e.pool.QueryRow(r.ctx, `SELECT coalesce(max(recorded_at), '-infinity') FROM chain_records WHERE series_id = $1 AND fy = $2`, ln.s.ID, int(fy)).Scan(&last); err != nil {
			r.fail("read %s's chain: %v", ln.code, err)
			return
		}
		at := maxTime(now, last)
		if gst.DateIST(at).After(gst.DateIST(now).AddDate(0, 0, 1)) {
			return
		}
		_, hash, err := document.CancelOffline(r.e.seller.GSTIN, inv, "tampered", at, p.ChainLength+1, p.ChainHead)
		if err != nil {
			r.fail("forge a cancel: %v", err)
			return
		}
		dc := client.DeviceCancel{FY: fy.String(), Position: p.ChainLength + 1, Serial: inv.Serial, Number: inv.Number, CancelledAt: document.Timestamp(at),
			Reason: "tampered", ChainHash: hex.EncodeToString(hash)}
		send = func() error {
			_, err := r.e.all.UploadDeviceCancels(r.ctx, ln.code, l.LeaseID, []client.DeviceCancel{dc})
			return err
		}
	default:
		fy = start + gst.FY(r.rng.IntN(2))
		last := r.stored(ln, fy).Serial + int64(r.rng.IntN(3))
		code, rule = client.CodeLeaseNotUploaded, fmt.Sprintf("an end at serial %d of %s, never uploaded", last, fy)
		send = func() error {
			_, err := r.e.all.EndLease(r.ctx, ln.code, l.LeaseID, client.EndLeaseRequest{FY: fy.String(), LastSerial: &last})
			if err != nil {
				g, gerr := r.e.all.GetLease(r.ctx, ln.code, "")
				if rep := g.Reported; gerr != nil || rep == nil || rep.FY < fy.String() || (rep.FY == fy.String() && rep.Through < last) {
					r.fail("after the end at %d of %s was refused the lease shows the report %+v, %v", last, fy, rep, gerr)
				}
			}
			return err
		}
	}
	before := r.stored(ln, fy)
	err := send()
	after := r.stored(ln, fy)
	r.logf("%s: tampered with %s: %v", ln.code, rule, err)
	var ce *client.Error
	switch {
	case !errors.As(err, &ce) || ce.Code != code:
		r.fail("%s: %v, want %s", rule, err, code)
	case code == "invalid_invoice" && !strings.Contains(ce.Message, "in the future"):
		r.fail("%s: %v, want it refused as in the future", rule, err)
	case after.Serial != before.Serial || after.ChainLength != before.ChainLength:
		r.fail("%s was refused but %s %s moved from %+v to %+v", rule, ln.code, fy, before, after)
	}
	r.st.Tampered++
}
