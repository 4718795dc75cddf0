package history

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/pneuma-cli/pneuma/usage"
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

// UnmarshalJSON reads the counts as numbers of any spelling ("3.0", "3e2"
// from tools that rewrite transcripts) instead of rejecting the line;
// fractions are rounded.
func (u *Usage) UnmarshalJSON(b []byte) error {
	var raw struct {
		InputTokens              json.Number `json:"input_tokens"`
		OutputTokens             json.Number `json:"output_tokens"`
		CacheCreationInputTokens json.Number `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     json.Number `json:"cache_read_input_tokens"`
		CacheCreation            *struct {
			Ephemeral5m json.Number `json:"ephemeral_5m_input_tokens"`
			Ephemeral1h json.Number `json:"ephemeral_1h_input_tokens"`
		} `json:"cache_creation"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*u = Usage{
		InputTokens: count(raw.InputTokens), OutputTokens: count(raw.OutputTokens),
		CacheCreationInputTokens: count(raw.CacheCreationInputTokens), CacheReadInputTokens: count(raw.CacheReadInputTokens),
	}
	if cc := raw.CacheCreation; cc != nil {
		u.CacheCreation.Ephemeral5m, u.CacheCreation.Ephemeral1h = count(cc.Ephemeral5m), count(cc.Ephemeral1h)
	}
	return nil
}

// count reads a token count; what is not a non-negative number counts 0.
func count(n json.Number) int64 {
	if i, err := n.Int64(); err == nil {
		return max(i, 0)
	}
	f, err := n.Float64()
	if err != nil || f < 0 || f > math.MaxInt64/2 {
		return 0
	}
	return int64(math.Round(f))
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
	usage.Tokens
	CostUSD  float64 `json:"cost_usd"`
	APICalls int     `json:"api_calls"`
	// UnpricedCalls counts calls of models the price table does not know;
	// their tokens are included, their cost is not.
	UnpricedCalls  int      `json:"unpriced_calls,omitempty"`
	UnpricedModels []string `json:"unpriced_models,omitempty"`
	// Unpriced is true when CostUSD leaves out calls it could not price:
	// it is then a lower bound, never a silent 0 for "free".
	Unpriced bool `json:"unpriced,omitempty"`
}

// merge adds o into t.
func (t *Totals) merge(o *Totals) {
	t.Tokens.Add(o.Tokens)
	t.CostUSD += o.CostUSD
	t.APICalls += o.APICalls
	t.UnpricedCalls += o.UnpricedCalls
	t.Unpriced = t.Unpriced || o.Unpriced || o.UnpricedCalls > 0
	for _, m := range o.UnpricedModels {
		t.addUnpriced(m)
	}
}

func (t *Totals) addUnpriced(model string) {
	for _, m := range t.UnpricedModels {
		if m == model {
			return
		}
	}
	t.UnpricedModels = append(t.UnpricedModels, model)
	sort.Strings(t.UnpricedModels)
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
	t.Unpriced = true
	t.addUnpriced(c.model)
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
	calls     []call
	stats     ReadStats
	err       error // why the file could not be read (wholly or to its end)
	fromIndex bool  // filled from the index, not read

	// Summary fields, filled when the scan asks for them.
	firstPrompt string
	prompts     int
	compacted   int
	interrupted int
	apiErrors   int
	// inlineAgents counts CLI 1.0.x sidechains kept in the main file (their
	// first user line has isSidechain and no parent).
	inlineAgents int
}

// callKey identifies an API response by its message id and request id:
// 128-bit FNV-1a over both, the same in every process (the index of
// per-file summaries stores keys).
func callKey(msgID, reqID string) [2]uint64 {
	return sumKey([]byte(msgID), []byte(reqID))
}

// FNV-1a 128 (hash/fnv's New128a), inlined: through hash.Hash a key cost
// 500 ns, most of it the interface and its allocations.
const (
	fnvOffsetHigh = 0x6c62272e07bb0142
	fnvOffsetLow  = 0x62b821756295c58d
	fnvPrimeLow   = 0x13b // the prime is 2^88 + 0x13b
	fnvPrimeShift = 24
)

// sumKey is FNV-1a 128 of msgID, a zero byte and reqID, as the little-endian
// halves of its big-endian sum.
func sumKey(msgID, reqID []byte) [2]uint64 {
	hi, lo := uint64(fnvOffsetHigh), uint64(fnvOffsetLow)
	step := func(c byte) {
		lo ^= uint64(c)
		h, l := bits.Mul64(fnvPrimeLow, lo)
		hi, lo = h+lo<<fnvPrimeShift+fnvPrimeLow*hi, l
	}
	for _, c := range msgID {
		step(c)
	}
	step(0)
	for _, c := range reqID {
		step(c)
	}
	return [2]uint64{bits.ReverseBytes64(hi), bits.ReverseBytes64(lo)}
}

// rawCallKey is callKey of two raw JSON strings (see lineInfo).
func (s *scanner) rawCallKey(msgID, reqID []byte) [2]uint64 {
	m, ok1 := plainString(msgID)
	r, ok2 := plainString(reqID)
	if !ok1 || !ok2 {
		m, r = []byte(strValue(msgID)), []byte(strValue(reqID))
	}
	return sumKey(m, r)
}

// internModel returns the model a raw JSON string names, one string per
// model and file.
func internModel(models map[string]string, raw []byte) string {
	inner, ok := plainString(raw)
	if !ok {
		inner = []byte(strValue(raw))
	}
	if m, ok := models[string(inner)]; ok {
		return m
	}
	m := string(inner)
	models[m] = m
	return m
}

// parseTime reads a raw JSON timestamp as time.Parse(time.RFC3339Nano)
// does (the zero time when it cannot), without allocating for the CLI's
// spelling, "2025-01-02T03:04:05.678Z".
func parseTime(raw []byte) time.Time {
	if len(raw) == 26 && raw[0] == '"' && raw[25] == '"' && raw[24] == 'Z' &&
		raw[5] == '-' && raw[8] == '-' && raw[11] == 'T' && raw[14] == ':' && raw[17] == ':' && raw[20] == '.' {
		var f [7]int
		ok := true
		for i, span := range [7][2]int{{1, 5}, {6, 8}, {9, 11}, {12, 14}, {15, 17}, {18, 20}, {21, 24}} {
			for _, c := range raw[span[0]:span[1]] {
				if c < '0' || c > '9' {
					ok = false
				}
				f[i] = f[i]*10 + int(c-'0')
			}
		}
		// Days up to 28 exist in every month; time.Parse checks the rest.
		if ok && f[1] >= 1 && f[1] <= 12 && f[2] >= 1 && f[2] <= 28 && f[3] < 24 && f[4] < 60 && f[5] < 60 {
			return time.Date(f[0], time.Month(f[1]), f[2], f[3], f[4], f[5], f[6]*1e6, time.UTC)
		}
	}
	t, _ := time.Parse(time.RFC3339Nano, strValue(raw))
	return t
}

var (
	usageKey     = []byte(`"usage"`)
	userTypeKey  = []byte(`"user"`)
	compactKey   = []byte(`compact_boundary`)
	interruptKey = []byte(`[Request interrupted by user`)
)

// hasUsageKey reports whether line holds `"usage"`. The CLI writes usage
// near the end of a line, after the contents, so the tail of a long line is
// looked at first.
func hasUsageKey(line []byte) bool {
	if len(line) > 8<<10 && bytes.Contains(line[len(line)-2<<10:], usageKey) {
		return true
	}
	return bytes.Contains(line, usageKey)
}

// scanner holds per-worker buffers.
type scanner struct {
	lr      *LineReader
	li      lineInfo
	from    int // where parse goes on in a line whose head next read (see scanHead)
	summary bool
	seen    map[[2]uint64]int // see fileMaps
	models  map[string]string
}

// usageLineLimit is how much of a line a usage scan buffers before it looks
// at the line's type: longer lines that are not the model's (tool results,
// several MB at times) are read past with the buffer at its usual size.
const usageLineLimit = readBuf / 2

// usageKeepBuf is the largest buffer a usage scan keeps after a long line.
const usageKeepBuf = 4 << 20

func newScanner(summary bool) *scanner {
	s := &scanner{lr: NewLineReader(nil, 0), summary: summary}
	if !summary {
		// The rare assistant line of several MB does not pin memory.
		s.lr.keep = usageKeepBuf
	}
	return s
}

// fileMaps returns the scanner's per-file maps, empty: the calls seen in the
// file (key → index in fs.calls) and its models. They are kept from file to
// file unless one grew large.
func (s *scanner) fileMaps() (seen map[[2]uint64]int, models map[string]string) {
	if s.seen == nil || len(s.seen) > 4096 {
		s.seen = make(map[[2]uint64]int)
	}
	if s.models == nil || len(s.models) > 64 {
		s.models = make(map[string]string)
	}
	clear(s.seen)
	clear(s.models)
	return s.seen, s.models
}

// callsPool holds slices of calls merged already, for the scans of other
// files: a file's calls are a result until merged, then garbage.
var callsPool sync.Pool

func getCalls() []call {
	if p, ok := callsPool.Get().(*[]call); ok {
		return (*p)[:0]
	}
	return nil
}

// putCalls gives back the calls of a merged file (no longer used by it).
func putCalls(c []call) {
	if cap(c) > 0 {
		callsPool.Put(&c)
	}
}

// next returns the next line the scan reads whole (ok false for a line
// skipped). A usage scan needs only the model's lines, which hold the API
// calls: the others, named by the "type" in their head (scanHead), are read
// past (their bytes only searched for the newline), short ones after a look
// for the compaction boundary (a system line) or the interrupt marker (a
// user line) that flag a session.
func (s *scanner) next(fs *fileScan) (line []byte, ok bool, err error) {
	if s.summary {
		line, err = s.lr.Next()
		return line, err == nil, err
	}
	line, whole, err := s.lr.NextPrefix(usageLineLimit)
	if err != nil {
		return nil, false, err
	}
	from, typed := scanHead(line, &s.li)
	if typ := s.li.typ; typed && !strIs(typ, "assistant") {
		if !whole {
			return nil, false, s.lr.SkipRest()
		}
		switch {
		case len(line) >= 8<<10:
		case strIs(typ, "system"):
			if bytes.Contains(line, compactKey) {
				fs.compacted++
			}
		case strIs(typ, "user"):
			if bytes.Contains(line, interruptKey) {
				fs.interrupted++
			}
		}
		return nil, false, nil
	}
	s.from = from // parse goes on from the head read
	if whole {
		return line, true, nil
	}
	line, ok, err = s.lr.Rest()
	if ok {
		// The buffer may have moved under the fields the head points to.
		s.from, _ = scanHead(line, &s.li)
	}
	return line, ok, err
}

// markers counts compaction boundaries and interrupt markers, which make
// the transcript differ from the bill (flags). They are short lines.
func (s *scanner) markers(fs *fileScan, line []byte) {
	if len(line) < 8<<10 {
		if bytes.Contains(line, compactKey) {
			fs.compacted++
		} else if bytes.Contains(line, interruptKey) {
			fs.interrupted++
		}
	}
}

// scanFile reads one transcript and collects its API calls (deduplicated
// within the file) and, in summary mode, its prompts and timestamps.
func (s *scanner) scanFile(ctx context.Context, fs *fileScan) error {
	f, err := openFile(fs.path)
	if err != nil {
		return fmt.Errorf("open transcript: %w", err)
	}
	defer f.Close()
	s.lr.Reset(f)
	seen, models := s.fileMaps()
	fs.calls = getCalls()
	for n := 0; ; n++ {
		if n&1023 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		line, ok, err := s.next(fs)
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", fs.path, err)
		}
		if !ok {
			continue
		}
		li := &s.li
		if !s.parse(fs, line) {
			continue
		}
		var ts time.Time
		if len(li.timestamp) > 2 {
			ts = parseTime(li.timestamp)
		}
		if !ts.IsZero() {
			if fs.start.IsZero() || ts.Before(fs.start) {
				fs.start = ts
			}
			if ts.After(fs.last) {
				fs.last = ts
			}
		}
		if fs.cwd == "" && li.cwd != nil {
			fs.cwd = strValue(li.cwd)
		}
		if s.summary {
			s.summarize(fs, li, line)
		}
		if li.usage != nil && strIs(li.typ, "assistant") {
			s.addCall(fs, li, ts, seen, models)
		}
	}
	fs.stats.Add(s.lr.Stats)
	return nil
}

