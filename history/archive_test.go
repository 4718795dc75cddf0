package history

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestArchiveSessionFile(t *testing.T) {
	src := filepath.Join("testdata", "projects", "-home-me-proj", sidA+".jsonl")
	dst := t.TempDir()
	if err := ArchiveSessionFile(context.Background(), src, dst); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{
		sidA + ".jsonl",
		filepath.Join(sidA, "subagents", "agent-aab48416e4424e297.jsonl"),
		filepath.Join(sidA, "subagents", "agent-aab48416e4424e297.meta.json"),
		filepath.Join(sidA, "tool-results", "toolu_1.txt"),
	} {
		want, _ := os.ReadFile(filepath.Join("testdata", "projects", "-home-me-proj", rel))
		got, err := os.ReadFile(filepath.Join(dst, rel))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %v (copy differs: %v)", rel, err, !bytes.Equal(got, want))
		}
	}
	// The copy is itself readable: same usage as the original.
	a, _ := TranscriptUsage(context.Background(), src, nil)
	b, err := TranscriptUsage(context.Background(), filepath.Join(dst, sidA+".jsonl"), nil)
	if err != nil || a.CostUSD != b.CostUSD || a.APICalls != b.APICalls {
		t.Errorf("usage of the copy = %+v, %v; original %+v", b, err, a)
	}
}

func TestArchiveDirectoryIsAConfigDir(t *testing.T) {
	ctx := context.Background()
	dst := t.TempDir()
	if err := Archive(ctx, "testdata", []string{"cccc", sidB}, dst); err != nil {
		t.Fatal(err)
	}
	c, err := Scan(ctx, dst, ScanOptions{Summary: true})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(c.Sessions()); n != 2 {
		t.Errorf("archive read back as a config dir holds %d sessions, want 2", n)
	}
	if err := Archive(ctx, "testdata", []string{"nope"}, dst); err == nil {
		t.Error("archiving an unknown session succeeded")
	}
	ctx2, cancel := context.WithCancel(ctx)
	cancel()
	if err := Archive(ctx2, "testdata", []string{sidA}, filepath.Join(t.TempDir(), "x.tar.gz")); err == nil {
		t.Error("a cancelled archive succeeded")
	}
}

// A CLI writes its own config directory (a sandboxed agent too): a
// transcript it replaced with a symlink to a host file is refused, said,
// and nothing of the target is copied; a linked side file is left out, and
// one swapped for a link after the listing is not followed out of the
// project directory.
func TestArchiveNeverFollowsSymlinks(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "id_ed25519")
	if err := os.WriteFile(secret, []byte("PRIVATE KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(t.TempDir(), "projects", "-work")
	if err := os.MkdirAll(filepath.Join(proj, sidA, "subagents"), 0o755); err != nil {
		t.Fatal(err)
	}
	transcript := filepath.Join(proj, sidA+".jsonl")
	if err := os.Symlink(secret, transcript); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	err := ArchiveSessionFile(context.Background(), transcript, dst)
	if err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("symlinked transcript archived: %v", err)
	}
	assertNoSecret(t, dst)

	// A real transcript with a linked subagent file: the link is left out.
	os.Remove(transcript)
	if err := os.WriteFile(transcript, []byte(`{"type":"user"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(proj, sidA, "subagents", "agent-a.jsonl")); err != nil {
		t.Fatal(err)
	}
	if err := ArchiveSessionFile(context.Background(), transcript, dst); err != nil {
		t.Fatal(err)
	}
	assertNoSecret(t, dst)

	// Listed as a file, then swapped for a link before the copy opens it.
	files, err := sessionFiles(transcript, "")
	if err != nil || len(files) != 1 {
		t.Fatalf("listing: %v %v", files, err)
	}
	os.Remove(transcript)
	if err := os.Symlink(secret, transcript); err != nil {
		t.Fatal(err)
	}
	if in, err := openArchived(files[0]); err == nil {
		in.Close()
		t.Error("a transcript swapped for a link to a host file was opened")
	}

	// Listed as a file, then swapped for a link to another file inside the
	// project directory (which os.Root alone would follow), or for another
	// file renamed into its place: neither is opened.
	other := filepath.Join(proj, sidB+".jsonl")
	if err := os.WriteFile(other, []byte("OTHER SESSION"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Remove(transcript)
	if err := os.WriteFile(transcript, []byte(`{"type":"user"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if files, err = sessionFiles(transcript, ""); err != nil || len(files) != 1 {
		t.Fatalf("listing: %v %v", files, err)
	}
	os.Remove(transcript)
	if err := os.Symlink(sidB+".jsonl", transcript); err != nil {
		t.Fatal(err)
	}
	if in, err := openArchived(files[0]); err == nil || !errors.Is(err, errSwapped) {
		if in != nil {
			in.Close()
		}
		t.Errorf("a transcript swapped for a link inside the project dir: %v, want errSwapped", err)
	}
	os.Remove(transcript)
	if err := os.Rename(other, transcript); err != nil {
		t.Fatal(err)
	}
	if in, err := openArchived(files[0]); err == nil || !errors.Is(err, errSwapped) {
		if in != nil {
			in.Close()
		}
		t.Errorf("a transcript replaced by another file: %v, want errSwapped", err)
	}
}

func assertNoSecret(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if data, _ := os.ReadFile(p); bytes.Contains(data, []byte("PRIVATE KEY")) {
				t.Errorf("%s holds the link's target", p)
			}
		}
		return nil
	})
}
