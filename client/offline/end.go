package offline

import (
	"context"
	"errors"
	"fmt"

	"github.com/invoiced/invoiced/client"
	"github.com/invoiced/invoiced/gst"
)

// Ending a lease (docs/offline.md, "Ending a lease"). The device never
// resumes selling on an answer it could not learn: before it asks the
// server to end the lease it journals an "ending" record with the year and
// serial it ends at, and from then on Issue and Cancel are refused
// (ErrEndPending) until the outcome is known: the end confirmed (an "end"
// record, then ErrEnded) or the lease shown to still hold (a "resume"
// record, then selling goes on). A lost answer, a crash between the
// server's commit and the journal's record, or a 503
// commit_outcome_unknown all leave the end pending; End asks again (the
// server's end is idempotent) or resumes the lease: a write that moves the
// lease's end epoch on, so that an end sent before and still in flight
// can no longer commit (the "ending" record holds the epoch the end is
// asked at; a stale one is refused 409 lease_end_superseded).

// endMark is the end the journal says was asked for: the last serial of
// the latest series-year numbered, and the lease's end epoch then.
type endMark struct {
	fy    gst.FY
	last  int64
	epoch int64
}

// EndPending reports whether the lease's end was asked for and its
// outcome is not yet known: Issue and Cancel are refused until End
// learns it.
func (t *Terminal) EndPending() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.pending != nil
}

// End uploads what is pending and ends the lease with the last serial of
// the latest series-year numbered, and returns the ended lease; from then
// on Issue fails with ErrEnded. While End runs, and after it failed
// without learning the outcome, Issue and Cancel fail with ErrEndPending.
//
// After an error the lease still holds (Issue works again) only when that
// is known: the upload failed before the end was asked for, or a resume
// of the lease (POST …/lease/resume) shows it in force. Otherwise the
// error wraps ErrEndPending, and End must be called again: the server
// answers a repeated end with the ended lease. A lease ended by force
// meanwhile (and not settled) is settled by this end: End asks again at
// the lease's end epoch, which the resume's answer gives.
//
// When the upload before the end is refused because the lease was ended
// and settled otherwise (a forced end, then the accountant's
// declaration), End fails as Sync does, with a *NotUploadedError (which
// wraps ErrEnded) and the lease: the end is journaled; or with
// ErrLeaseInDoubt when the lease could not be learnt. Cancellations the
// server refused for good (*CancelsRefusedError from Sync) do not stop
// the end: they are voided, and RefusedCancels lists them.
func (t *Terminal) End(ctx context.Context, cl *client.Client) (client.Lease, error) {
	t.mu.Lock()
	if t.ending {
		t.mu.Unlock()
		return client.Lease{}, fmt.Errorf("%w: End is running", ErrEndPending)
	}
	t.ending = true
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		t.ending = false
		t.mu.Unlock()
	}()
	if _, err := t.Sync(ctx, cl); err != nil {
		var nu *NotUploadedError
		var cr *CancelsRefusedError
		switch {
		case errors.As(err, &nu):
			return nu.Lease, err // settled otherwise: the end is journaled
		case !errors.As(err, &cr):
			return client.Lease{}, err // nothing asked yet: unless an end was pending (or in doubt), the lease holds
		}
	}
	t.mu.Lock()
	m := t.pending
	if m == nil {
		fy := t.latestYear()
		m = &endMark{fy: fy, last: t.years[fy].last, epoch: t.epoch}
		if err := t.asking(m); err != nil {
			t.mu.Unlock()
			return client.Lease{}, err
		}
	}
	t.mu.Unlock()
	for try := 1; ; try++ {
		last, epoch := m.last, m.epoch
		l, err := cl.EndLease(ctx, t.lease.Series, t.lease.LeaseID, client.EndLeaseRequest{FY: m.fy.String(), LastSerial: &last, EndEpoch: &epoch})
		if err == nil {
			return l, t.settle(record{Kind: "end"})
		}
		l, again, err := t.learnEnd(ctx, cl, m, err)
		switch {
		case again == nil:
			return l, err
		case try == maxEndTries:
			return client.Lease{}, fmt.Errorf("%w: the lease's end epoch kept moving (%d tries)", ErrEndPending, try)
		}
		m = again
	}
}