// parse reads line into s.li; false when the scan has nothing more to do
// with it. A usage scan looks at lines without `"usage"` only for markers
// (and does not count them malformed); it parses first, since nearly every
// line it is given holds usage, and searches for the key only when the
// parse found none.
func (s *scanner) parse(fs *fileScan, line []byte) bool {
	if s.summary {
		if len(line) > 4096 && !hasUsageKey(line) && !bytes.Contains(line, userTypeKey) && !bytes.Contains(line, compactKey) {
			// Large lines without usage and not user entries carry nothing a
			// summary needs but a timestamp; skip the parse.
			return false
		}
		if scanLine(line, &s.li, true) != nil {
			fs.stats.Malformed++
			return false
		}
		return true
	}
	err := scanLineFrom(line, &s.li, s.from, false)
	if err == nil && s.li.usage != nil {
		return true // message.usage is spelled `"usage"`
	}
	if !hasUsageKey(line) {
		s.markers(fs, line)
		return false
	}
	if err != nil {
		fs.stats.Malformed++
		return false
	}
	return true
}

// addCall records the API response of an assistant line, once per
// (message id, request id) within the file.
func (s *scanner) addCall(fs *fileScan, li *lineInfo, ts time.Time, seen map[[2]uint64]int, models map[string]string) {
	if li.isAPIError || strIs(li.model, "<synthetic>") {
		fs.apiErrors++
		return
	}
	var key [2]uint64
	if strEmpty(li.msgID) && strEmpty(li.requestID) {
		key = callKey(strValue(li.uuid), "uuid")
	} else {
		key = s.rawCallKey(li.msgID, li.requestID)
	}
	if li.usageBad {
		fs.stats.Malformed++
		return
	}
	c := call{key: key, ts: ts, sidechain: li.isSidechain || fs.agent, usage: li.u}
	if i, dup := seen[key]; dup {
		// Older CLIs write the running count of message_start on the
		// earlier lines of a response and the final count on its last
		// line: keep the largest (input and cache counts are equal).
		if c.usage.OutputTokens > fs.calls[i].usage.OutputTokens {
			fs.calls[i].usage = c.usage
		}
		return
	}
	seen[key] = len(fs.calls)
	c.model = internModel(models, li.model)
	fs.calls = append(fs.calls, c)
}

