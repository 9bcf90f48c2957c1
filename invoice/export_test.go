package invoice

// PendingOf returns how many requests wait in c's queues (for tests).
func PendingOf(c *Committer) int { return c.pending() }

// LockPeriods takes the seller's period lock exclusively in tx, as
// LockPeriod does before it writes a lock (for tests that hold it open).
var LockPeriods = lockPeriods

// DelegatedFailed is the error a failed invoiced_issue_rows call becomes.
var DelegatedFailed = delegatedFailed

// Delegate makes c send its predicted batches as one call of
// invoiced_issue_rows_v2, as the Citus strategy does, on whichever
// database the test runs (for tests of the call on plain PostgreSQL).
// Call it before c issues anything.
func Delegate(c *Committer) *Committer {
	c.st.delegated = c.st.predict
	return c
}

// IssueRowsSQL is the delegated call of invoiced_issue_rows_v2, in named
// notation, and IssueRowsArgs its number of arguments.
var (
	IssueRowsSQL  = issueRowsSQL
	IssueRowsArgs = len(issueRowsParams)
)
