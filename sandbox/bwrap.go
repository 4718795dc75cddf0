package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// systemDirs are bound read-only when they exist (a symlink, as /bin is on
// merged-/usr systems, is recreated as the same symlink).
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"}

// namespaceFlags isolate the sandbox: its own user, mount, pid, network,
// ipc, uts and cgroup namespaces; no capability inside (as root,
// bubblewrap would keep them all: enough to remount a read-only bind
// writable) and no user namespace nested inside to get them back; its own
// session (no terminal injection); an end with its parent.
var namespaceFlags = []string{"--unshare-all", "--unshare-user", "--disable-userns", "--cap-drop", "ALL",
	"--die-with-parent", "--new-session"}

// argv collects bubblewrap arguments.
type argv []string

func (a *argv) add(s ...string) { *a = append(*a, s...) }

// bind adds a bind of path onto itself, when it exists.
func (a *argv) bind(flag, path string) {
	if !filepath.IsAbs(path) {
		return // never relative: bubblewrap would resolve it against its own cwd
	}
	if _, err := os.Lstat(path); err == nil {
		a.add(flag, path, path)
	}
}

// bwrapArgs confines a command whose working directory is dir. Later
// mounts cover earlier ones, so the order is: namespaces, system, private
// tmp and home, the repository read-only, the job's read and write paths,
// then what protects pneuma and the repository (see protect), so that no
// read or write path, whatever it names, undoes it: the repository's git
// dir read-only, its .pneuma hidden, pneuma read-only (Open refuses a write
// path holding pneuma or the CLI); then the job's worktree and what git
// needs to commit on its branch.
func (b *Box) bwrapArgs(dir string) []string {
	var a argv
	a.add(namespaceFlags...)
	for _, d := range systemDirs {
		if target, err := os.Readlink(d); err == nil {
			a.add("--symlink", target, d)
			continue
		}
		a.bind("--ro-bind", d)
	}
	a.add("--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp")
	if h := b.cfg.Home; h != "" && h != "/" {
		a.add("--tmpfs", h)
	}
	// Before the repository and the read paths: a symlink cannot be made
	// in a read-only bind, and one of theirs shows the CLI already.
	a.add(cliArgs(b.cfg.Binary)...)
	if r := b.cfg.Repo; r != "" {
		a.bind("--ro-bind", r)
	}
	for _, p := range b.cfg.Spec.Read {
		a.bind("--ro-bind", p)
	}
	for _, p := range b.cfg.Spec.Write {
		a.bind("--bind", p)
	}
	a.add(b.protect(dir)...)
	a.add(b.gitArgs(dir)...)
	a.bind("--bind", b.configDir)
	if b.cfg.ConfigSrc != "" {
		if cred := filepath.Join(b.cfg.ConfigSrc, ".credentials.json"); fileExists(cred) {
			a.add("--ro-bind", cred, filepath.Join(b.configDir, ".credentials.json"))
		}
	}
	a.add("--bind", filepath.Join(b.sockDir, "proxy.sock"), insideSocket)
	a.add("--chdir", dir)
	return a
}

// protect are the binds that keep the job's read and write paths (which
// come before them) from opening what the job must not change, and the
// job's worktree: the repository's .git read-only (its config names
// filter, diff and merge drivers that pneuma's own git, run outside after
// the job, would run: a write path of "." or ".git" must not reach it;
// gitBinds opens what a commit on the job's branch needs), its .pneuma
// hidden (other jobs' worktrees, the runs' records and state), pneuma's
// executable read-only (Open refuses a write path that holds it or the
// CLI). The worktree is bound after a hidden .pneuma that holds it, before
// one that does not (a job without a worktree works in the repository
// itself, whose .pneuma stays hidden; its .git is then writable but for
// the config and hooks gitBinds binds read-only over it).
func (b *Box) protect(dir string) []string {
	var a argv
	if r := b.cfg.Repo; r != "" && !within(filepath.Join(r, ".git"), dir) {
		a.bind("--ro-bind", filepath.Join(r, ".git"))
	}
	// Each mount costs bubblewrap time: none for what a system dir shows.
	if !inSystemDir(b.cfg.Self) {
		a.bind("--ro-bind", b.cfg.Self)
	}
	hide := ""
	if r := b.cfg.Repo; r != "" {
		if _, err := os.Stat(filepath.Join(r, ".pneuma")); err == nil {
			hide = filepath.Join(r, ".pneuma")
		}
	}
	switch {
	case hide != "" && within(dir, hide):
		a.add("--tmpfs", hide)
		a.bind("--bind", dir)
	case hide != "":
		a.bind("--bind", dir)
		a.add("--tmpfs", hide)
	default:
		a.bind("--bind", dir)
	}
	return a
}

