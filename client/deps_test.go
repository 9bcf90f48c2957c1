package client_test

import (
	"testing"

	"github.com/invoiced/invoiced/internal/deptest"
)

// TestClientHasNoDatabase checks that no package of client/... (the HTTP
// client and the offline terminal, which a till links) imports, even
// transitively, pgx or one of its subpackages, internal/db or
// internal/groupcommit: the invoice maths and the chain it shares with the
// server live in packages gst and document, which import no database. It
// names each forbidden package with the packages that import it directly.
func TestClientHasNoDatabase(t *testing.T) {
	t.Parallel()
	deptest.Forbid(t, "github.com/invoiced/invoiced/client/...", deptest.Database()...)
}
