// Package histgen writes a synthetic Claude Code projects tree shaped like
// real transcripts (reference section 4): thousands of session files, one
// line per content block with the response's usage repeated on each, lines
// from a few hundred bytes to several MB, subagent sidechains with meta
// files, forks that copy their parent's lines, API error entries and torn
// last lines. It feeds the history benchmark; it is deterministic per seed.
package histgen

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Options sizes the corpus.
type Options struct {
	// Bytes is the approximate total size to write.
	Bytes int64
	// Projects is the number of project directories.
	Projects int
	// Seed makes the corpus reproducible.
	Seed uint64
	// Start is the timestamp of the earliest session; sessions spread over
	// the 60 days after it.
	Start time.Time
}

// Stats says what was written.
type Stats struct {
	Files, Sessions, Subagents, Forks int
	Lines                             int64
	Bytes                             int64
	LargestLine                       int
}

// Generate writes a projects tree under dir (dir/projects/...).
func Generate(ctx context.Context, dir string, o Options) (Stats, error) {
	if o.Projects <= 0 {
		o.Projects = 40
	}
	if o.Start.IsZero() {
		o.Start = time.Date(2026, 9, 1, 8, 0, 0, 0, time.UTC)
	}
	g := &gen{r: rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15)), o: o}
	g.pool = makePool(g.r, 16<<20)
	for p := 0; p < o.Projects; p++ {
		g.projects = append(g.projects, fmt.Sprintf("/home/dev/src/project-%02d", p))
	}
	for g.st.Bytes < o.Bytes {
		if err := ctx.Err(); err != nil {
			return g.st, err
		}
		if err := g.session(dir); err != nil {
			return g.st, err
		}
	}
	return g.st, nil
}

// GenerateSession writes one session of about size bytes under dir and
// returns its path (for the `history show` latency benchmark).
func GenerateSession(dir string, size int64, seed uint64) (string, error) {
	g := &gen{r: rand.New(rand.NewPCG(seed, seed+1)), o: Options{Start: time.Date(2026, 9, 1, 8, 0, 0, 0, time.UTC)}}
	g.pool = makePool(g.r, 16<<20)
	g.projects = []string{"/home/dev/src/big"}
	g.forceTurns = 1 << 30
	g.limit = size
	if err := g.session(dir); err != nil {
		return "", err
	}
	return g.lastPath, nil
}

type gen struct {
	r          *rand.Rand
	o          Options
	st         Stats
	pool       string
	projects   []string
	seq        int
	forceTurns int
	limit      int64
	lastPath   string
}

