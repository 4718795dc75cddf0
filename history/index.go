package history

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/pneuma-cli/pneuma/internal/redact"
)

// The index keeps what one scan of a transcript found (its calls, first
// prompt, timestamps, counts) under the user's cache directory, keyed by
// path and checked by size and modification time, so that listing and
// accounting a large history reads only the files that changed. It is an
// optimisation only: a missing, stale or unreadable index means a rescan.
//
// A scan that reads files writes the new index as it goes (each file's entry
// once it is merged, see index_codec.go), so that building the index of a
// large history does not hold it in memory; the entries of unchanged files
// are copied from the old index at the end, and the new file replaces the
// old one only when complete.

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
	hits map[string]*indexEntry // entries of old found unchanged
	// fresh holds the paths whose new entries are written to out, opened by
	// the first store: the index on disk is out of date.
	fresh map[string]bool
	out   *indexWriter
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
		path:  filepath.Join(cacheDir, "history", hex.EncodeToString(sum[:12])+".index"),
		old:   map[string]*indexEntry{},
		hits:  map[string]*indexEntry{},
		fresh: map[string]bool{},
	}
	f, err := os.Open(ix.path)
	if err != nil {
		return ix
	}
	defer f.Close()
	if files, err := readIndex(bufio.NewReaderSize(f, 256<<10)); err == nil {
		ix.old = files
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
	ix.hits[path] = e
	return e
}

// store writes the entry of a fresh scan of path to the new index.
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
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.out == nil {
		ix.out = createIndex(ix.path)
	}
	ix.fresh[path] = true
	ix.out.entry(path, e, len(s.calls), func(i int) indexCall { return indexCallOf(&s.calls[i]) })
}

func indexCallOf(c *call) indexCall {
	ic := indexCall{K0: c.key[0], K1: c.key[1], Model: c.model, Side: c.sidechain,
		In: c.usage.InputTokens, Out: c.usage.OutputTokens, CW: c.usage.CacheCreationInputTokens, CR: c.usage.CacheReadInputTokens,
		E5: c.usage.CacheCreation.Ephemeral5m, E1: c.usage.CacheCreation.Ephemeral1h}
	if !c.ts.IsZero() {
		ic.TS = c.ts.UnixNano()
	}
	return ic
}

// load fills s from an entry.
func (e *indexEntry) load(s *fileScan) {
	s.cwd, s.start, s.last, s.stats = e.Cwd, e.Start, e.Last, e.Stats
	s.firstPrompt, s.prompts, s.compacted, s.interrupted = e.FirstPrompt, e.Prompts, e.Compacted, e.Interrupted
	s.apiErrors, s.inlineAgents = e.APIErrors, e.InlineAgent
	s.fromIndex = true
	s.calls = slices.Grow(getCalls(), len(e.Calls))[:len(e.Calls)]
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

// save completes the new index: the entries written during the scan, those
// of the unchanged files it looked at, and (keepOld) those of files it did
// not look at. Failures are ignored: the index only saves time.
func (ix *index) save(keepOld bool) {
	if ix == nil {
		return
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.out == nil {
		if keepOld || len(ix.hits) == len(ix.old) {
			return // nothing new, nothing gone
		}
		ix.out = createIndex(ix.path)
	}
	for _, p := range sortedKeys(ix.hits) {
		if !ix.fresh[p] {
			ix.out.entry(p, ix.hits[p], len(ix.hits[p].Calls), func(i int) indexCall { return ix.hits[p].Calls[i] })
		}
	}
	if keepOld {
		for _, p := range sortedKeys(ix.old) {
			if e := ix.old[p]; ix.hits[p] == nil && !ix.fresh[p] {
				ix.out.entry(p, e, len(e.Calls), func(i int) indexCall { return e.Calls[i] })
			}
		}
	}
	ix.out.commit(ix.path)
	ix.out = nil
	removeStaleTemps(filepath.Dir(ix.path))
}

// discard drops the new index of a scan that did not complete.
func (ix *index) discard() {
	if ix == nil {
		return
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.out.abort()
	ix.out = nil
}

func sortedKeys(m map[string]*indexEntry) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// removeStaleTemps removes what scans killed before they could remove
// their new index left (an hour old: no scan still writes it).
func removeStaleTemps(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, de := range entries {
		if !strings.HasPrefix(de.Name(), indexTempPrefix) {
			continue
		}
		if fi, err := de.Info(); err == nil && fi.Mode().IsRegular() && time.Since(fi.ModTime()) > time.Hour {
			os.Remove(filepath.Join(dir, de.Name()))
		}
	}
}
