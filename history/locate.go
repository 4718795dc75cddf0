package history

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"

	"golang.org/x/text/unicode/norm"
)

// ErrNotFound is returned when no session matches an id, prefix or path.
var ErrNotFound = errors.New("session not found")

// AmbiguousError is returned when a session id prefix matches several sessions.
type AmbiguousError struct {
	Prefix  string
	Matches []string
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("session prefix %q is ambiguous: %s", e.Prefix, strings.Join(e.Matches, ", "))
}

// ConfigDir returns Claude Code's configuration directory: $CLAUDE_CONFIG_DIR
// (NFC-normalised, as the CLI does) or $HOME/.claude.
func ConfigDir(getenv func(string) string) string {
	if d := getenv("CLAUDE_CONFIG_DIR"); d != "" {
		return norm.NFC.String(d)
	}
	home := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".claude")
}

// ProjectsDir returns the directory that holds one directory per project.
func ProjectsDir(configDir string) string { return filepath.Join(configDir, "projects") }

// maxEncodedLen is where the CLI cuts an encoded project path and appends a hash.
const maxEncodedLen = 200

// ProjectDirName returns the name of the project directory the CLI uses for
// cwd (reference 4.2): every UTF-16 code unit other than [A-Za-z0-9] becomes
// '-'; encodings longer than 200 units are cut and suffixed with '-' and the
// base-36 absolute value of the Java-style int32 hash of the original path.
// cwd must already be the realpath, as the CLI resolves symlinks first.
func ProjectDirName(cwd string) string {
	units := utf16.Encode([]rune(cwd))
	enc := make([]byte, len(units))
	for i, u := range units {
		switch {
		case u >= 'a' && u <= 'z', u >= 'A' && u <= 'Z', u >= '0' && u <= '9':
			enc[i] = byte(u)
		default:
			enc[i] = '-'
		}
	}
	if len(enc) <= maxEncodedLen {
		return string(enc)
	}
	var h int32
	for _, u := range units {
		h = h<<5 - h + int32(u)
	}
	abs := int64(h)
	if abs < 0 {
		abs = -abs
	}
	return string(enc[:maxEncodedLen]) + "-" + strconv.FormatInt(abs, 36)
}

// SessionPath returns the transcript of session sessionID started in cwd. It
// resolves cwd's symlinks, looks in the encoded project directory and confirms
// the file by the cwd recorded inside it (encodings collide); failing that, it
// scans every project for the session id.
func SessionPath(configDir, cwd, sessionID string) (string, error) {
	if !validSessionID(sessionID) {
		return "", fmt.Errorf("invalid session id %q", sessionID)
	}
	real := cwd
	if r, err := filepath.EvalSymlinks(cwd); err == nil {
		real = r
	}
	candidate := filepath.Join(ProjectsDir(configDir), ProjectDirName(real), sessionID+".jsonl")
	if _, err := os.Stat(candidate); err == nil {
		if got := FileCwd(candidate); got == "" || got == real || got == cwd {
			return candidate, nil
		}
	}
	paths, err := findByID(configDir, sessionID)
	if err != nil {
		return "", err
	}
	for _, p := range paths {
		if got := FileCwd(p); got == real || got == cwd {
			return p, nil
		}
	}
	if len(paths) > 0 {
		return paths[0], nil
	}
	if _, err := os.Stat(candidate); err == nil {
		return candidate, nil
	}
	return "", fmt.Errorf("session %s of %s: %w", sessionID, cwd, ErrNotFound)
}

// findByID returns every top-level transcript named sessionID.jsonl.
func findByID(configDir, sessionID string) ([]string, error) {
	dirs, err := os.ReadDir(ProjectsDir(configDir))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("list projects: %w", err)
	}
	var out []string
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		p := filepath.Join(ProjectsDir(configDir), d.Name(), sessionID+".jsonl")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			out = append(out, p)
		}
	}
	return out, nil
}