// checkWrite refuses a write path that is or holds a program pneuma runs
// outside the sandbox: pneuma itself (and its forwarder), the CLI (the
// path it is run by, its installation, the node beside it). Inside, the
// agent could replace it.
func checkWrite(cfg Config) error {
	var progs []string
	for _, p := range []string{cfg.Self, forwarder(cfg.Self), cfg.Binary} {
		if p == "" || !filepath.IsAbs(p) {
			continue
		}
		progs = append(progs, filepath.Clean(p), filepath.Join(filepath.Dir(p), "node"))
		if real, err := filepath.EvalSymlinks(p); err == nil {
			progs = append(progs, real, cliInstall(real))
		}
	}
	for i, w := range cfg.Spec.Write {
		dirs := []string{filepath.Clean(w)}
		if real, err := filepath.EvalSymlinks(w); err == nil {
			dirs = append(dirs, real)
		}
		for _, p := range progs {
			for _, d := range dirs {
				if within(p, d) {
					return fmt.Errorf("sandbox: write[%d] %s holds %s, a program pneuma runs outside the sandbox: the agent could replace it", i, w, p)
				}
			}
		}
	}
	return nil
}

// inSystemDir reports whether path is inside one of the systemDirs bound
// read-only (a real directory, not a symlink), so already shown as it is.
func inSystemDir(path string) bool {
	for _, d := range systemDirs {
		if fi, err := os.Lstat(d); err == nil && fi.IsDir() && within(path, d) {
			return true
		}
	}
	return false
}

// within reports whether path is dir or below it (lexically; both clean
// and absolute).
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && filepath.IsAbs(path) && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// cliArgs show the CLI at binary inside, read-only, and nothing beside
// it: its installation (see cliInstall), and the path it is run by when
// that is a symlink to it (the native installer's ~/.local/bin/claude, npm's
// bin/claude), recreated as a symlink to the real file. An npm install
// whose entry is a script (cli.js) runs on the node beside that symlink
// (nvm, fnm, an npm prefix in $HOME): that node is shown too.
func cliArgs(binary string) []string {
	if binary == "" || !filepath.IsAbs(binary) {
		return nil
	}
	var a argv
	real := a.show(filepath.Clean(binary), cliInstall)
	if real != "" && real != filepath.Clean(binary) && isScript(real) {
		if node := filepath.Join(filepath.Dir(binary), "node"); fileExists(node) {
			a.show(node, func(real string) string { return real })
		}
	}
	return a
}

// show binds what path needs (need of its real path) read-only, and path
// itself as a symlink to its real path when it is one; nothing under a
// system dir, which shows it already. It returns the real path ("" when
// path cannot be resolved).
func (a *argv) show(path string, need func(real string) string) string {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return ""
	}
	if n := need(real); !inSystemDir(n) {
		a.bind("--ro-bind", n)
	}
	if path != real && !inSystemDir(path) {
		a.add("--symlink", real, path)
	}
	return real
}

// isScript reports whether the file at path starts with "#!".
func isScript(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 2)
	_, err = io.ReadFull(f, head)
	return err == nil && string(head) == "#!"
}

// cliInstall is what the CLI whose real path is real needs to run: its
// package directory for an npm install (node_modules/@anthropic-ai/claude-code,
// its bin/claude.exe or its cli.js), else the file itself, a single-file
// binary (the native installer's ~/.local/share/claude/versions/X, a copy in
// ~/bin), so that the files beside it stay hidden.
func cliInstall(real string) string {
	d := filepath.Dir(real)
	switch {
	case claudePackage(d): // cli.js
		return d
	case filepath.Base(d) == "bin" && claudePackage(filepath.Dir(d)): // bin/claude.exe
		return filepath.Dir(d)
	}
	return real
}

// cliPackage is the npm package that holds the CLI.
const cliPackage = "@anthropic-ai/claude-code"

// claudePackage reports whether dir is the CLI's npm package (its
// package.json names it): any other package.json beside a binary, such as
// one in $HOME, opens nothing.
func claudePackage(dir string) bool {
	f, err := os.Open(filepath.Join(dir, "package.json"))
	if err != nil {
		return false
	}
	defer f.Close()
	var pkg struct {
		Name string `json:"name"`
	}
	err = json.NewDecoder(io.LimitReader(f, 1<<20)).Decode(&pkg)
	return err == nil && pkg.Name == cliPackage
}

