package webhook_test

import (
	"testing"

	"github.com/invoiced/invoiced/internal/deptest"
)

// TestWebhookLeafHasNoDatabase: package webhook, which a receiver links
// to verify signatures, depends on no database code (pgx, pgxpool,
// internal/db, internal/groupcommit); the server's side of webhooks lives
// in webhook/outbox. (The Go client, which links it, is held to the same
// by client's TestClientHasNoDatabase.)
func TestWebhookLeafHasNoDatabase(t *testing.T) {
	t.Parallel()
	deptest.Forbid(t, "github.com/invoiced/invoiced/webhook", deptest.Database()...)
}
