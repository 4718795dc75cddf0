package history

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
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
