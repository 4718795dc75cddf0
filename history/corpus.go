package history

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/pneuma-cli/pneuma/internal/redact"
)

// Filter selects sessions and calls.
type Filter struct {
	// Project, when set, keeps only sessions whose cwd is this directory.
	Project string
	// IncludeWorktrees also keeps sessions run in a git worktree of Project.
	IncludeWorktrees bool
	// WorktreeRoots are directories whose every subdirectory counts as a
	// worktree of Project even once removed (pneuma's own worktrees: the
	// caller knows where its runner puts them).
	WorktreeRoots []string
	// Since and Until bound call timestamps (usage) and session activity (list).
	Since, Until time.Time
}

// Flags on a session whose transcript cannot account for every billed call.
const (
	// FlagCompacted: a /compact summary call is billed but not in the transcript.
	FlagCompacted = "compacted"
	// FlagInterrupted: the transcript keeps an interrupted response's partial
	// tokens, which the CLI does not bill.
	FlagInterrupted = "interrupted"
	// FlagUnpriced: some calls are of models missing from the price table.
	FlagUnpriced = "unpriced"
	// FlagMalformed: some lines could not be read.
	FlagMalformed = "malformed_lines"
	// FlagOrphan: the main transcript is gone; only its subagents remain.
	FlagOrphan = "orphan"
)

// SessionSummary is one row of `history list`.
type SessionSummary struct {
	ID           string    `json:"session_id"`
	Project      string    `json:"project"`
	ProjectDir   string    `json:"project_dir"`
	Path         string    `json:"path"`
	Started      time.Time `json:"started,omitzero"`
	LastActivity time.Time `json:"last_activity,omitzero"`
	FirstPrompt  string    `json:"first_prompt"`
	Prompts      int       `json:"prompts"`
	Subagents    int       `json:"subagents"`
	Totals
	Flags []string  `json:"flags,omitempty"`
	Stats ReadStats `json:"read_stats"`

	// Per-session aggregates for UsageBy: by model, and by 15-minute bucket
	// (every time zone's offset is a multiple of 15 minutes, so buckets fold
	// into local days exactly).
	byModel  map[string]*Totals
	byBucket map[int64]*Totals
}

// bucketSpan is the time granularity of the per-session aggregates.
const bucketSpan = 15 * 60 // seconds

func (s *SessionSummary) add(c *call, prices *PriceTable) {
	s.Totals.addCall(c, prices)
	if s.byModel == nil {
		s.byModel = make(map[string]*Totals)
		s.byBucket = make(map[int64]*Totals)
	}
	m := s.byModel[c.model]
	if m == nil {
		m = &Totals{}
		s.byModel[c.model] = m
	}
	m.addCall(c, prices)
	b := int64(math.MinInt64)
	if !c.ts.IsZero() {
		b = c.ts.Unix()
		if b < 0 {
			b -= bucketSpan - 1
		}
		b /= bucketSpan
	}
	t := s.byBucket[b]
	if t == nil {
		t = &Totals{}
		s.byBucket[b] = t
	}
	t.addCall(c, prices)
}

// Corpus is a scanned projects tree: every selected session with its
// deduplicated usage, aggregated as the files stream by (calls are not kept,
// so memory grows with sessions, not with the size of the history).
type Corpus struct {
	sessions []*SessionSummary
	// Stats sums what every reader skipped.
	Stats ReadStats
	// Warnings lists the files that could not be read (named pipes,
	// directories named like transcripts, symlink loops, permission denied);
	// every other file was read.
	Warnings []Warning
	// FilesRead counts the transcripts read (subagents included).
	FilesRead int
}

// ScanOptions configures Scan.
type ScanOptions struct {
	Filter Filter
	// Prices prices the calls; nil uses the embedded table.
	Prices *PriceTable
	// Summary also collects prompts and first prompts (for list); usage
	// reports do not need them and skip those lines.
	Summary bool
	// CacheDir, when set, holds an index of per-file scans (checked by size
	// and modification time) so that unchanged files are not read again.
	CacheDir string
}

// Scan reads every session under configDir (in parallel, streaming) and
// deduplicates API calls by (message.id, requestId) across all files: a call
// copied into a fork stays with the session it was first written to.
func Scan(ctx context.Context, configDir string, opts ScanOptions) (*Corpus, error) {
	if opts.Prices == nil {
		opts.Prices = DefaultPrices()
	}
	listing, err := List(ctx, configDir)
	if err != nil {
		return nil, err
	}
	c := &Corpus{Warnings: listing.Warnings}
	p := c.plan(listing, opts.Filter)
	seen := make(map[[2]uint64]struct{})
	ix := openIndex(opts.CacheDir, ProjectsDir(configDir))
	err = scanOrdered(ctx, p.targets, opts.Summary, ix, func(fs *fileScan) {
		if s := p.byPath[fs.path]; s != nil {
			c.merge(s, fs, p.orphans[s.Path], seen, opts)
		}
	})
	if err != nil {
		ix.discard()
		return nil, err
	}
	ix.save(opts.Filter.Project != "")
	c.selectSessions(p.sessions, opts.Filter)
	return c, nil
}

