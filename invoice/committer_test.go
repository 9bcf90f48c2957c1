package invoice_test

import "github.com/invoiced/invoiced/invoice"

// mustCommitter returns c, panicking when its constructor refused the
// test's configuration (a bug in the test).
func mustCommitter(c *invoice.Committer, err error) *invoice.Committer {
	if err != nil {
		panic(err)
	}
	return c
}