// makePool returns JSON-escaped prose to slice text from.
func makePool(r *rand.Rand, n int) string {
	words := strings.Fields(`the a func return if err nil := package import for range struct type
		interface string int64 error context ctx test file line read write build go make install
		config session project usage tokens cost model assistant user tool result output input
		handler server client request response json yaml path dir os exec bash grep sed awk`)
	var b strings.Builder
	b.Grow(n)
	for b.Len() < n {
		b.WriteString(words[r.IntN(len(words))])
		switch x := r.IntN(40); {
		case x == 0:
			b.WriteString(`\n`)
		case x == 1:
			b.WriteString(`\"`)
		case x == 2:
			b.WriteString(`\t`)
		default:
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// text returns about n bytes of escaped text that never ends inside an escape.
func (g *gen) text(n int) string {
	if n > len(g.pool)-1 {
		n = len(g.pool) - 1
	}
	start := g.r.IntN(len(g.pool) - n)
	for start > 0 && g.pool[start-1] == '\\' {
		start--
	}
	end := start + n
	for end > start && g.pool[end-1] == '\\' {
		end--
	}
	return g.pool[start:end]
}

// size draws a content size: mostly small, sometimes large, rarely huge.
func (g *gen) size() int {
	switch x := g.r.IntN(1000); {
	case x < 800:
		return 50 + g.r.IntN(1500)
	case x < 985:
		return 2000 + g.r.IntN(20000)
	case x < 998:
		return 50000 + g.r.IntN(250000)
	default:
		return 1<<20 + g.r.IntN(2<<20)
	}
}

func (g *gen) uuid() string {
	g.seq++
	return fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", g.r.Uint32(), g.seq&0xffff, g.r.IntN(4096), g.r.IntN(4096), g.r.Uint64()&0xffffffffffff)
}

func hexID(r *rand.Rand, n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[r.IntN(16)]
	}
	return string(b)
}

func encode(p string) string {
	return strings.Map(func(r rune) rune {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return r
		}
		return '-'
	}, p)
}

// writer writes one transcript file, counting.
type writer struct {
	f  *os.File
	w  *bufio.Writer
	st *Stats
	n  int64
}

func (g *gen) create(path string) (*writer, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	g.st.Files++
	return &writer{f: f, w: bufio.NewWriterSize(f, 256<<10), st: &g.st}, nil
}

func (w *writer) line(s string) {
	w.w.WriteString(s)
	w.w.WriteByte('\n')
	w.n += int64(len(s) + 1)
	w.st.Lines++
	w.st.Bytes += int64(len(s) + 1)
	if len(s) > w.st.LargestLine {
		w.st.LargestLine = len(s)
	}
}

func (w *writer) close() error {
	if err := w.w.Flush(); err != nil {
		w.f.Close()
		return err
	}
	return w.f.Close()
}

var models = []string{"claude-opus-4-8", "claude-opus-4-8", "claude-sonnet-5", "claude-haiku-4-5-20251001"}

// conv is the running state of one transcript.
type conv struct {
	sid, cwd, agentID string
	parent            string
	t                 time.Time
	sidechain         bool
	lines             []string // kept for forks (the main file only)
	keep              bool
}

func (c *conv) ts() string {
	c.t = c.t.Add(time.Duration(200+rand.IntN(3000)) * time.Millisecond)
	return c.t.Format("2006-01-02T15:04:05.000Z")
}

func (c *conv) common() string {
	s := `"isSidechain":` + strconv.FormatBool(c.sidechain)
	if c.agentID != "" {
		s += `,"agentId":"` + c.agentID + `"`
	}
	return s + `,"userType":"external","entrypoint":"sdk-cli","cwd":"` + c.cwd + `","sessionId":"` + c.sid + `","version":"2.1.197","gitBranch":"main"`
}

func (g *gen) emit(w *writer, c *conv, s string) {
	w.line(s)
	if c.keep {
		c.lines = append(c.lines, s)
	}
}

func (g *gen) user(w *writer, c *conv, content string) {
	u := g.uuid()
	parent := "null"
	if c.parent != "" {
		parent = `"` + c.parent + `"`
	}
	g.emit(w, c, `{"parentUuid":`+parent+`,`+c.common()+`,"promptId":"`+hexID(g.r, 8)+`","type":"user","message":{"role":"user","content":`+content+`},"uuid":"`+u+`","timestamp":"`+c.ts()+`","permissionMode":"bypassPermissions"}`)
	c.parent = u
}

func (g *gen) usage(model string) string {
	in, out := 3+g.r.IntN(3000), 20+g.r.IntN(2000)
	cr, cw := g.r.IntN(150000), g.r.IntN(8000)
	return fmt.Sprintf(`{"input_tokens":%d,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d,"output_tokens":%d,"server_tool_use":{"web_search_requests":0,"web_fetch_requests":0},"service_tier":"standard","cache_creation":{"ephemeral_1h_input_tokens":0,"ephemeral_5m_input_tokens":%d},"inference_geo":"","iterations":[],"speed":"standard"}`, in, cw, cr, out, cw)
}

// response writes one API response as one line per content block, each
// repeating the usage. It returns the tool_use ids it asked for.
func (g *gen) response(w *writer, c *conv, model string, tools int, agent bool) []string {
	msgID := "msg_01" + hexID(g.r, 22)
	reqID := "req_01" + hexID(g.r, 22)
	usage := g.usage(model)
	stop := "end_turn"
	if tools > 0 {
		stop = "tool_use"
	}
	var blocks []string
	if g.r.IntN(3) == 0 {
		blocks = append(blocks, `{"type":"thinking","thinking":"`+g.text(200+g.r.IntN(2000))+`","signature":"`+hexID(g.r, 64)+`"}`)
	}
	blocks = append(blocks, `{"type":"text","text":"`+g.text(g.size()/4+20)+`"}`)
	var ids []string
	for i := 0; i < tools; i++ {
		id := "toolu_01" + hexID(g.r, 22)
		ids = append(ids, id)
		switch {
		case agent && i == 0:
			blocks = append(blocks, `{"type":"tool_use","id":"`+id+`","name":"Agent","input":{"description":"Explore the code","prompt":"`+g.text(400)+`","subagent_type":"general-purpose"}}`)
		case g.r.IntN(8) == 0:
			blocks = append(blocks, `{"type":"tool_use","id":"`+id+`","name":"Write","input":{"file_path":"/tmp/out.go","content":"`+g.text(g.size())+`"}}`)
		default:
			blocks = append(blocks, `{"type":"tool_use","id":"`+id+`","name":"Bash","input":{"command":"`+g.text(60)+`","description":"run it"}}`)
		}
	}
	for _, b := range blocks {
		u := g.uuid()
		g.emit(w, c, `{"parentUuid":"`+c.parent+`",`+c.common()+`,"message":{"id":"`+msgID+`","type":"message","role":"assistant","model":"`+model+`","content":[`+b+`],"stop_reason":"`+stop+`","stop_sequence":null,"usage":`+usage+`,"stop_details":null},"requestId":"`+reqID+`","type":"assistant","uuid":"`+u+`","timestamp":"`+c.ts()+`"}`)
		c.parent = u
	}
	return ids
}

func (g *gen) toolResults(w *writer, c *conv, ids []string) {
	for _, id := range ids {
		out := g.text(g.size())
		u := g.uuid()
		g.emit(w, c, `{"parentUuid":"`+c.parent+`",`+c.common()+`,"type":"user","message":{"role":"user","content":[{"tool_use_id":"`+id+`","type":"tool_result","content":"`+out+`","is_error":false}]},"uuid":"`+u+`","timestamp":"`+c.ts()+`","toolUseResult":{"stdout":"`+out+`","stderr":"","interrupted":false,"isImage":false,"noOutputExpected":false}}`)
		c.parent = u
	}
}

// session writes one session: prompts, turns of responses and tool results,
// sometimes subagents, a resume, an API error, a fork, a torn last line.
func (g *gen) session(dir string) error {
	cwd := g.projects[g.r.IntN(len(g.projects))]
	sid := g.uuid()
	pdir := filepath.Join(dir, "projects", encode(cwd))
	path := filepath.Join(pdir, sid+".jsonl")
	w, err := g.create(path)
	if err != nil {
		return err
	}
	g.lastPath = path
	g.st.Sessions++
	c := &conv{sid: sid, cwd: cwd, t: g.o.Start.Add(time.Duration(g.r.Int64N(int64(60 * 24 * time.Hour)))), keep: g.r.IntN(20) == 0}
	model := models[g.r.IntN(len(models))]
	prompts := 1 + g.r.IntN(3)
	for p := 0; p < prompts; p++ {
		prompt := g.text(100 + g.r.IntN(600))
		g.emit(w, c, `{"type":"queue-operation","operation":"enqueue","timestamp":"`+c.ts()+`","sessionId":"`+sid+`","content":"`+prompt+`"}`)
		g.emit(w, c, `{"type":"queue-operation","operation":"dequeue","timestamp":"`+c.ts()+`","sessionId":"`+sid+`"}`)
		g.user(w, c, `"`+prompt+`"`)
		if p == 0 {
			u := g.uuid()
			g.emit(w, c, `{"parentUuid":"`+c.parent+`",`+c.common()+`,"attachment":{"type":"skill_listing","content":"`+g.text(3000)+`","skillCount":13},"type":"attachment","uuid":"`+u+`","timestamp":"`+c.ts()+`"}`)
			c.parent = u
		}
		turns := 2 + g.r.IntN(10)
		if g.forceTurns > 0 {
			turns = g.forceTurns
		}
		for t := 0; t < turns; t++ {
			if g.limit > 0 && w.n >= g.limit {
				break
			}
			agent := g.r.IntN(60) == 0
			tools := 0
			if t < turns-1 {
				tools = 1 + g.r.IntN(2)
			}
			ids := g.response(w, c, model, tools, agent)
			if agent && len(ids) > 0 {
				if err := g.subagent(pdir, sid, cwd, ids[0], c.t); err != nil {
					return err
				}
			}
			if g.r.IntN(200) == 0 {
				u := g.uuid()
				g.emit(w, c, `{"parentUuid":"`+c.parent+`",`+c.common()+`,"type":"assistant","uuid":"`+u+`","timestamp":"`+c.ts()+`","isApiErrorMessage":true,"apiErrorStatus":500,"error":"server_error","message":{"id":"`+g.uuid()+`","model":"<synthetic>","role":"assistant","content":[{"type":"text","text":"API Error: 500"}],"usage":{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}}`)
			}
			g.toolResults(w, c, ids)
		}
		g.emit(w, c, `{"type":"last-prompt","lastPrompt":"`+g.text(80)+`","leafUuid":"`+c.parent+`","sessionId":"`+sid+`"}`)
		if p > 0 {
			g.emit(w, c, `{"type":"mode","mode":"normal","sessionId":"`+sid+`"}`)
		}
	}
	if g.r.IntN(100) == 0 {
		// A session still being written: the last line has no newline yet.
		w.w.WriteString(`{"parentUuid":"` + c.parent + `","type":"assistant","message":{"content":[{"type":"text","text":"` + g.text(500))
	}
	if err := w.close(); err != nil {
		return err
	}
	if c.keep {
		return g.fork(pdir, c)
	}
	return nil
}

// subagent writes <sid>/subagents/agent-<id>.jsonl and its meta file.
func (g *gen) subagent(pdir, sid, cwd, toolUseID string, t time.Time) error {
	id := hexID(g.r, 17)
	base := filepath.Join(pdir, sid, "subagents", "agent-"+id)
	w, err := g.create(base + ".jsonl")
	if err != nil {
		return err
	}
	g.st.Subagents++
	c := &conv{sid: sid, cwd: cwd, agentID: id, t: t, sidechain: true}
	g.user(w, c, `"`+g.text(400)+`"`)
	turns := 2 + g.r.IntN(10)
	for i := 0; i < turns; i++ {
		tools := 1
		if i == turns-1 {
			tools = 0
		}
		g.toolResults(w, c, g.response(w, c, "claude-haiku-4-5-20251001", tools, false))
	}
	if err := w.close(); err != nil {
		return err
	}
	meta := `{"agentType":"general-purpose","description":"Explore the code","toolUseId":"` + toolUseID + `","spawnDepth":1}`
	return os.WriteFile(base+".meta.json", []byte(meta), 0o644)
}

// fork writes a --fork-session copy: a mode line, the parent's lines with
// the session id rewritten, then a new turn.
func (g *gen) fork(pdir string, parent *conv) error {
	sid := g.uuid()
	w, err := g.create(filepath.Join(pdir, sid+".jsonl"))
	if err != nil {
		return err
	}
	g.st.Forks++
	g.st.Sessions++
	w.line(`{"type":"mode","mode":"normal","sessionId":"` + sid + `"}`)
	for _, l := range parent.lines {
		w.line(strings.ReplaceAll(l, parent.sid, sid))
	}
	c := &conv{sid: sid, cwd: parent.cwd, parent: parent.parent, t: parent.t.Add(time.Hour)}
	g.user(w, c, `"`+g.text(200)+`"`)
	g.toolResults(w, c, g.response(w, c, "claude-sonnet-5", 1, false))
	g.response(w, c, "claude-sonnet-5", 0, false)
	return w.close()
}