// scanPlan is every session of a scan and the files that make it up.
type scanPlan struct {
	sessions []*SessionSummary
	targets  []*fileScan
	byPath   map[string]*SessionSummary // any of its files → the session
	orphans  map[string]bool            // paths of main transcripts that are gone
}

// plan lists the sessions a filter selects with their subagent files (every
// generation's), orphans included, warning about what cannot be read.
func (c *Corpus) plan(listing Listing, f Filter) scanPlan {
	warn := func(w Warning) { c.Warnings = append(c.Warnings, w) }
	files := selectProjects(listing.Files, f)
	p := scanPlan{byPath: make(map[string]*SessionSummary, len(files)), orphans: make(map[string]bool)}
	for _, o := range selectProjects(listing.Orphans, f) {
		files = append(files, o)
		p.orphans[o.Path] = true
	}
	tops := make(map[string]map[string][]string) // project dir → parent sid → CLI 2.0.x agent files
	for _, f := range files {
		s := &SessionSummary{ID: f.ID, ProjectDir: f.ProjectDir, Path: f.Path}
		p.sessions = append(p.sessions, s)
		if !p.orphans[f.Path] {
			p.byPath[f.Path] = s
			p.targets = append(p.targets, &fileScan{path: f.Path, sessionID: f.ID, projDir: f.ProjectDir})
		}
		proj := filepath.Dir(f.Path)
		top, ok := tops[proj]
		if !ok {
			top = topAgents(proj)
			tops[proj] = top
		}
		subs := f.subagentFiles(top, warn)
		s.Subagents = len(subs)
		for _, sp := range subs {
			p.byPath[sp] = s
			p.targets = append(p.targets, &fileScan{path: sp, sessionID: f.ID, agent: true, projDir: f.ProjectDir})
		}
		if p.orphans[f.Path] {
			s.addFlag(FlagOrphan)
			warn(Warning{Path: f.Path, Problem: fmt.Sprintf("main transcript missing; %s counted under session %s", plural(len(subs), "subagent transcript"), f.ID)})
		}
	}
	return p
}

// merge adds one scanned file to its session s. A call already seen in
// another file (a fork's copy) stays with the file merged first.
func (c *Corpus) merge(s *SessionSummary, fs *fileScan, orphan bool, seen map[[2]uint64]struct{}, opts ScanOptions) {
	if fs.err != nil {
		c.Warnings = append(c.Warnings, warningOf(fs.path, fs.err))
	} else {
		c.FilesRead++
	}
	c.Stats.Add(fs.stats)
	s.Stats.Add(fs.stats)
	if fs.last.After(s.LastActivity) {
		s.LastActivity = fs.last
	}
	if !fs.agent {
		s.Project, s.Started = fs.cwd, fs.start
		s.FirstPrompt, s.Prompts = fs.firstPrompt, fs.prompts
		if !fs.fromIndex { // the index keeps it cleaned already
			s.FirstPrompt = redact.Secrets(stripControls(fold(fs.firstPrompt, 1000)))
		}
	} else {
		if s.Project == "" {
			s.Project = fs.cwd
		}
		if s.Started.IsZero() || (!fs.start.IsZero() && fs.start.Before(s.Started) && orphan) {
			s.Started = fs.start
		}
	}
	s.Subagents += fs.inlineAgents
	if fs.compacted > 0 {
		s.addFlag(FlagCompacted)
	}
	if fs.interrupted > 0 {
		s.addFlag(FlagInterrupted)
	}
	if fs.stats.Malformed+fs.stats.Oversized > 0 {
		s.addFlag(FlagMalformed)
	}
	for i := range fs.calls {
		cl := &fs.calls[i]
		if _, dup := seen[cl.key]; dup {
			continue
		}
		seen[cl.key] = struct{}{}
		if inRange(cl.ts, opts.Filter) {
			s.add(cl, opts.Prices)
		}
	}
}

// selectSessions keeps the sessions the filter selects, oldest first.
func (c *Corpus) selectSessions(sessions []*SessionSummary, f Filter) {
	for _, s := range sessions {
		if s.Project == "" {
			s.Project = s.ProjectDir
		}
		if s.UnpricedCalls > 0 {
			s.addFlag(FlagUnpriced)
		}
		if !matchProject(s.Project, f) {
			continue
		}
		if !f.Since.IsZero() && s.LastActivity.Before(f.Since) {
			continue
		}
		if !f.Until.IsZero() && s.Started.After(f.Until) {
			continue
		}
		c.sessions = append(c.sessions, s)
	}
	sort.SliceStable(c.sessions, func(i, j int) bool {
		return c.sessions[i].Started.Before(c.sessions[j].Started)
	})
}

func (s *SessionSummary) addFlag(f string) {
	for _, x := range s.Flags {
		if x == f {
			return
		}
	}
	s.Flags = append(s.Flags, f)
}

// Sessions returns the selected sessions, oldest first.
func (c *Corpus) Sessions() []*SessionSummary { return c.sessions }