func (s *scanner) summarize(fs *fileScan, li *lineInfo, line []byte) {
	switch {
	case strIs(li.typ, "system"):
		if bytes.Contains(line, compactKey) {
			fs.compacted++
		}
	case strIs(li.typ, "user"):
		if li.isSidechain && li.parentNull && !fs.agent {
			fs.inlineAgents++
		}
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
		if !isPrompt || commandEcho(text) {
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
		t := promptContent(strValue(content))
		return t, t != ""
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
				text = promptContent(t)
			}
		}
		i = end
	}
	return text, isPrompt && text != ""
}

// contextTags wrap what the CLI or an IDE adds to a prompt, not what the
// person typed. A task-notification is the CLI telling the main thread that
// a background agent or workflow ended (CLI 2.1.332), not a prompt.
var contextTags = []string{"ide_opened_file", "ide_selection", "ide_diagnostics", "system-reminder", "task-notification"}

// promptContent strips leading IDE context and reminders from a prompt.
func promptContent(t string) string {
	for {
		t = strings.TrimSpace(t)
		stripped := false
		for _, tag := range contextTags {
			if strings.HasPrefix(t, "<"+tag+">") {
				if i := strings.Index(t, "</"+tag+">"); i >= 0 {
					t, stripped = t[i+len(tag)+3:], true
				} else {
					return ""
				}
			}
		}
		if !stripped {
			return t
		}
	}
}

