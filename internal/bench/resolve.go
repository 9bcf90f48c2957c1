package bench

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// resolve replays every request whose outcome was unknown with its own
// Idempotency-Key: an invoice the server did commit is answered again (so it
// counts as acknowledged); one it did not is issued now. Either way the
// acknowledged count is exact afterwards. It returns an error when a replay
// still fails after three tries.
func (r *loadResult) resolve(ctx context.Context, a *apiClient) error {
	for _, p := range r.pending {
		a := a
		if p.via != nil {
			a = p.via
		}
		var lastErr error
		for try := 0; try < 3; try++ {
			if p.batch != nil {
				st, body, err := a.do(ctx, http.MethodPost, "/v1/series/"+p.code+"/invoices/batch", p.batch, nil)
				if err == nil && st == http.StatusOK {
					lastErr = nil
					unsettled := 0
					for _, res := range batchResults(body) {
						if res.status == http.StatusCreated && res.serial > 0 {
							r.Acked[p.code] = append(r.Acked[p.code], res.serial)
							r.Resolved++
						} else {
							unsettled++
						}
					}
					if unsettled == 0 {
						break
					}
					// Items refused or in progress: none is issued twice
					// by replaying the whole batch again, but what was
					// acknowledged now must not count twice either.
					lastErr = fmt.Errorf("%d items of a replayed batch were not issued", unsettled)
					break
				}
				if err == nil {
					err = fmt.Errorf("HTTP %d: %.200s", st, bytes.TrimSpace(body))
				}
				lastErr = err
				time.Sleep(200 * time.Millisecond)
				continue
			}
			st, body, err := a.do(ctx, http.MethodPost, "/v1/series/"+p.code+"/invoices", invoiceBody, map[string]string{"Idempotency-Key": p.key})
			if err == nil && st == http.StatusCreated {
				if serial, ok := serialOf(body); ok {
					r.Acked[p.code] = append(r.Acked[p.code], serial)
					r.Resolved++
					lastErr = nil
					break
				}
			}
			if err == nil {
				err = fmt.Errorf("HTTP %d: %s", st, bytes.TrimSpace(body))
			}
			lastErr = err
			time.Sleep(200 * time.Millisecond)
		}
		if lastErr != nil {
			return fmt.Errorf("replaying Idempotency-Key %s on %s: %w", p.key, p.code, lastErr)
		}
	}
	r.pending = nil
	return nil
}

// serialOf extracts "serial":N from an invoice JSON body without decoding
// all of it.
func serialOf(body []byte) (int64, bool) {
	const field = `"serial":`
	i := bytes.Index(body, []byte(field))
	if i < 0 {
		return 0, false
	}
	rest := bytes.TrimLeft(body[i+len(field):], " ")
	j := 0
	for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
		j++
	}
	n, err := strconv.ParseInt(string(rest[:j]), 10, 64)
	return n, err == nil
}