// Grouping keys for UsageBy.
const (
	ByDay     = "day"
	BySession = "session"
	ByModel   = "model"
	ByProject = "project"
)

// UsageRow is one group of a usage report. Exactly one of the key fields is
// set, named after the grouping.
type UsageRow struct {
	Date      string `json:"date,omitempty"`
	SessionID string `json:"session_id,omitempty"`
	Model     string `json:"model,omitempty"`
	Project   string `json:"project,omitempty"`
	Totals
	// Flags (by session) say why the figure may differ from what was billed.
	Flags []string `json:"flags,omitempty"`
}

// Key returns the row's group key.
func (r UsageRow) Key() string { return r.Date + r.SessionID + r.Model + r.Project }

// UsageBy groups the deduplicated usage of the selected sessions by day (in
// loc, local time when nil), session, model or project, sorted by key (by
// day: chronologically).
func (c *Corpus) UsageBy(by string, loc *time.Location) []UsageRow {
	if loc == nil {
		loc = time.Local
	}
	rows := make(map[string]*UsageRow)
	add := func(r UsageRow, t *Totals, flags []string) {
		k := r.Key()
		row, ok := rows[k]
		if !ok {
			row = &r
			rows[k] = row
		}
		row.Totals.merge(t)
		if flags != nil {
			row.Flags = flags
		}
	}
	for _, s := range c.sessions {
		if s.APICalls == 0 {
			continue
		}
		switch by {
		case BySession:
			add(UsageRow{SessionID: s.ID}, &s.Totals, s.Flags)
		case ByProject:
			add(UsageRow{Project: s.Project}, &s.Totals, nil)
		case ByModel:
			for m, t := range s.byModel {
				add(UsageRow{Model: m}, t, nil)
			}
		default:
			// In time order: float costs summed in map order would differ
			// in their last digits from run to run.
			buckets := make([]int64, 0, len(s.byBucket))
			for b := range s.byBucket {
				buckets = append(buckets, b)
			}
			slices.Sort(buckets)
			for _, b := range buckets {
				day := "unknown"
				if b != math.MinInt64 {
					day = time.Unix(b*bucketSpan, 0).In(loc).Format(time.DateOnly)
				}
				add(UsageRow{Date: day}, s.byBucket[b], nil)
			}
		}
	}
	out := make([]UsageRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out
}

// Total returns the sum over the selected sessions.
func (c *Corpus) Total() Totals {
	var t Totals
	for _, s := range c.sessions {
		t.merge(&s.Totals)
	}
	return t
}

func inRange(ts time.Time, f Filter) bool {
	if ts.IsZero() {
		return f.Since.IsZero() && f.Until.IsZero()
	}
	if !f.Since.IsZero() && ts.Before(f.Since) {
		return false
	}
	if !f.Until.IsZero() && !ts.Before(f.Until) {
		return false
	}
	return true
}

// selectProjects keeps the project directories that can hold sessions of
// f.Project, judged by the cwd of their first session; matchProject checks
// every session afterwards.
func selectProjects(files []SessionFile, f Filter) []SessionFile {
	if f.Project == "" {
		return files
	}
	want := ProjectDirName(f.Project)
	cwdOf := make(map[string]string)
	var out []SessionFile
	for _, s := range files {
		if s.ProjectDir == want {
			out = append(out, s)
			continue
		}
		if !f.IncludeWorktrees {
			continue
		}
		cwd, ok := cwdOf[s.ProjectDir]
		if !ok {
			cwd = FileCwd(s.Path)
			cwdOf[s.ProjectDir] = cwd
		}
		if matchProject(cwd, f) {
			out = append(out, s)
		}
	}
	return out
}

// matchProject reports whether a session run in cwd belongs to f.Project.
func matchProject(cwd string, f Filter) bool {
	if f.Project == "" {
		return true
	}
	if cwd == f.Project {
		return true
	}
	return f.IncludeWorktrees && IsWorktreeOf(cwd, f.Project, f.WorktreeRoots...)
}

// IsWorktreeOf reports whether dir is a linked git worktree of the repository
// at repo: its .git file points into repo's .git/worktrees, or it lies under
// one of roots (directories of worktrees the caller made, which may be gone
// already).
func IsWorktreeOf(dir, repo string, roots ...string) bool {
	if dir == "" || dir == repo {
		return false
	}
	for _, r := range roots {
		if r != "" && strings.HasPrefix(dir, filepath.Clean(r)+string(filepath.Separator)) {
			return true
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, ".git"))
	if err != nil {
		return false
	}
	gitdir, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir:")
	if !ok {
		return false
	}
	gitdir = strings.TrimSpace(gitdir)
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(dir, gitdir)
	}
	common := filepath.Join(repo, ".git", "worktrees") + string(filepath.Separator)
	if strings.HasPrefix(filepath.Clean(gitdir)+string(filepath.Separator), common) {
		return true
	}
	if real, err := filepath.EvalSymlinks(repo); err == nil && real != repo {
		return strings.HasPrefix(filepath.Clean(gitdir)+string(filepath.Separator), filepath.Join(real, ".git", "worktrees")+string(filepath.Separator))
	}
	return false
}