// commandEcho reports whether a user line is the CLI's record of a slash
// command or local command (/clear, /compact, their output), not a prompt.
func commandEcho(t string) bool {
	for _, p := range []string{"<command-name>", "<command-message>", "<local-command-", "<bash-input>", "<bash-stdout>", "Caveat: The messages below were generated"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// peekStart reads the beginning of a transcript for the first timestamp and
// whether it starts like a --fork-session copy (a "mode" line), which is
// enough to order files by who wrote a call first without reading them.
func peekStart(path string) (start time.Time, forkLike bool) {
	f, err := openFile(path)
	if err != nil {
		return time.Time{}, false
	}
	defer f.Close()
	buf := make([]byte, 0, 8<<10)
	for len(buf) < 1<<20 {
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if i := bytes.Index(buf, timestampKey); i >= 0 {
			rest := buf[i+len(timestampKey):]
			if j := bytes.IndexByte(rest, '"'); j >= 0 {
				start, _ = time.Parse(time.RFC3339Nano, string(rest[:j]))
				break
			}
		}
		if err != nil {
			break
		}
		if len(buf) == cap(buf) {
			buf = append(buf, make([]byte, cap(buf))...)[:len(buf)]
		}
	}
	return start, bytes.HasPrefix(buf, []byte(`{"type":"mode"`))
}

var timestampKey = []byte(`"timestamp":"`)

// scanTarget is one file to scan and its place in the owner order.
type scanTarget struct {
	fs       *fileScan
	start    time.Time
	forkLike bool
	info     fs.FileInfo // for the index; nil when the file cannot be read
	cached   *indexEntry
	read     bool // scanned to its end (its entry goes to the index)
}

// orderTargets puts files in owner order (see scanOrdered), from the index
// when it knows a file, else from the file's first bytes. The files are
// looked at in parallel (GOMAXPROCS workers): each costs a few system calls.
func orderTargets(ctx context.Context, targets []*fileScan, summary bool, ix *index) ([]scanTarget, error) {
	order := make([]scanTarget, len(targets))
	var next atomic.Int64
	g, ctx := errgroup.WithContext(ctx)
	for range min(runtime.GOMAXPROCS(0), max(len(targets)/16, 1)) {
		g.Go(func() error {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(targets) {
					return nil
				}
				if i&63 == 0 && ctx.Err() != nil {
					return ctx.Err()
				}
				f := targets[i]
				t := scanTarget{fs: f}
				if ix != nil {
					t.info, _ = checkRegular(f.path)
					t.cached = ix.lookup(f.path, t.info, summary)
				}
				if t.cached != nil {
					t.start, t.forkLike = t.cached.PeekStart, t.cached.ForkLike
				} else {
					t.start, t.forkLike = peekStart(f.path)
				}
				order[i] = t
			}
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := order[i], order[j]
		switch {
		case a.start.IsZero() != b.start.IsZero():
			return !a.start.IsZero()
		case !a.start.Equal(b.start):
			return a.start.Before(b.start)
		case a.forkLike != b.forkLike:
			return !a.forkLike
		case a.fs.agent != b.fs.agent:
			return !a.fs.agent
		}
		return a.fs.path < b.fs.path
	})
	return order, nil
}

// scanWindow is how many results per worker may wait for merging: enough
// small files to keep the other workers busy while one reads a large one.
const scanWindow = 64

// scanOrdered scans files in parallel (GOMAXPROCS workers) and hands each
// result to merge in owner order: the file a call was first written to comes
// first, so a fork, which copies its parent's lines with their timestamps
// (and begins with a "mode" line), is merged after its parent. At most
// scanWindow results per worker wait for merging (a result is its calls,
// about a hundred bytes each), so memory does not grow with the number of
// files, and one large file does not stop the other workers. The entry of
// each file read goes to the index (ix) as it is merged, in the same order.
func scanOrdered(ctx context.Context, targets []*fileScan, summary bool, ix *index, merge func(*fileScan)) error {
	order, err := orderTargets(ctx, targets, summary, ix)
	if err != nil {
		return err
	}
	workers := runtime.GOMAXPROCS(0)
	done := make([]chan *fileScan, len(order))
	for i := range done {
		done[i] = make(chan *fileScan, 1)
	}
	jobs := make(chan int)
	window := make(chan struct{}, scanWindow*workers) // results scanned but not merged
	g, ctx := errgroup.WithContext(ctx)
	for w := 0; w < workers; w++ {
		g.Go(func() error {
			s := newScanner(summary)
			for i := range jobs {
				t := &order[i]
				fs := t.fs
				if t.cached != nil {
					t.cached.load(fs)
					done[i] <- fs
					continue
				}
				err := s.scanFile(ctx, fs)
				t.read = err == nil
				if err != nil {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					// A file removed by the CLI's cleanup meanwhile is
					// empty; any other failure is the caller's warning.
					if !errors.Is(err, os.ErrNotExist) {
						fs.err = err
					}
				}
				done[i] <- fs
			}
			return nil
		})
	}
	g.Go(func() error {
		defer close(jobs)
		for i := range order {
			select {
			case window <- struct{}{}:
			case <-ctx.Done():
				return ctx.Err()
			}
			select {
			case jobs <- i:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	g.Go(func() error {
		for i := range order {
			select {
			case fs := <-done[i]:
				if t := &order[i]; t.read {
					ix.store(fs.path, t.info, t.start, t.forkLike, summary, fs)
				}
				calls := fs.calls
				merge(fs)
				fs.calls = nil
				putCalls(calls)
				<-window
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	return g.Wait()
}

// TranscriptUsage returns the deduplicated usage and estimated cost of one
// session, its subagents included. It is the fallback for a job that died
// without a result line ("cost_estimated"). A nil prices uses the embedded
// table.
func TranscriptUsage(ctx context.Context, sessionFile string, prices *PriceTable) (Totals, error) {
	if prices == nil {
		prices = DefaultPrices()
	}
	if _, err := checkRegular(sessionFile); err != nil {
		return Totals{}, fmt.Errorf("transcript usage: %w", err)
	}
	var targets []*fileScan
	sid := strings.TrimSuffix(filepath.Base(sessionFile), ".jsonl")
	for i, p := range append([]string{sessionFile}, SessionFile{Path: sessionFile}.Subagents()...) {
		targets = append(targets, &fileScan{path: p, sessionID: sid, agent: i > 0})
	}
	var t Totals
	seen := make(map[[2]uint64]struct{})
	var mainErr error
	err := scanOrdered(ctx, targets, false, nil, func(fs *fileScan) {
		if fs.err != nil && !fs.agent {
			mainErr = fs.err
		}
		for i := range fs.calls {
			c := &fs.calls[i]
			if _, dup := seen[c.key]; dup {
				continue
			}
			seen[c.key] = struct{}{}
			t.addCall(c, prices)
		}
	})
	if err == nil {
		err = mainErr
	}
	if err != nil {
		return Totals{}, fmt.Errorf("transcript usage: %w", err)
	}
	return t, nil
}
