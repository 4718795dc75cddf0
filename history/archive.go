package history

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Archive copies sessions (each transcript with its <sid>/ directory:
// subagents and tool results) out of configDir so that they outlive Claude
// Code's cleanup. dst is a directory, or a file ending in .tar.gz or .tgz.
// The archive keeps the projects layout (projects/<project-dir>/<sid>.jsonl),
// so it can be read back with `pneuma history --config-dir <dst>`.
func Archive(ctx context.Context, configDir string, sessionIDs []string, dst string) error {
	var files []archFile
	for _, id := range sessionIDs {
		s, err := Resolve(ctx, configDir, id)
		if err != nil {
			return fmt.Errorf("archive: %w", err)
		}
		rel := filepath.Join("projects", s.ProjectDir)
		fs, err := sessionFiles(s.Path, rel)
		if err != nil {
			return fmt.Errorf("archive session %s: %w", s.ID, err)
		}
		files = append(files, fs...)
	}
	return writeArchive(ctx, files, dst)
}

// ArchiveSessionFile copies one transcript to dstDir/<sid>.jsonl and its
// subagents and tool results to dstDir/<sid>/.
func ArchiveSessionFile(ctx context.Context, sessionFile, dstDir string) error {
	files, err := sessionFiles(sessionFile, "")
	if err != nil {
		return fmt.Errorf("archive %s: %w", sessionFile, err)
	}
	return writeArchive(ctx, files, dstDir)
}

// archFile is one file to copy: its source and its path inside the archive.
type archFile struct {
	src, rel string
	info     fs.FileInfo
	// base is the transcript's project directory, which src is under: the
	// copy opens src inside it and so never leaves it.
	base string
}

// sessionFiles lists a transcript and every regular file under its <sid>/
// directory, with archive paths under rel. Symlinks are never followed: a
// CLI (a sandboxed agent among them) writes its config directory, and a
// transcript linked to a host file would copy that file into the archive,
// so a symlinked transcript is refused and linked side files are left out.
func sessionFiles(sessionFile, rel string) ([]archFile, error) {
	fi, err := os.Lstat(sessionFile)
	if err != nil {
		return nil, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("%s is a symlink: a transcript is archived only as a file, never followed", sessionFile)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", sessionFile)
	}
	dir := SessionDir(sessionFile)
	base := filepath.Dir(sessionFile)
	out := []archFile{{src: sessionFile, rel: filepath.Join(rel, filepath.Base(sessionFile)), info: fi, base: base}}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil // directories are implied, symlinks not followed
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		r, err := filepath.Rel(base, p)
		if err != nil {
			return err
		}
		out = append(out, archFile{src: p, rel: filepath.Join(rel, r), info: info, base: base})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	// CLI 2.0.x kept subagent transcripts next to the sessions.
	for _, p := range topAgents(base)[strings.TrimSuffix(filepath.Base(sessionFile), ".jsonl")] {
		if info, err := os.Lstat(p); err == nil && info.Mode().IsRegular() {
			out = append(out, archFile{src: p, rel: filepath.Join(rel, filepath.Base(p)), info: info, base: base})
		}
	}
	return out, nil
}

func writeArchive(ctx context.Context, files []archFile, dst string) error {
	if strings.HasSuffix(dst, ".tar.gz") || strings.HasSuffix(dst, ".tgz") {
		return writeTarGz(ctx, files, dst)
	}
	for _, f := range files {
		if err := copyFile(ctx, f, filepath.Join(dst, f.rel)); err != nil {
			return err
		}
	}
	return nil
}

// copyFile copies through a temporary file and a rename, so a reader of dst
// never sees half a transcript. The copy holds the bytes present when it
// started; a line still being written stays torn, as in the source.
func copyFile(ctx context.Context, f archFile, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	in, err := openArchived(f)
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".*")
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = io.Copy(tmp, &ctxReader{ctx: ctx, r: io.LimitReader(in, f.info.Size())})
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("archive %s: %w", f.src, err)
	}
	if err := os.Chmod(tmp.Name(), 0o600); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	_ = os.Chtimes(dst, f.info.ModTime(), f.info.ModTime())
	return nil
}

func writeTarGz(ctx context.Context, files []archFile, dst string) (err error) {
	if dir := filepath.Dir(dst); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("archive: %w", err)
		}
	}
	out, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".*")
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	defer func() {
		if err != nil {
			out.Close()
			os.Remove(out.Name())
		}
	}()
	gz := gzip.NewWriter(out)
	tw := tar.NewWriter(gz)
	for _, f := range files {
		if err := addTar(ctx, tw, f); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	if err := gz.Close(); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	if err := os.Rename(out.Name(), dst); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	return nil
}

func addTar(ctx context.Context, tw *tar.Writer, f archFile) error {
	in, err := openArchived(f)
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	defer in.Close()
	hdr := &tar.Header{
		Name:    filepath.ToSlash(f.rel),
		Mode:    0o600,
		Size:    f.info.Size(),
		ModTime: f.info.ModTime(),
		Format:  tar.FormatPAX,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("archive %s: %w", f.src, err)
	}
	// Exactly Size bytes: a transcript that grew since the listing is cut
	// at the size in the header.
	if _, err := io.CopyN(tw, &ctxReader{ctx: ctx, r: in}, f.info.Size()); err != nil {
		return fmt.Errorf("archive %s: %w", f.src, err)
	}
	return nil
}

// ctxReader stops a long copy when ctx is cancelled.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// openArchived opens a listed file inside its project directory (os.Root):
// a symlink swapped in since the listing reaches nothing outside it. The
// open never blocks and keeps only the file that was listed: a file
// swapped in since (a link to another file of the project directory, or
// another file renamed into its place) is refused.
func openArchived(f archFile) (*os.File, error) {
	rel, err := filepath.Rel(f.base, f.src)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(f.base)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	in, err := root.OpenFile(rel, os.O_RDONLY|nonBlock, 0)
	if err != nil {
		return nil, &UnreadableError{Path: f.src, Err: err}
	}
	fi, err := in.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		in.Close()
		return nil, &UnreadableError{Path: f.src, Err: ErrNotRegular}
	}
	if !os.SameFile(fi, f.info) {
		in.Close()
		return nil, &UnreadableError{Path: f.src, Err: errSwapped}
	}
	return in, nil
}

// errSwapped is a listed file that another took the place of before the
// copy opened it.
var errSwapped = errors.New("not the file listed: it was replaced since")
