package cmd_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The release build's -X flags reach `pneuma version` and `pneuma --version`.
func TestVersionFromLdflags(t *testing.T) {
	if testing.Short() {
		t.Skip("builds pneuma")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "pneuma")
	const pkg = "github.com/pneuma-cli/pneuma/cmd"
	ldflags := "-X " + pkg + ".Version=1.2.3 -X " + pkg + ".Commit=abc123 -X " + pkg + ".Date=2026-11-23T10:00:00Z"
	if out, err := exec.CommandContext(ctx, "go", "build", "-ldflags", ldflags, "-o", bin, "..").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.CommandContext(ctx, bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("pneuma version: %v\n%s", err, out)
	}
	for _, want := range []string{"pneuma 1.2.3\n", "commit abc123\n", "built  2026-11-23T10:00:00Z\n", "go     go1."} {
		if !strings.Contains(string(out), want) {
			t.Errorf("pneuma version lacks %q:\n%s", want, out)
		}
	}
	out, err = exec.CommandContext(ctx, bin, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "1.2.3") {
		t.Errorf("pneuma --version: %v %s", err, out)
	}
}

// Without -X flags the version is dev (or the module version go install
// recorded) and the command still works.
func TestVersionDefault(t *testing.T) {
	r := run(t, "", nil, "version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "pneuma ") || !strings.Contains(r.stdout, "\ncommit ") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
