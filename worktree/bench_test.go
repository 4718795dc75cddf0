package worktree

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
)

// benchRepo makes a repository whose main branch holds files small files in
// 100 directories, written with git fast-import (no checkout).
func benchRepo(b *testing.B, m *Manager, files int) string {
	b.Helper()
	dir := b.TempDir()
	gitT(b, m, dir, "init", "-q", "-b", "main")
	var stream bytes.Buffer
	stream.WriteString("commit refs/heads/main\ncommitter Bench <bench@example.com> 0 +0000\ndata 5\nbench\n")
	for i := range files {
		content := fmt.Sprintf("package p%d\n\n// File %d of the benchmark tree.\nconst N = %d\n", i%100, i, i)
		fmt.Fprintf(&stream, "M 100644 inline pkg%02d/file%05d.go\ndata %d\n%s\n", i%100, i, len(content), content)
	}
	if _, err := m.exec(testCtx(b), run{args: []string{"-C", dir, "fast-import", "--quiet"}, stdin: &stream}); err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkCreate measures Create (ref checks plus git worktree add,
// checkout included) of a 10-file and a 10,000-file tree; removal runs
// outside the timer.
func BenchmarkCreate(b *testing.B) {
	for _, files := range []int{10, 10000} {
		b.Run(strconv.Itoa(files)+"-files", func(b *testing.B) {
			m := testManager(b, identityConfig)
			repo := benchRepo(b, m, files)
			ctx := b.Context()
			root := b.TempDir()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				path := filepath.Join(root, "w"+strconv.Itoa(i))
				if err := m.Create(ctx, CreateOptions{Repo: repo, Path: path, Branch: "bench/" + strconv.Itoa(i), Base: "main"}); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := m.Remove(ctx, repo, path); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// BenchmarkResolveRef compares go-git's answer with a git rev-parse process.
func BenchmarkResolveRef(b *testing.B) {
	m := testManager(b, identityConfig)
	repo := benchRepo(b, m, 10000)
	ctx := testCtx(b)
	b.Run("go-git", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := m.ResolveRef(ctx, repo, "main"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("git-rev-parse", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := m.output(ctx, "-C", repo, "rev-parse", "--verify", "main^{commit}"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkWatch measures what a job with nothing to commit costs instead of
// a scan: starting a Watch on a fresh 10,000-file worktree (100
// directories) and asking it whether anything changed.
func BenchmarkWatch(b *testing.B) {
	m := testManager(b, identityConfig)
	repo := benchRepo(b, m, 10000)
	ctx := testCtx(b)
	path := filepath.Join(b.TempDir(), "w")
	if err := m.Create(ctx, CreateOptions{Repo: repo, Path: path, Branch: "bench/watch", Base: "main"}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		w := m.Watch(path)
		if !w.Untouched() {
			b.Fatal("a fresh worktree is not untouched")
		}
		w.Close()
	}
}

// BenchmarkCommitAllNothing is the scan the Watch saves: CommitAll of a
// worktree with nothing to commit, right after its checkout (git must
// rehash files whose stat data is as new as its index).
func BenchmarkCommitAllNothing(b *testing.B) {
	m := testManager(b, identityConfig)
	repo := benchRepo(b, m, 10000)
	ctx := testCtx(b)
	root := b.TempDir()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		path := filepath.Join(root, "w"+strconv.Itoa(i))
		if err := m.Create(ctx, CreateOptions{Repo: repo, Path: path, Branch: "bench/c" + strconv.Itoa(i), Base: "main"}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, committed, err := m.CommitAll(ctx, path, "", "nothing"); err != nil || committed {
			b.Fatal(committed, err)
		}
	}
}
