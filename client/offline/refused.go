package offline

import (
	"context"
	"fmt"
	"strings"

	"github.com/invoiced/invoiced/client"
)

// An upload refused as not under the lease (docs/offline.md, "What a
// lease-route answer lets the device conclude"). A 409 lease_not_held
// means the lease was ended by force and settled: the accountant declared
// the device's serials and online issuance continues after them, so a
// till that kept numbering would print numbers online issuance hands out
// too. The terminal first journals a "doubt" (it numbers nothing, also
// after a restart), then resumes the lease; only the resume's answer
// decides: a lost answer is not a no.

// Unuploaded is a record the terminal numbered and never uploaded: an
// invoice, or (Cancel set) the cancellation of one.
type Unuploaded struct {
	FY     string
	Serial int64
	Number string
	Cancel bool
}

// NotUploadedError is returned by Sync and End when the server refused an
// upload because the lease was ended and settled: the terminal has
// journaled the end (Issue returns ErrEnded) and Records were never
// uploaded, in chain order. They were printed: the accountant, who
// settled the lease, must account for them (the settlement declared the
// serials spent, or a later one must correct it). errors.Is(err, ErrEnded)
// holds.
type NotUploadedError struct {
	Lease   client.Lease // as the server reads it
	Records []Unuploaded
	Err     error // the upload's refusal
}

// Error lists the records never uploaded.
func (e *NotUploadedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v: the lease was settled (%s) and %d records were never uploaded", ErrEnded, e.Lease.SettleReason, len(e.Records))
	for i, r := range e.Records {
		sep := ", "
		if i == 0 {
			sep = ": "
		}
		b.WriteString(sep + r.Number)
		if r.Cancel {
			b.WriteString(" (cancellation)")
		}
	}
	fmt.Fprintf(&b, " (%v)", e.Err)
	return b.String()
}

// Unwrap returns ErrEnded and the upload's refusal.
func (e *NotUploadedError) Unwrap() []error { return []error{ErrEnded, e.Err} }

// refused handles the server's refusal of an upload as not under the
// lease: it journals the doubt, then learns the lease's state
// (learnLease). It returns the error Sync fails with.
func (t *Terminal) refused(ctx context.Context, cl *client.Client, refusal error) error {
	t.mu.Lock()
	if !t.doubt && !t.ended {
		if err := t.write(record{Kind: "doubt"}); err != nil {
			t.mu.Unlock()
			return err
		}
		t.doubt = true
	}
	t.mu.Unlock()
	if err := t.learnLease(ctx, cl, refusal); err != nil {
		return err
	}
	return refusal // the lease holds after all: nothing was stored
}

// learnLease resumes the lease while in doubt, after refusal (nil: a
// doubt left by an earlier Sync): a resume, not a read, so that an end
// the device asked for and that may still be in flight can no longer
// commit once selling goes on. Settled: it journals the end and returns a
// *NotUploadedError. In force (not ended): it journals "resume" with the
// lease's new end epoch (which also settles an end pending: that end
// can no longer commit) and returns nil. Ended by force and not settled
// (uploads are still taken): the doubt stays, and it returns nil without
// a refusal (Sync uploads, End settles the lease) and an error wrapping
// ErrLeaseInDoubt with one. No answer, or any error: the doubt stays and
// the error wraps ErrLeaseInDoubt.
func (t *Terminal) learnLease(ctx context.Context, cl *client.Client, refusal error) error {
	l, err := cl.ResumeLease(ctx, t.lease.Series, t.lease.LeaseID)
	if err != nil {
		if refusal != nil {
			return fmt.Errorf("%w: %w (resuming the lease: %v)", ErrLeaseInDoubt, refusal, err)
		}
		return fmt.Errorf("%w (resuming the lease: %v)", ErrLeaseInDoubt, err)
	}
	switch {
	case l.SettledAt != "":
		t.mu.Lock()
		recs := t.unuploaded()
		t.mu.Unlock()
		if err := t.settle(record{Kind: "end"}); err != nil {
			return err
		}
		if refusal == nil {
			refusal = fmt.Errorf("the lease ended %s at serial %d of %s", l.EndKind, l.EndSerial, l.EndFY)
		}
		return &NotUploadedError{Lease: l, Records: recs, Err: refusal}
	case l.EndedAt == "":
		return t.settle(record{Kind: "resume", Epoch: l.EndEpoch})
	case refusal != nil:
		return fmt.Errorf("%w: %w (the lease was ended %s and is not settled)", ErrLeaseInDoubt, refusal, l.EndKind)
	}
	return nil
}

// unuploaded returns the pending records, in chain order. t.mu is held.
func (t *Terminal) unuploaded() []Unuploaded {
	out := make([]Unuploaded, 0, len(t.queue))
	for _, p := range t.queue {
		r := Unuploaded{FY: p.fy.String(), Serial: p.inv.Serial, Number: p.inv.Number}
		if p.cancel != nil {
			r = Unuploaded{FY: p.fy.String(), Serial: p.cancel.Serial, Number: p.cancel.Number, Cancel: true}
		}
		out = append(out, r)
	}
	return out
}
