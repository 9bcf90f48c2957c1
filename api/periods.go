package api

import (
	"net/http"

	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/invoice"
	"github.com/labstack/echo/v4"
)

// periodLockJSON is a locked month.
type periodLockJSON struct {
	FP       string `json:"fp"`
	LockedAt string `json:"locked_at"`
	LockedBy string `json:"locked_by"`
}

// periodEventJSON is one lock or unlock.
type periodEventJSON struct {
	FP     string `json:"fp"`
	Action string `json:"action"`
	At     string `json:"at"`
	By     string `json:"by"`
	Reason string `json:"reason,omitempty"`
}

func renderLock(l document.PeriodLock) periodLockJSON {
	return periodLockJSON{FP: l.Month.FP(), LockedAt: document.Timestamp(l.LockedAt), LockedBy: l.LockedBy}
}

// lockPeriod serves POST /v1/periods/{fp}/lock (scope manage): it locks the
// month fp (MMYYYY) after its GSTR-1 is filed; 201 with the lock, or 200
// with the existing one when it was locked already. A month that has not
// ended (IST) is 422 period_not_ended.
func (s *Server) lockPeriod(c echo.Context) error {
	p, err := s.authorize(c, apikey.CanManage)
	if err != nil {
		return err
	}
	m, err := document.ParseMonth(c.Param("fp"))
	if err != nil {
		return err
	}
	lock, created, err := invoice.LockPeriod(c.Request().Context(), s.pool, p.Seller, m, "key "+apikey.Tag+p.Prefix, s.now())
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return writeJSON(c, status, renderLock(lock))
}

// listPeriods serves GET /v1/periods (scope read): the locked months,
// newest first, and every lock and unlock, oldest first.
func (s *Server) listPeriods(c echo.Context) error {
	p, err := s.authorize(c, apikey.CanRead)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	locks, err := invoice.PeriodLocks(ctx, s.pool, p.Seller.ID)
	if err != nil {
		return err
	}
	events, err := invoice.PeriodEvents(ctx, s.pool, p.Seller.ID)
	if err != nil {
		return err
	}
	out := struct {
		Locks   []periodLockJSON  `json:"locks"`
		History []periodEventJSON `json:"history"`
	}{Locks: []periodLockJSON{}, History: []periodEventJSON{}}
	for _, l := range locks {
		out.Locks = append(out.Locks, renderLock(l))
	}
	for _, e := range events {
		out.History = append(out.History, periodEventJSON{FP: e.Month.FP(), Action: e.Action, At: document.Timestamp(e.At), By: e.By, Reason: e.Reason})
	}
	return writeJSON(c, http.StatusOK, out)
}
