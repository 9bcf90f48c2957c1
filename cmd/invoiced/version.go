package main

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"time"
)

// runVersion prints the module version, VCS revision and Go version the
// binary was built with. It never fails except on a usage error.
func runVersion(_ context.Context, e env, args []string) error {
	fs := newFlagSet(e, "version", "")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, versionString())
	return nil
}

// revision is the VCS revision when the linker sets it (make build does:
// -X main.revision=...). The Go toolchain stamps the revision itself only
// in a checkout whose .git is a folder, not in a git worktree or a source
// tree copied without .git (a Docker build context); the Makefile and
// deploy/Dockerfile pass it here instead.
var revision string

// versionString returns "invoiced VERSION (rev REV[+modified], committed
// DATE, GOVERSION)" from the build information embedded by the Go
// toolchain, or from revision when the toolchain recorded none.
func versionString() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "invoiced (unknown version)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var details []string
	var rev, at string
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		rev, dirty = strings.CutSuffix(revision, "+modified")
	}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if dirty {
			rev += "+modified"
		}
		details = append(details, "rev "+rev)
	}
	if at != "" {
		if t, err := time.Parse(time.RFC3339, at); err == nil {
			at = t.UTC().Format("2006-01-02")
		}
		details = append(details, "committed "+at)
	}
	details = append(details, bi.GoVersion)
	return fmt.Sprintf("invoiced %s (%s)", v, strings.Join(details, ", "))
}
