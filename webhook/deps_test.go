package webhook_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestWebhookLeafHasNoDatabase: package webhook, which a receiver links
// to verify signatures, depends on no database code (pgx, pgxpool,
// internal/db, internal/groupcommit); the server's side of webhooks lives
// in webhook/outbox. (The Go client, which links it, is held to the same
// by client's TestClientHasNoDatabase.)
func TestWebhookLeafHasNoDatabase(t *testing.T) {
	t.Parallel()
	const module = "github.com/invoiced/invoiced/"
	out, err := exec.Command("go", "list", "-deps", module+"webhook").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed only %q", deps)
	}
	for _, dep := range deps {
		if strings.HasPrefix(dep, "github.com/jackc/pgx") || dep == module+"internal/db" || dep == module+"internal/groupcommit" {
			t.Errorf("package webhook depends on %s", dep)
		}
	}
}
