package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pneuma-cli/pneuma/history"
)

// A job's CLI writes its config directory (a sandboxed agent too): a
// transcript it replaced with a symlink to a host file is not archived into
// the job's records (served by GET .../transcript), and the job is told why.
func TestArchiveRefusesASymlinkedTranscript(t *testing.T) {
	const sid = "0b7c5a52-1d3e-4f6a-9b8c-2d4e6f8a0b1c"
	secret := filepath.Join(t.TempDir(), "id_ed25519")
	if err := os.WriteFile(secret, []byte("PRIVATE KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, cwd := t.TempDir(), t.TempDir()
	real, _ := filepath.EvalSymlinks(cwd)
	proj := filepath.Join(history.ProjectsDir(cfg), history.ProjectDirName(real))
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(proj, sid+".jsonl")); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "transcript")
	path, err := transcripts{}.archive(context.Background(), []string{"CLAUDE_CONFIG_DIR=" + cfg}, cwd, sid, dst)
	if err == nil || !strings.Contains(err.Error(), "symlink") || path != "" {
		t.Errorf("archive of a symlinked transcript: %q, %v; want refused", path, err)
	}
	if data, err := os.ReadFile(filepath.Join(dst, sid+".jsonl")); err == nil {
		t.Errorf("the link's target was copied: %q", data)
	}
}
