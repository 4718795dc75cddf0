package history

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
)

// Usage is the token usage of one API response as the transcript records it.
type Usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreation            struct {
		Ephemeral5m int64 `json:"ephemeral_5m_input_tokens"`
		Ephemeral1h int64 `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
}

// cacheWrites splits cache writes into 5-minute and 1-hour writes. Without a
// split (older CLIs, fake APIs) every write is a 5-minute write, which is how
// the CLI prices it (reference 2.5).
func (u Usage) cacheWrites() (w5, w1 int64) {
	w5, w1 = u.CacheCreation.Ephemeral5m, u.CacheCreation.Ephemeral1h
	if w5+w1 == 0 {
		return u.CacheCreationInputTokens, 0
	}
	if rest := u.CacheCreationInputTokens - w5 - w1; rest > 0 {
		w5 += rest
	}
	return w5, w1
}

// Totals is deduplicated usage and its estimated cost.
type Totals struct {
	InputTokens              int64   `json:"input_tokens"`
	OutputTokens             int64   `json:"output_tokens"`
	CacheReadInputTokens     int64   `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64   `json:"cache_creation_input_tokens"`
	CostUSD                  float64 `json:"cost_usd"`
	APICalls                 int     `json:"api_calls"`
	// UnpricedCalls counts calls of models the price table does not know;
	// their tokens are included, their cost is not.
	UnpricedCalls  int      `json:"unpriced_calls,omitempty"`
	UnpricedModels []string `json:"unpriced_models,omitempty"`
}

// Tokens returns the sum of all token kinds.
func (t Totals) Tokens() int64 {
	return t.InputTokens + t.OutputTokens + t.CacheReadInputTokens + t.CacheCreationInputTokens
}

func (t *Totals) addCall(c *call, prices *PriceTable) {
	t.InputTokens += c.usage.InputTokens
	t.OutputTokens += c.usage.OutputTokens
	t.CacheReadInputTokens += c.usage.CacheReadInputTokens
	t.CacheCreationInputTokens += c.usage.CacheCreationInputTokens
	t.APICalls++
	if usd, ok := prices.Cost(c.model, c.usage); ok {
		t.CostUSD += usd
		return
	}
	t.UnpricedCalls++
	for _, m := range t.UnpricedModels {
		if m == c.model {
			return
		}
	}
	t.UnpricedModels = append(t.UnpricedModels, c.model)
	sort.Strings(t.UnpricedModels)
}

// call is one deduplicated API response.
type call struct {
	key       [2]uint64
	ts        time.Time
	model     string
	sidechain bool
	usage     Usage
}

// fileScan is what one pass over one transcript file found.
type fileScan struct {
	path      string
	sessionID string // the owning session (the parent's for a subagent file)
	agent     bool
	projDir   string
	cwd       string
	start     time.Time // first timestamp
	last      time.Time // last timestamp
	forkLike  bool      // first line is a "mode" entry, as in a --fork-session copy
	calls     []call
	stats     ReadStats

	// Summary fields, filled when the scan asks for them.
	firstPrompt string
	prompts     int
	compacted   int
	interrupted int
	apiErrors   int
}

var (
	seed1 = maphash.MakeSeed()
	seed2 = maphash.MakeSeed()
)

func callKey(msgID, reqID string) [2]uint64 {
	var h maphash.Hash
	h.SetSeed(seed1)
	h.WriteString(msgID)
	h.WriteByte(0)
	h.WriteString(reqID)
	a := h.Sum64()
	h.SetSeed(seed2)
	h.WriteString(msgID)
	h.WriteByte(0)
	h.WriteString(reqID)
	return [2]uint64{a, h.Sum64()}
}

var (
	usageKey     = []byte(`"usage"`)
	userTypeKey  = []byte(`"user"`)
	compactKey   = []byte(`compact_boundary`)
	interruptKey = []byte(`[Request interrupted by user`)
)

// scanner holds per-worker buffers.
type scanner struct {
	lr      *LineReader
	li      lineInfo
	summary bool
}