// validSessionID rejects ids that could escape a directory.
func validSessionID(id string) bool {
	return id != "" && !strings.ContainsAny(id, `/\`) && id != "." && id != ".."
}

// SessionFile is one top-level transcript in the projects tree.
type SessionFile struct {
	// ID is the session id (the file name without .jsonl).
	ID string
	// Path is the transcript's path.
	Path string
	// ProjectDir is the encoded project directory name.
	ProjectDir string
	// noDir is set by List when the session has no <sid>/ directory, so
	// there are no subagents to look for there.
	noDir bool
}

// Subagents returns the subagent transcripts of the session, sorted. Files
// that cannot be read are left out (SubagentFiles reports them).
func (s SessionFile) Subagents() []string { return s.SubagentFiles(nil) }

// SubagentFiles returns the subagent transcripts of the session, sorted:
// <sid>/subagents/agent-*.jsonl, the agents of its workflow runs
// (<sid>/subagents/workflows/<run>/agent-*.jsonl, CLI 2.1.332) and CLI 2.0.x
// agent files at the top of the project. It calls warn (when not nil) for each agent-*.jsonl that is not a
// readable file.
func (s SessionFile) SubagentFiles(warn func(Warning)) []string {
	return s.subagentFiles(topAgents(filepath.Dir(s.Path)), warn)
}

// subagentFiles is SubagentFiles with the project's top-level agent files
// (by parent session id) already known.
func (s SessionFile) subagentFiles(top map[string][]string, warn func(Warning)) []string {
	var m []string
	if !s.noDir {
		m, _ = filepath.Glob(filepath.Join(SessionDir(s.Path), "subagents", "agent-*.jsonl"))
		// CLI 2.1.332 workflows: one directory per run of the Workflow tool.
		w, _ := filepath.Glob(filepath.Join(SessionDir(s.Path), "subagents", "workflows", "*", "agent-*.jsonl"))
		m = append(m, w...)
	}
	id := s.ID
	if id == "" {
		id = strings.TrimSuffix(filepath.Base(s.Path), ".jsonl")
	}
	m = append(m, top[id]...)
	sort.Strings(m)
	out := m[:0]
	for _, p := range m {
		if _, err := checkRegular(p); err != nil {
			if warn != nil {
				warn(warningOf(p, err))
			}
			continue
		}
		out = append(out, p)
	}
	return out
}

// isTopAgent reports whether a top-level file name is a CLI 2.0.x subagent
// transcript (agent-<id>.jsonl next to the sessions, not a session).
func isTopAgent(name string) bool {
	return strings.HasPrefix(name, "agent-") && strings.HasSuffix(name, ".jsonl")
}

// topAgents maps parent session ids to the CLI 2.0.x subagent transcripts
// at the top of a project directory (their lines carry the parent's
// sessionId). Files that cannot be read are left to the caller's listing.
func topAgents(projDir string) map[string][]string {
	m, _ := filepath.Glob(filepath.Join(projDir, "agent-*.jsonl"))
	if len(m) == 0 {
		return nil
	}
	out := make(map[string][]string)
	for _, p := range m {
		if sid := FileSessionID(p); sid != "" {
			out[sid] = append(out[sid], p)
		}
	}
	return out
}

// SessionDir returns the directory that holds a transcript's subagents and
// tool results: the transcript path without ".jsonl".
func SessionDir(sessionFile string) string { return strings.TrimSuffix(sessionFile, ".jsonl") }

// ListSessions returns every session transcript under configDir, sorted by
// project then id. Only *.jsonl files at the top of a project directory are
// sessions (reference 4.1). Entries that cannot be read (named pipes,
// directories named *.jsonl, symlink loops, unreadable project directories)
// are left out; Listing reports them.
func ListSessions(ctx context.Context, configDir string) ([]SessionFile, error) {
	l, err := List(ctx, configDir)
	return l.Files, err
}

// Listing is the result of List.
type Listing struct {
	// Files are the readable session transcripts.
	Files []SessionFile
	// Bad are entries named like transcripts that cannot be read, with why.
	Bad []BadFile
	// Warnings are every problem met, bad sessions included.
	Warnings []Warning
	// Orphans are sessions whose main transcript is gone but whose
	// subagent transcripts remain (<sid>/subagents/, or CLI 2.0.x top-level
	// agent files naming it); Path is where the transcript was.
	Orphans []SessionFile
}

// BadFile is a session entry that cannot be read.
type BadFile struct {
	SessionFile
	Err error
}

// List walks the projects tree like ListSessions and also reports what it
// could not read. Symlinked project directories and transcripts are
// followed; a project directory reached twice (through a link) is read once.
func List(ctx context.Context, configDir string) (Listing, error) {
	var l Listing
	root := ProjectsDir(configDir)
	dirs, err := os.ReadDir(root)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return l, nil
		}
		return l, fmt.Errorf("list projects: %w", err)
	}
	rootReal, err := filepath.EvalSymlinks(root)
	if err != nil {
		rootReal = root
	}
	seen := make(map[string]bool, len(dirs))
	for _, d := range dirs {
		if err := ctx.Err(); err != nil {
			return l, err
		}
		dir := filepath.Join(root, d.Name())
		real := filepath.Join(rootReal, d.Name())
		if d.Type()&fs.ModeSymlink != 0 {
			fi, err := os.Stat(dir)
			if err != nil || !fi.IsDir() {
				continue // a link to a file or a loop: not a project
			}
			if real, err = filepath.EvalSymlinks(dir); err != nil {
				continue
			}
		} else if !d.IsDir() {
			continue
		}
		if seen[real] {
			continue
		}
		seen[real] = true
		l.listProject(dir, d.Name())
	}
	return l, nil
}

// listProject adds the transcripts of one project directory.
func (l *Listing) listProject(dir, name string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		l.Warnings = append(l.Warnings, warningOf(dir, fmt.Errorf("list project: %w", err)))
		return
	}
	have := make(map[string]bool, len(entries))
	for _, e := range entries {
		have[e.Name()] = true
	}
	orphans := make(map[string]bool)
	orphan := func(sid string) {
		if !have[sid+".jsonl"] && !orphans[sid] && validSessionID(sid) {
			orphans[sid] = true
			l.Orphans = append(l.Orphans, SessionFile{ID: sid, Path: filepath.Join(dir, sid+".jsonl"), ProjectDir: name})
		}
	}
	topDone := false
	for _, e := range entries {
		if e.IsDir() && !have[e.Name()+".jsonl"] {
			if _, err := os.Stat(filepath.Join(dir, e.Name(), "subagents")); err == nil {
				orphan(e.Name())
			}
		}
		if isTopAgent(e.Name()) && !topDone {
			topDone = true
			for sid := range topAgents(dir) {
				orphan(sid)
			}
		}
		if !strings.HasSuffix(e.Name(), ".jsonl") {
			continue
		}
		sf := SessionFile{ID: strings.TrimSuffix(e.Name(), ".jsonl"), Path: filepath.Join(dir, e.Name()), ProjectDir: name}
		sf.noDir = !have[sf.ID]
		var err error
		switch t := e.Type(); {
		case t.IsRegular():
		case t&fs.ModeSymlink != 0:
			_, err = checkRegular(sf.Path)
		default:
			err = &UnreadableError{Path: sf.Path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, kindOf(t))}
		}
		if err != nil {
			if !isTopAgent(e.Name()) {
				l.Bad = append(l.Bad, BadFile{SessionFile: sf, Err: err})
			}
			l.Warnings = append(l.Warnings, warningOf(sf.Path, err))
			continue
		}
		if !isTopAgent(e.Name()) {
			l.Files = append(l.Files, sf)
		}
	}
}

// Resolve finds one session by full id, unique id prefix, or transcript
// path: a query containing a path separator or ending in .jsonl is a path
// (the command line's `pneuma history show ./x.jsonl`). A server must use
// ResolveID, which never reads a path.
func Resolve(ctx context.Context, configDir, query string) (SessionFile, error) {
	if strings.HasSuffix(query, ".jsonl") || strings.ContainsRune(query, os.PathSeparator) {
		if _, err := os.Lstat(query); err != nil {
			return SessionFile{}, fmt.Errorf("open session %s: %w", query, err)
		}
		if _, err := checkRegular(query); err != nil {
			return SessionFile{}, err
		}
		abs, _ := filepath.Abs(query)
		return SessionFile{
			ID:         strings.TrimSuffix(filepath.Base(abs), ".jsonl"),
			Path:       abs,
			ProjectDir: filepath.Base(filepath.Dir(abs)),
		}, nil
	}
	return resolveID(ctx, configDir, query)
}

// maxIDLen bounds a session id: a UUID (what the CLI names its sessions)
// is 36 characters.
const maxIDLen = 64

// IsSessionID reports whether id can name a session: 1 to 64 ASCII
// letters, digits, '-' and '_' (a UUID or a prefix of one, among others).
// Nothing that passes can be a path: no separator, no dot.
func IsSessionID(id string) bool {
	if id == "" || len(id) > maxIDLen {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// InvalidIDError is a query that is not a session id (IsSessionID).
type InvalidIDError struct{ ID string }

func (e *InvalidIDError) Error() string { return fmt.Sprintf("%q is not a session id", e.ID) }

// ResolveID finds one session of the projects tree by full id or unique id
// prefix, and never treats id as a path: an id that is not one is an
// *InvalidIDError before any file is touched. It is what a server resolves
// a client's id with; ErrNotFound and the error of an unreadable
// transcript are the caller's to hide or show.
func ResolveID(ctx context.Context, configDir, id string) (SessionFile, error) {
	if !IsSessionID(id) {
		return SessionFile{}, &InvalidIDError{ID: id}
	}
	return resolveID(ctx, configDir, id)
}

// resolveID looks query up among the sessions List finds.
func resolveID(ctx context.Context, configDir, query string) (SessionFile, error) {
	l, err := List(ctx, configDir)
	if err != nil {
		return SessionFile{}, err
	}
	var matches []SessionFile
	var bad []BadFile
	for _, s := range l.Files {
		if s.ID == query {
			return s, nil
		}
		if strings.HasPrefix(s.ID, query) {
			matches = append(matches, s)
		}
	}
	for _, b := range l.Bad {
		if strings.HasPrefix(b.ID, query) {
			bad = append(bad, b)
			matches = append(matches, b.SessionFile)
		}
	}
	switch {
	case len(matches) == 0:
		return SessionFile{}, fmt.Errorf("session %q: %w", query, ErrNotFound)
	case len(matches) == 1 && len(bad) == 1:
		return SessionFile{}, bad[0].Err
	case len(matches) == 1:
		return matches[0], nil
	}
	ids := make([]string, 0, len(matches))
	for _, m := range matches {
		ids = append(ids, m.ID)
	}
	return SessionFile{}, &AmbiguousError{Prefix: query, Matches: ids}
}

// FileCwd returns the first "cwd" recorded in a transcript, or "" when none is
// found in its first lines.
func FileCwd(path string) string {
	return peekField(path, func(li *lineInfo) string { return strValue(li.cwd) })
}

// FileSessionID returns the first "sessionId" recorded in a transcript, or
// "" when none is found in its first lines.
func FileSessionID(path string) string {
	return peekField(path, func(li *lineInfo) string { return strValue(li.sessionID) })
}

// peekField returns the first non-empty field of the first lines of a
// transcript.
func peekField(path string, field func(*lineInfo) string) string {
	f, err := openFile(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	lr := NewLineReader(f, 0)
	for i := 0; i < 200; i++ {
		line, err := lr.Next()
		if err != nil {
			return ""
		}
		var li lineInfo
		if scanLine(line, &li, false) == nil && field(&li) != "" {
			return field(&li)
		}
	}
	return ""
}