// maxEndTries bounds the ends one End asks for: each after a resume showed
// the lease ended by force at another end epoch (a resume sent before, held
// in flight, may still move it once more).
const maxEndTries = 3

// asking journals that the end at m is being asked for, and makes it the
// pending end. t.mu is held.
func (t *Terminal) asking(m *endMark) error {
	if err := t.write(record{Kind: "ending", FY: m.fy.String(), Through: m.last, Epoch: m.epoch}); err != nil {
		return err
	}
	t.pending = m
	return nil
}

// learnEnd resumes the lease (ResumeLease) after the end asked for at m
// failed with endErr, and settles the journal when the answer shows the
// outcome: the lease ended by its device at m (it returns the lease), or
// the lease in force (it returns endErr: sell on), or settled otherwise
// (it returns the lease and an error wrapping ErrEnded). A lease ended by
// force and not settled is settled by this device's end: when its end
// epoch is not m's (a resume whose answer was lost moved it on), learnEnd
// journals the same end at the lease's epoch and returns it as again, to
// be asked for; the device sold nothing since m was journaled, so m's
// serial is still its last. Otherwise (no answer, or the end at the
// lease's epoch failed) the end stays pending and the error wraps
// ErrEndPending.
//
// A resume, not a read: an end sent before may still be in flight (a
// proxy gave up on it, the server has not run it yet), and a read saying
// "in force" would not stop it from committing after the device sold on,
// freeing serials the device printed since. The resume moves the lease's
// end epoch on under its row lock, and the server refuses an end that
// carries an older one (409 lease_end_superseded).
func (t *Terminal) learnEnd(ctx context.Context, cl *client.Client, m *endMark, endErr error) (l client.Lease, again *endMark, err error) {
	l, err = cl.ResumeLease(ctx, t.lease.Series, t.lease.LeaseID)
	if err != nil {
		return client.Lease{}, nil, fmt.Errorf("%w: %w (resuming the lease: %v)", ErrEndPending, endErr, err)
	}
	switch {
	case l.EndedAt == "":
		if err := t.settle(record{Kind: "resume", Epoch: l.EndEpoch}); err != nil {
			return client.Lease{}, nil, err
		}
		return client.Lease{}, nil, endErr
	case l.SettledAt != "" && endedAt(l, m):
		return l, nil, t.settle(record{Kind: "end"})
	case l.SettledAt != "":
		// Settled otherwise (the accountant declared the device's
		// serials): the lease never holds again.
		if err := t.settle(record{Kind: "end"}); err != nil {
			return client.Lease{}, nil, err
		}
		return l, nil, fmt.Errorf("%w: the lease was settled (%s), not at serial %d of %s (%v)", ErrEnded, l.SettleReason, m.last, m.fy, endErr)
	case l.EndEpoch != m.epoch:
		t.mu.Lock()
		defer t.mu.Unlock()
		next := &endMark{fy: m.fy, last: m.last, epoch: l.EndEpoch}
		if err := t.asking(next); err != nil {
			return client.Lease{}, nil, err
		}
		return client.Lease{}, next, nil
	}
	return client.Lease{}, nil, fmt.Errorf("%w: %w (the lease ended %s at serial %d of %s and is not settled by this device)", ErrEndPending, endErr, l.EndKind, l.EndSerial, l.EndFY)
}

// endedAt reports whether l, settled, was ended or settled by its device
// at m.
func endedAt(l client.Lease, m *endMark) bool {
	for _, d := range l.Declared {
		if d.FY == m.fy.String() {
			return d.Through == m.last && l.DeclaredThrough == m.last
		}
	}
	return l.EndKind == client.EndByDevice && l.EndFY == m.fy.String() && l.EndSerial == m.last
}

// settle journals r ("end" or "resume"), the outcome of the pending end.
func (t *Terminal) settle(r record) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.write(r); err != nil {
		return err
	}
	t.pending, t.doubt = nil, false
	t.ended = r.Kind == "end"
	t.epoch = max(t.epoch, r.Epoch)
	return nil
}
