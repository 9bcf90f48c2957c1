package client_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/internal/docblocks"
)

// TestDependFromACheckout runs docs/client.md's two ways of depending on
// the client from a checkout (a replace directive; a workspace), each as
// written there, on a fresh module in a temporary directory whose program
// imports the client and the offline terminal, and checks that it builds
// against this checkout. It fails when the commands or the module stop
// working as documented.
func TestDependFromACheckout(t *testing.T) {
	t.Parallel()
	section := docblocks.Section(t, filepath.Join("..", "docs", "client.md"), "## Depending on the client from a checkout")
	blocks := docblocks.Blocks(section, "sh")
	if len(blocks) != 2 {
		t.Fatalf("the section has %d sh blocks, want the replace and the workspace", len(blocks))
	}
	checkout, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	// The blocks' go mod tidy resolves the module graph for every
	// platform (Windows-only dependencies of testcontainers-go too), which
	// building this checkout's tests never downloads. On a fresh machine
	// the cache holds them only once a tidy has run, so one runs here, in
	// the checkout, with the go environment as the developer has it; it
	// changes no file.
	tidy := exec.CommandContext(t.Context(), "go", "mod", "tidy", "-diff")
	tidy.Dir = checkout
	tidy.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	if out, err := tidy.CombinedOutput(); err != nil {
		t.Fatalf("go mod tidy -diff in %s (this checkout's go.mod must be tidy, its modules reachable): %v\n%s", checkout, err, out)
	}
	for i, name := range []string{"replace", "workspace"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			mod := filepath.Join(dir, "mypos")
			if err := os.Mkdir(mod, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(mod, "main.go"), []byte(program), 0o644); err != nil {
				t.Fatal(err)
			}
			run(t, mod, "go", "mod", "init", "example.com/mypos")
			// go mod tidy records the checksums of the client's test
			// dependencies too (pgx, for client/offline's tests). With the
			// module proxy off, the checksum database is out of reach as
			// well, so the module starts with this checkout's go.sum: the
			// checksums a developer's go would have fetched from it.
			sums, err := os.ReadFile(filepath.Join(checkout, "go.sum"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(mod, "go.sum"), sums, 0o644); err != nil {
				t.Fatal(err)
			}
			// The block as documented, with its checkout this one.
			script := regexp.MustCompile(`(?m)^CHECKOUT=.*$`).ReplaceAllString(blocks[i], "CHECKOUT="+checkout)
			run(t, dir, "bash", "-euc", script)
			gomod, err := os.ReadFile(filepath.Join(mod, "go.mod"))
			if err != nil {
				t.Fatal(err)
			}
			if name == "replace" && !strings.Contains(string(gomod), "github.com/invoiced/invoiced => "+checkout) {
				t.Fatalf("go.mod after the block:\n%s", gomod)
			}
		})
	}
}

// program imports the client and the offline terminal.
const program = `package main

import (
	"fmt"

	"github.com/invoiced/invoiced/client"
	"github.com/invoiced/invoiced/client/offline"
)

func main() {
	c := client.New("http://127.0.0.1:8080", "ik_…")
	fmt.Println(c != nil, offline.ErrEnded != nil)
}
`

// run runs name with args in dir, with the module proxy off (what the
// module needs is in the module cache), and fails the test with its output
// when it fails.
func run(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOPROXY=off", "GOWORK=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s in %s: %v\n%s", name, strings.Join(args, " "), dir, err, out)
	}
}
