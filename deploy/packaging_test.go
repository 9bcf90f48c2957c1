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
		t.Fatal("systemd-analyze not found: install systemd (Debian: apt-get install systemd; make test does it when run as root)")
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

// TestSystemdInstallStepsOnABareHost runs the install steps of
// invoiced.service's header (its "#   install …" lines) under an empty
// root, as on a host that has never seen invoiced, and checks that each
// succeeds, that the environment file ends up with mode 600 in a folder
// only its owner can enter, and that Documentation= names a file the
// steps installed.
func TestSystemdInstallStepsOnABareHost(t *testing.T) {
	t.Parallel()
	unit, err := os.ReadFile("invoiced.service")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	// What every systemd host has.
	for _, d := range []string{"usr/local/bin", "usr/share/doc", "etc/systemd/system"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	checkout := t.TempDir() // what the steps install from: a built checkout
	for _, f := range []string{"bin/invoiced", "deploy/invoiced.service", "README.md", "docs/operations.md"} {
		if err := os.MkdirAll(filepath.Join(checkout, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(checkout, f), []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	steps := regexp.MustCompile(`(?m)^#   (install .*?)(?:[ \t]+#.*)?$`).FindAllStringSubmatch(string(unit), -1)
	if len(steps) < 3 {
		t.Fatalf("invoiced.service's header has %d install steps", len(steps))
	}
	for _, s := range steps {
		step := regexp.MustCompile(` (/etc|/usr)/`).ReplaceAllString(s[1], " "+root+"$1/")
		cmd := exec.CommandContext(t.Context(), "sh", "-c", step)
		cmd.Dir = checkout
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("on a bare host, %q fails: %v\n%s", s[1], err, out)
		}
	}
	if fi, err := os.Stat(filepath.Join(root, "etc/invoiced/invoiced.env")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("invoiced.env after the steps: %v %v, want mode 600", fi, err)
	}
	if fi, err := os.Stat(filepath.Join(root, "etc/invoiced")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("/etc/invoiced after the steps: %v %v, want mode 700", fi, err)
	}
	for _, m := range regexp.MustCompile(`(?m)^Documentation=(.*)$`).FindAllStringSubmatch(string(unit), -1) {
		for _, u := range strings.Fields(m[1]) {
			path, ok := strings.CutPrefix(u, "file://")
			if !ok {
				continue // man: or https: pages need no install step
			}
			if _, err := os.Stat(filepath.Join(root, path)); err != nil {
				t.Errorf("Documentation=%s names a file the install steps do not install: %v", u, err)
			}
		}
	}
}
