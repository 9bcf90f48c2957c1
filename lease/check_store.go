package lease

import (
	"context"
	"errors"
	"time"

	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/internal/textcut"
	"github.com/jackc/pgx/v5"
)

// CheckLease returns nil when lease leaseID of series s may write it now,
// read without a lock: a cheap refusal, before a request's body is read,
// of a Lease-Id that LockLeaseTx would refuse. LockLeaseTx still judges
// inside the writing transaction (the lease may end in between). It
// returns ErrLeaseNotFound for a lease of another series or none,
// ErrLeaseNotHeld for one that no longer holds its series, and the
// translated failure of the read.
func CheckLease(ctx context.Context, q db.Querier, s gst.Series, leaseID string) error {
	l, err := scanLease(q.QueryRow(ctx, `SELECT `+leaseCols+` FROM series_leases WHERE lease_id = $1 AND series_id = $2 AND seller_id = $3`, leaseID, s.ID, s.SellerID))
	if errors.Is(err, pgx.ErrNoRows) {
		return apperr.Errorf(ErrLeaseNotFound, "lease %q is not a lease of this series", textcut.To(leaseID, textcut.Echo))
	}
	if err != nil {
		return translate(err, "read lease")
	}
	if !l.Holds() {
		return apperr.Errorf(ErrLeaseNotHeld, "lease %s of device %s ended at %s", l.ID, l.DeviceID, l.EndedAt.UTC().Format(time.RFC3339))
	}
	return nil
}
