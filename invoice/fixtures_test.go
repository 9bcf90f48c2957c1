package invoice_test

import (
	"time"

	"github.com/invoiced/invoiced/internal/testfactory"
)

// now is the tests' clock: 2026-11-29 08:50 IST.
var now = time.Date(2026, 11, 29, 3, 20, 0, 0, time.UTC)

// chai returns a line of masala chai.
var chai = testfactory.Chai
