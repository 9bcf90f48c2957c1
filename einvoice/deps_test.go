package einvoice_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoDatabaseNorNetwork keeps the e-invoice vocabulary pure: it links
// neither a database driver nor an HTTP client, so a till or a GSP client
// can share it.
func TestNoDatabaseNorNetwork(t *testing.T) {
	t.Parallel()
	const module = "github.com/invoiced/invoiced/"
	out, err := exec.Command("go", "list", "-deps", module+"einvoice").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed only %q", deps)
	}
	for _, dep := range deps {
		if strings.HasPrefix(dep, "github.com/jackc/pgx") || dep == module+"internal/db" || dep == "net/http" {
			t.Errorf("package einvoice depends on %s", dep)
		}
	}
}