func newScanner(summary bool) *scanner {
	return &scanner{lr: NewLineReader(nil, 0), summary: summary}
}

// scanFile reads one transcript and collects its API calls (deduplicated
// within the file) and, in summary mode, its prompts and timestamps.
func (s *scanner) scanFile(ctx context.Context, fs *fileScan) error {
	f, err := os.Open(fs.path)
	if err != nil {
		return fmt.Errorf("open transcript: %w", err)
	}
	defer f.Close()
	s.lr.Reset(f)
	seen := make(map[[2]uint64]struct{})
	models := make(map[string]string)
	first := true
	for n := 0; ; n++ {
		if n&1023 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		line, err := s.lr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", fs.path, err)
		}
		hasUsage := bytes.Contains(line, usageKey)
		if !s.summary && !hasUsage {
			// Compaction boundaries and interrupt markers are short lines;
			// they make the transcript differ from the bill (flags).
			if len(line) < 8<<10 {
				if bytes.Contains(line, compactKey) {
					fs.compacted++
				} else if bytes.Contains(line, interruptKey) {
					fs.interrupted++
				}
			}
			continue
		}
		if s.summary && !hasUsage && len(line) > 4096 && !bytes.Contains(line, userTypeKey) && !bytes.Contains(line, compactKey) {
			// Large lines without usage and not user entries carry nothing a
			// summary needs but a timestamp; skip the parse.
			continue
		}
		li := &s.li
		if err := scanLine(line, li, s.summary); err != nil {
			fs.stats.Malformed++
			continue
		}
		if first {
			first = false
			fs.forkLike = li.typ == "mode"
		}
		var ts time.Time
		if li.timestamp != "" {
			ts, _ = time.Parse(time.RFC3339Nano, li.timestamp)
		}
		if !ts.IsZero() {
			if fs.start.IsZero() || ts.Before(fs.start) {
				fs.start = ts
			}
			if ts.After(fs.last) {
				fs.last = ts
			}
		}
		if fs.cwd == "" && li.cwd != "" {
			fs.cwd = li.cwd
		}
		if s.summary {
			s.summarize(fs, li, line)
		}
		if li.typ != "assistant" || li.usage == nil {
			continue
		}
		if li.isAPIError || li.model == "<synthetic>" {
			fs.apiErrors++
			continue
		}
		key := callKey(li.msgID, li.requestID)
		if li.msgID == "" && li.requestID == "" {
			key = callKey(li.uuid, "uuid")
		}
		if _, dup := seen[key]; dup {
			continue
		}
		seen[key] = struct{}{}
		c := call{key: key, ts: ts, sidechain: li.isSidechain || fs.agent}
		if err := json.Unmarshal(li.usage, &c.usage); err != nil {
			fs.stats.Malformed++
			continue
		}
		m, ok := models[li.model]
		if !ok {
			m = li.model
			models[m] = m
		}
		c.model = m
		fs.calls = append(fs.calls, c)
	}
	fs.stats.Add(s.lr.Stats)
	return nil
}

func (s *scanner) summarize(fs *fileScan, li *lineInfo, line []byte) {
	switch li.typ {
	case "system":
		if bytes.Contains(line, compactKey) {
			fs.compacted++
		}
	case "user":
		if li.isSidechain || li.isMeta || li.isCompact {
			return
		}
		text, isPrompt := promptText(li.content)
		if strings.HasPrefix(text, "[Request interrupted by user") {
			fs.interrupted++
			return
		}
		if !isPrompt && bytes.Contains(li.content, interruptKey) {
			fs.interrupted++
		}
		if !isPrompt || strings.HasPrefix(text, "<local-command-") {
			return
		}
		fs.prompts++
		if fs.firstPrompt == "" {
			fs.firstPrompt = text
		}
	}
}

