package invoice

// PendingOf returns how many requests wait in c's queues (for tests).
func PendingOf(c *Committer) int { return c.pending() }

// FastIssueHash is issueHash with the draft's precomputed content part.
func FastIssueHash(gstin string, inv *Invoice, position int64, prev []byte, d *Draft) []byte {
	s, err := d.seal()
	if err != nil {
		panic(err)
	}
	return issueHash(gstin, inv, position, prev, s.content)
}

// LockPeriods takes the seller's period lock exclusively in tx, as
// LockPeriod does before it writes a lock (for tests that hold it open).
var LockPeriods = lockPeriods

// DelegatedFailed is the error a failed invoiced_issue_batch call becomes.
var DelegatedFailed = delegatedFailed
