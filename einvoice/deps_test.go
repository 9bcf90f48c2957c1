package einvoice_test

import (
	"testing"

	"github.com/invoiced/invoiced/internal/deptest"
)

// TestNoDatabaseNorNetwork keeps the e-invoice vocabulary pure: it links
// neither the database nor an HTTP client, so a till or a GSP client can
// share it.
func TestNoDatabaseNorNetwork(t *testing.T) {
	t.Parallel()
	deptest.Forbid(t, "github.com/invoiced/invoiced/einvoice", append(deptest.Database(), "net/http")...)
}
