package history

import (
	"bufio"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/pneuma-cli/pneuma/internal/redact"
)

// The index keeps what one scan of a transcript found (its calls, first
// prompt, timestamps, counts) under the user's cache directory, keyed by
// path and checked by size and modification time, so that listing and
// accounting a large history reads only the files that changed. It is an
// optimisation only: a missing, stale or unreadable index means a rescan.

// indexVersion changes whenever what a scan extracts changes.
const indexVersion = 3

type indexFile struct {
	Version int
	Files   map[string]*indexEntry
}

// indexEntry is one transcript's scan, valid while Size and MTime hold.
type indexEntry struct {
	Size, MTime int64
	Summary     bool // scanned with summary fields
	PeekStart   time.Time
	ForkLike    bool
	Cwd         string
	Start, Last time.Time
	Calls       []indexCall
	Stats       ReadStats
	FirstPrompt string
	Prompts     int
	Compacted   int
	Interrupted int
	APIErrors   int
	InlineAgent int
}

type indexCall struct {
	K0, K1          uint64
	TS              int64 // unix nanoseconds, 0 when unknown
	Model           string
	Side            bool
	In, Out, CW, CR int64
	E5, E1          int64
}

// index is the index of one projects tree, loaded for one scan.
type index struct {
	path string
	mu   sync.Mutex
	old  map[string]*indexEntry
	cur  map[string]*indexEntry
	// dirty is set by store: the index on disk is out of date.
	dirty bool
}

// openIndex loads the index of projectsDir from cacheDir; "" disables it.
func openIndex(cacheDir, projectsDir string) *index {
	if cacheDir == "" {
		return nil
	}
	abs, err := filepath.Abs(projectsDir)
	if err != nil {
		return nil
	}
	sum := sha256.Sum256([]byte(abs))
	ix := &index{
		path: filepath.Join(cacheDir, "history", hex.EncodeToString(sum[:12])+".index"),
		old:  map[string]*indexEntry{},
		cur:  map[string]*indexEntry{},
	}
	f, err := os.Open(ix.path)
	if err != nil {
		return ix
	}
	defer f.Close()
	var file indexFile
	if gob.NewDecoder(bufio.NewReaderSize(f, 1<<20)).Decode(&file) == nil && file.Version == indexVersion && file.Files != nil {
		ix.old = file.Files
	}
	return ix
}

// lookup returns the entry of path when the file is unchanged.
func (ix *index) lookup(path string, fi fs.FileInfo, summary bool) *indexEntry {
	if ix == nil || fi == nil {
		return nil
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	e := ix.old[path]
	if e == nil || e.Size != fi.Size() || e.MTime != fi.ModTime().UnixNano() || (summary && !e.Summary) {
		return nil
	}
	ix.cur[path] = e
	return e
}

// store records a fresh scan of path.
func (ix *index) store(path string, fi fs.FileInfo, peek time.Time, forkLike, summary bool, s *fileScan) {
	if ix == nil || fi == nil {
		return
	}
	e := &indexEntry{
		Size: fi.Size(), MTime: fi.ModTime().UnixNano(), Summary: summary, PeekStart: peek, ForkLike: forkLike,
		Cwd: s.cwd, Start: s.start, Last: s.last, Stats: s.stats, Prompts: s.prompts,
		// Only what list shows of the first prompt, redacted, is kept.
		FirstPrompt: redact.Secrets(stripControls(fold(s.firstPrompt, 1000))),
		Compacted:   s.compacted, Interrupted: s.interrupted, APIErrors: s.apiErrors, InlineAgent: s.inlineAgents,
		Calls: make([]indexCall, len(s.calls)),
	}
	for i, c := range s.calls {
		ic := indexCall{K0: c.key[0], K1: c.key[1], Model: c.model, Side: c.sidechain,
			In: c.usage.InputTokens, Out: c.usage.OutputTokens, CW: c.usage.CacheCreationInputTokens, CR: c.usage.CacheReadInputTokens,
			E5: c.usage.CacheCreation.Ephemeral5m, E1: c.usage.CacheCreation.Ephemeral1h}
		if !c.ts.IsZero() {
			ic.TS = c.ts.UnixNano()
		}
		e.Calls[i] = ic
	}
	ix.mu.Lock()
	ix.cur[path] = e
	ix.dirty = true
	ix.mu.Unlock()
}

// load fills s from an entry.
func (e *indexEntry) load(s *fileScan) {
	s.cwd, s.start, s.last, s.stats = e.Cwd, e.Start, e.Last, e.Stats
	s.firstPrompt, s.prompts, s.compacted, s.interrupted = e.FirstPrompt, e.Prompts, e.Compacted, e.Interrupted
	s.apiErrors, s.inlineAgents = e.APIErrors, e.InlineAgent
	s.fromIndex = true
	s.calls = make([]call, len(e.Calls))
	for i, ic := range e.Calls {
		c := call{key: [2]uint64{ic.K0, ic.K1}, model: ic.Model, sidechain: ic.Side || s.agent,
			usage: Usage{InputTokens: ic.In, OutputTokens: ic.Out, CacheCreationInputTokens: ic.CW, CacheReadInputTokens: ic.CR}}
		c.usage.CacheCreation.Ephemeral5m, c.usage.CacheCreation.Ephemeral1h = ic.E5, ic.E1
		if ic.TS != 0 {
			c.ts = time.Unix(0, ic.TS).UTC()
		}
		s.calls[i] = c
	}
}

// save writes the index: the entries of this scan, and (keepOld) those of
// files it did not look at. Failures are ignored: the index only saves time.
func (ix *index) save(keepOld bool) {
	if ix == nil || (!ix.dirty && (keepOld || len(ix.cur) == len(ix.old))) {
		return // nothing new, nothing gone
	}
	files := ix.cur
	if keepOld {
		files = make(map[string]*indexEntry, len(ix.old)+len(ix.cur))
		for k, v := range ix.old {
			files[k] = v
		}
		for k, v := range ix.cur {
			files[k] = v
		}
	}
	if err := os.MkdirAll(filepath.Dir(ix.path), 0o700); err != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(ix.path), ".index-*")
	if err != nil {
		return
	}
	w := bufio.NewWriterSize(tmp, 1<<20)
	err = gob.NewEncoder(w).Encode(indexFile{Version: indexVersion, Files: files})
	if err == nil {
		err = w.Flush()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), ix.path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
}
