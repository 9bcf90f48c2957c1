package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSystemdUnitVerifies runs `systemd-analyze verify` on
// deploy/invoiced.service (with ExecStart pointing at an executable that
// exists here) and wants no complaint: an unknown hardening option or
// system call group is only a warning to systemd, and would silently
// weaken the sandbox.
func TestSystemdUnitVerifies(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatal("systemd-analyze not found: install systemd (Debian: apt-get install systemd)")
	}
	unit, err := os.ReadFile("invoiced.service")
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(unit), "/usr/local/bin/invoiced", self)
	text = strings.ReplaceAll(text, "EnvironmentFile=/", "EnvironmentFile=-/")
	path := filepath.Join(t.TempDir(), "invoiced.service")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), bin, "verify", path).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	for _, want := range []string{"DynamicUser=yes", "NoNewPrivileges=yes", "ProtectSystem=strict", "CapabilityBoundingSet=\n", "SystemCallFilter=@system-service"} {
		if !strings.Contains(string(unit), want) {
			t.Errorf("invoiced.service lost %q", strings.TrimSpace(want))
		}
	}
}

// TestDockerfileMatchesTheModule: the build stage uses go.mod's Go
// version, builds cmd/invoiced statically, and the image runs as a
// non-root user on a distroless base.
func TestDockerfileMatchesTheModule(t *testing.T) {
	t.Parallel()
	df, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(mod)
	if goVersion == nil {
		t.Fatal("no go directive in go.mod")
	}
	text := string(df)
	for _, want := range []string{
		"FROM golang:" + string(goVersion[1]) + "-",
		"CGO_ENABLED=0 go build",
		"./cmd/invoiced",
		"FROM gcr.io/distroless/static-debian12:nonroot",
		"USER nonroot:nonroot",
		"-X main.revision=",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("deploy/Dockerfile lacks %q", want)
		}
	}
	if regexp.MustCompile(`(?m)^USER (root|0)\b`).MatchString(text) {
		t.Error("deploy/Dockerfile runs as root")
	}
	ignore, err := os.ReadFile("../.dockerignore")
	if err != nil || !strings.Contains(string(ignore), ".data") {
		t.Errorf(".dockerignore must keep .data/ (the local cluster, the demo key) out of the build context: %v", err)
	}
}