// gitBinds opens what git needs to commit on the worktree's own branch:
// the worktree's record in the repository, and its branch's ref through
// own (see ownRef; nil when dir is no linked worktree on a branch). record
// and common are the worktree's record and the repository's git dir for a
// linked worktree ("" otherwise): the repository's object store, shared
// by every branch, stays read-only, and objects git writes inside go to a
// private store (see objStore, whose binds the caller adds). The
// repository's config, hooks and other refs stay
// read-only: its git dir is bound read-only before (see protect for the
// repository's own .git). A directory that is its own repository (no
// linked worktree) is writable already: its config and hooks are bound
// read-only over it.
func gitBinds(dir, state, repo string) (args []string, own *ownRef, record, common string) {
	var a argv
	dotgit := filepath.Join(dir, ".git")
	fi, err := os.Lstat(dotgit)
	switch {
	case err != nil:
		return nil, nil, "", ""
	case fi.IsDir():
		a.bind("--ro-bind", filepath.Join(dotgit, "config"))
		a.bind("--ro-bind", filepath.Join(dotgit, "hooks"))
		// Its objects are where they are: the stores its alternates name
		// are shown where git resolves them from there.
		if objects := filepath.Join(dotgit, "objects"); filepath.IsAbs(objects) {
			for _, alt := range alternates(objects, objects, dotgit, 0, map[string]bool{objects: true}) {
				a.add("--ro-bind", alt.host, alt.inside)
			}
		}
		return a, nil, "", ""
	}
	record, common, ref, err := worktreeGit(dotgit)
	if err != nil {
		return nil, nil, "", ""
	}
	// The repository's own .git is bound read-only already (see protect);
	// a git dir elsewhere is bound read-only here, so that no write path
	// holding it opens its config, hooks or other refs.
	if repo == "" || !samePath(common, filepath.Join(repo, ".git")) {
		a.bind("--ro-bind", common)
	}
	a.bind("--bind", record)
	if ref != "" {
		own = newOwnRef(common, ref, state)
	}
	return a, own, record, common
}

// samePath reports whether a and b name the same file: equal when clean,
// or after symbolic links are resolved.
func samePath(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

// worktreeGit reads a linked worktree's .git file: its record in the
// repository, the repository's git dir and the branch its HEAD is on.
func worktreeGit(dotgit string) (record, common, ref string, err error) {
	data, err := os.ReadFile(dotgit)
	if err != nil {
		return "", "", "", err
	}
	rest, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir: ")
	if !ok {
		return "", "", "", errors.New("not a gitdir file")
	}
	record = rest
	if !filepath.IsAbs(record) {
		record = filepath.Join(filepath.Dir(dotgit), record)
	}
	cd, err := os.ReadFile(filepath.Join(record, "commondir"))
	if err != nil {
		return "", "", "", err
	}
	common = strings.TrimSpace(string(cd))
	if !filepath.IsAbs(common) {
		common = filepath.Join(record, common)
	}
	common = filepath.Clean(common)
	if head, err := os.ReadFile(filepath.Join(record, "HEAD")); err == nil {
		if r, ok := strings.CutPrefix(strings.TrimSpace(string(head)), "ref: "); ok && strings.HasPrefix(r, "refs/heads/") && !strings.Contains(r, "..") {
			ref = r
		}
	}
	return record, common, ref, nil
}

// copyConfig makes the job's private copy of the CLI's config dir: its
// settings, agents, commands and skills, and ~/.claude.json (as
// .claude.json inside, where the CLI looks when CLAUDE_CONFIG_DIR is set).
// Transcripts and other sessions are not copied; credentials are bound
// read-only over a placeholder.
func copyConfig(cfg Config) (string, error) {
	dst := filepath.Join(cfg.StateDir, "claude-config")
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return "", fmt.Errorf("sandbox: config dir: %w", err)
	}
	if cfg.ConfigSrc != "" {
		if err := copyTree(cfg.ConfigSrc, dst, 0); err != nil {
			return "", fmt.Errorf("sandbox: copy %s: %w", cfg.ConfigSrc, err)
		}
		if fileExists(filepath.Join(cfg.ConfigSrc, ".credentials.json")) {
			if err := touch(filepath.Join(dst, ".credentials.json")); err != nil {
				return "", fmt.Errorf("sandbox: config dir: %w", err)
			}
		}
	}
	if cfg.ConfigJSON != "" && fileExists(cfg.ConfigJSON) {
		if err := copyFile(cfg.ConfigJSON, filepath.Join(dst, ".claude.json")); err != nil {
			return "", fmt.Errorf("sandbox: copy %s: %w", cfg.ConfigJSON, err)
		}
	}
	return dst, nil
}

// skippedFiles are config dir files not copied: the credentials (bound
// read-only instead) and the prompt history of every project.
var skippedFiles = map[string]bool{".credentials.json": true, "history.jsonl": true}

// copiedDirs are the subdirectories of the config dir that are copied.
var copiedDirs = map[string]bool{"agents": true, "commands": true, "skills": true, "output-styles": true}

// copyTree copies regular files (and, at the top, copiedDirs) from src to
// dst, leaving files dst already has alone.
func copyTree(src, dst string, depth int) error {
	entries, err := os.ReadDir(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	for _, e := range entries {
		s, d := filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())
		switch {
		case e.Type().IsRegular() && !skippedFiles[e.Name()] && !strings.Contains(e.Name(), ".backup"):
			if fileExists(d) {
				continue
			}
			if err := copyFile(s, d); err != nil {
				return err
			}
		case e.IsDir() && (depth > 0 || copiedDirs[e.Name()]) && depth < 8:
			if err := os.MkdirAll(d, 0o700); err != nil {
				return err
			}
			if err := copyTree(s, d, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }() // read-only
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

func touch(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}

func fileExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}