// promptText returns the text of a user message's content and whether it is
// a prompt (a string, or blocks without a tool_result).
func promptText(content []byte) (string, bool) {
	if len(content) == 0 {
		return "", false
	}
	switch content[0] {
	case '"':
		return strValue(content), true
	case '[':
	default:
		return "", false
	}
	text, isPrompt := "", true
	i := 1
	for {
		i = skipWS(content, i)
		if i >= len(content) || content[i] == ']' {
			break
		}
		if content[i] == ',' {
			i++
			continue
		}
		if content[i] != '{' {
			return "", false
		}
		var typ, t string
		end, err := scanObject(content, i, func(k []byte, vs, ve int) error {
			switch string(k) {
			case "type":
				typ = strValue(content[vs:ve])
			case "text":
				t = strValue(content[vs:ve])
			}
			return nil
		})
		if err != nil {
			return "", false
		}
		switch typ {
		case "tool_result":
			isPrompt = false
		case "text":
			if text == "" {
				text = t
			}
		}
		i = end
	}
	return text, isPrompt && text != ""
}

// sessionOf returns the session a transcript path belongs to and whether it
// is a subagent file (<sid>/subagents/agent-*.jsonl).
func sessionOf(path string) (sid string, agent bool) {
	dir := filepath.Dir(path)
	if filepath.Base(dir) == "subagents" {
		return filepath.Base(filepath.Dir(dir)), true
	}
	return strings.TrimSuffix(filepath.Base(path), ".jsonl"), false
}

// scanFiles scans files in parallel, GOMAXPROCS at a time.
func scanFiles(ctx context.Context, paths []string, projDirs []string, summary bool) ([]*fileScan, error) {
	out := make([]*fileScan, len(paths))
	for i, p := range paths {
		sid, agent := sessionOf(p)
		out[i] = &fileScan{path: p, sessionID: sid, agent: agent, projDir: projDirs[i]}
	}
	workers := runtime.GOMAXPROCS(0)
	next := make(chan *fileScan)
	g, ctx := errgroup.WithContext(ctx)
	for w := 0; w < workers; w++ {
		g.Go(func() error {
			s := newScanner(summary)
			for fs := range next {
				if err := s.scanFile(ctx, fs); err != nil {
					if errors.Is(err, os.ErrNotExist) {
						continue // removed by the CLI's cleanup while we read
					}
					return err
				}
			}
			return nil
		})
	}
	g.Go(func() error {
		defer close(next)
		for _, fs := range out {
			select {
			case next <- fs:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// ownerOrder sorts scans so that the file a call was first written to comes
// first: a fork copies its parent's lines with their timestamps, so at equal
// start times the fork (which begins with a "mode" line) goes last.
func ownerOrder(scans []*fileScan) {
	sort.SliceStable(scans, func(i, j int) bool {
		a, b := scans[i], scans[j]
		switch {
		case a.start.IsZero() != b.start.IsZero():
			return !a.start.IsZero()
		case !a.start.Equal(b.start):
			return a.start.Before(b.start)
		case a.forkLike != b.forkLike:
			return !a.forkLike
		case a.agent != b.agent:
			return !a.agent
		}
		return a.path < b.path
	})
}

// TranscriptUsage returns the deduplicated usage and estimated cost of one
// session, its subagents included. It is the fallback for a job that died
// without a result line ("cost_estimated"). A nil prices uses the embedded
// table.
func TranscriptUsage(ctx context.Context, sessionFile string, prices *PriceTable) (Totals, error) {
	if prices == nil {
		prices = DefaultPrices()
	}
	paths := append([]string{sessionFile}, SessionFile{Path: sessionFile}.Subagents()...)
	proj := make([]string, len(paths))
	scans, err := scanFiles(ctx, paths, proj, false)
	if err != nil {
		return Totals{}, err
	}
	if _, err := os.Stat(sessionFile); err != nil {
		return Totals{}, fmt.Errorf("transcript usage: %w", err)
	}
	var t Totals
	seen := make(map[[2]uint64]struct{})
	for _, fs := range scans {
		for i := range fs.calls {
			c := &fs.calls[i]
			if _, dup := seen[c.key]; dup {
				continue
			}
			seen[c.key] = struct{}{}
			t.addCall(c, prices)
		}
	}
	return t, nil
}
