package history

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Format is an export format of `history show`.
type Format string

// Export formats.
const (
	FormatMarkdown Format = "md"
	FormatJSON     Format = "json"
	FormatHTML     Format = "html"
	FormatText     Format = "text"
)

// ParseFormat validates a format name.
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(s)); f {
	case FormatMarkdown, FormatJSON, FormatHTML, FormatText:
		return f, nil
	case "markdown":
		return FormatMarkdown, nil
	case "txt":
		return FormatText, nil
	}
	return "", fmt.Errorf("unknown format %q (want md, json, html or text)", s)
}

// ExportSchema names the JSON export's structure.
const ExportSchema = "pneuma.history.session/v1"

// Header describes the exported session.
type Header struct {
	Schema    string    `json:"schema"`
	SessionID string    `json:"session_id"`
	Path      string    `json:"path"`
	Project   string    `json:"project,omitempty"`
	GitBranch string    `json:"git_branch,omitempty"`
	Version   string    `json:"cli_version,omitempty"`
	Started   time.Time `json:"started,omitzero"`
}

// Record is one normalised transcript entry of an export: a user or
// assistant message, a system event, or a subagent (whose own records are
// nested in Entries).
type Record struct {
	// Type is "user", "assistant", "system" or "subagent".
	Type       string    `json:"type"`
	Subtype    string    `json:"subtype,omitempty"`
	UUID       string    `json:"uuid,omitempty"`
	ParentUUID string    `json:"parent_uuid,omitempty"`
	Timestamp  time.Time `json:"timestamp,omitzero"`
	Model      string    `json:"model,omitempty"`
	MessageID  string    `json:"message_id,omitempty"`
	RequestID  string    `json:"request_id,omitempty"`
	Sidechain  bool      `json:"sidechain,omitempty"`
	// Meta marks text the CLI injected rather than a person typed.
	Meta bool `json:"meta,omitempty"`
	// CompactSummary marks the summary that replaces compacted history.
	CompactSummary bool `json:"compact_summary,omitempty"`
	// Compaction is what a compact_boundary (Subtype) says about the
	// compaction. Its own API call is not in the transcript: it is in the
	// CLI's total_cost_usd but not in this export's usage.
	Compaction *Compaction `json:"compaction,omitempty"`
	APIError   bool        `json:"api_error,omitempty"`
	Usage      *Usage      `json:"usage,omitempty"`
	Blocks     []RBlock    `json:"blocks,omitempty"`
	// Agent fields, for Type "subagent".
	AgentID     string `json:"agent_id,omitempty"`
	AgentType   string `json:"agent_type,omitempty"`
	Description string `json:"description,omitempty"`
	ToolUseID   string `json:"tool_use_id,omitempty"`
	// Title is a summary entry's text (Type "summary"): the session title.
	Title string `json:"title,omitempty"`
	// Unknown marks an entry of a type this reader does not know; Raw is
	// its whole line.
	Unknown bool            `json:"unknown,omitempty"`
	Raw     json.RawMessage `json:"raw,omitempty"`
	// Continued is true when this assistant entry continues the previous
	// one (the CLI writes one line per content block of a response).
	Continued bool `json:"-"`
}

// Compaction describes a compaction of the conversation.
type Compaction struct {
	Trigger   string `json:"trigger,omitempty"`    // "manual" (/compact) or "auto"
	PreTokens int64  `json:"pre_tokens,omitempty"` // the conversation's size before
}

// RBlock is one content block of a Record.
type RBlock struct {
	// Type is text, thinking, tool_use, tool_result, image or another
	// block type passed through.
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	// ToolName is the name of the tool_use a tool_result answers.
	ToolName string `json:"tool_name,omitempty"`
	IsError  bool   `json:"is_error,omitempty"`
}

// Footer closes an export: deduplicated usage and what the reader skipped.
type Footer struct {
	Usage Totals    `json:"usage"`
	Stats ReadStats `json:"read_stats"`
	// Compactions counts the session's compactions: the CLI billed an API
	// call for each that it did not write to the transcript, so Usage
	// leaves them out (`history usage` flags such a session "compacted").
	Compactions int `json:"compactions,omitempty"`
}

// renderer is one output format, fed as the transcript streams.
type renderer interface {
	begin(h Header) error
	record(r *Record, depth int) error
	beginSub(r *Record, depth int) error
	endSub(r *Record, depth int) error
	end(f Footer) error
}

// ExportOptions configures Export.
type ExportOptions struct {
	Format Format
	// Prices prices the footer's usage; nil uses the embedded table.
	Prices *PriceTable
	// Fold is the number of characters a tool input or result is cut to in
	// md, text and html (0: a default per format; negative: never cut).
	Fold int
	// Title overrides the document title.
	Title string
	// Warn, when set, is told about subagent files that cannot be read;
	// they are left out and the export goes on.
	Warn func(Warning)
	// NoRedact keeps secrets as they are (terminal control sequences are
	// still stripped).
	NoRedact bool
}

// Export writes one session (the transcript at sessionFile, its subagents
// nested where they were started) to w. It streams: output starts after the
// first lines are read, and memory does not grow with the transcript. Secrets
// are redacted in every format.
func Export(ctx context.Context, w io.Writer, sessionFile string, opts ExportOptions) error {
	if opts.Prices == nil {
		opts.Prices = DefaultPrices()
	}
	r, err := newRenderer(w, opts)
	if err != nil {
		return err
	}
	f, err := openFile(sessionFile)
	if err != nil {
		return fmt.Errorf("open session: %w", err)
	}
	defer f.Close()
	x := &exporter{
		r:        r,
		prices:   opts.Prices,
		seen:     make(map[[2]uint64]*Usage),
		tools:    make(map[string]string),
		subs:     subagentsOf(sessionFile, opts.Warn),
		warn:     opts.Warn,
		clean:    cleanText(!opts.NoRedact),
		redactOn: !opts.NoRedact,
		calls:    make(map[string]agentCall),
		chainOf:  make(map[string]*inlineChain),
		done:     make(map[string]bool),
	}
	er := NewEntryReader(f)
	h, pending, err := x.header(er, sessionFile)
	if err != nil {
		return err
	}
	if err := r.begin(h); err != nil {
		return err
	}
	for _, e := range pending {
		if err := x.entry(ctx, e, 0); err != nil {
			return err
		}
	}
	if err := x.stream(ctx, er, 0); err != nil {
		return fmt.Errorf("export %s: %w", sessionFile, err)
	}
	if err := x.flushInline(ctx, 0); err != nil {
		return err
	}
	x.stats.Add(er.Stats())
	if err := x.strayAgents(ctx); err != nil {
		return err
	}
	if err := x.flush(); err != nil {
		return err
	}
	return r.end(Footer{Usage: x.totals, Stats: x.stats, Compactions: x.compactions})
}

// newRenderer returns the renderer of opts.Format.
func newRenderer(w io.Writer, opts ExportOptions) (renderer, error) {
	switch opts.Format {
	case FormatMarkdown, "":
		return newMarkdown(w, opts.fold(4000)), nil
	case FormatText:
		return newText(w, opts.fold(4000)), nil
	case FormatHTML:
		return newHTML(w, opts.fold(20000), opts.Title), nil
	case FormatJSON:
		return newJSONRenderer(w), nil
	}
	return nil, fmt.Errorf("unknown format %q", opts.Format)
}

// header reads ahead until an entry names the cwd, so the header can show
// it; the entries read are returned to be rendered first.
func (x *exporter) header(er *EntryReader, sessionFile string) (Header, []*Entry, error) {
	var pending []*Entry
	h := Header{Schema: ExportSchema, SessionID: strings.TrimSuffix(filepath.Base(sessionFile), ".jsonl"), Path: sessionFile}
	for len(pending) < 64 {
		e, err := er.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return h, nil, fmt.Errorf("read %s: %w", sessionFile, err)
		}
		pending = append(pending, e)
		if h.Started.IsZero() && !e.Timestamp.IsZero() {
			h.Started = e.Timestamp
		}
		if e.Cwd != "" {
			h.Project, h.GitBranch, h.Version = x.clean(e.Cwd), x.clean(e.GitBranch), x.clean(e.Version)
			break
		}
	}
	return h, pending, nil
}

// strayAgents renders the subagents no tool call pointed at: they still
// belong to the session.
func (x *exporter) strayAgents(ctx context.Context) error {
	var rest []string
	for key, sa := range x.subs {
		if strings.HasPrefix(key, "agent:") && !x.done[sa.AgentID] {
			rest = append(rest, key)
		}
	}
	slices.Sort(rest)
	for _, key := range rest {
		if err := x.subagent(ctx, x.subs[key], "", 0); err != nil {
			return err
		}
	}
	return nil
}

func (o ExportOptions) fold(def int) int {
	switch {
	case o.Fold < 0:
		return 0
	case o.Fold == 0:
		return def
	}
	return o.Fold
}

// exporter turns entries into records for a renderer.
type exporter struct {
	r      renderer
	prices *PriceTable
	seen   map[[2]uint64]*Usage // final usage so far of each response
	tools  map[string]string    // tool_use id → tool name
	subs   map[string]Subagent
	warn   func(Warning)
	// clean strips control sequences and (when redactOn) redacts secrets.
	clean    func(string) string
	redactOn bool
	// Agent calls of the main chain by tool_use id; those no subagent file
	// answers yet, oldest first; CLI 1.0.x inline sidechains being gathered.
	calls     map[string]agentCall
	openCalls []agentCall
	chains    []*inlineChain
	chainOf   map[string]*inlineChain // sidechain uuid → its chain
	done      map[string]bool         // agent ids already exported
	totals    Totals
	stats     ReadStats
	lastID    string // message id of the previous assistant entry
	// compactions counts compact_boundary lines: each stands for an API
	// call the transcript does not have.
	compactions int

	// pending is the last record written with a usage, held back by one
	// record so that the usage moves to the last line of its response.
	pending      *Record
	pendingDepth int
	pendingKey   [2]uint64
}

// account adds one assistant line's usage to the totals. The lines of one
// response share (message id, request id); older CLIs wrote a running output
// count on the earlier ones, so the largest (the last line's) wins, in the
// totals and on the record that carries the response's usage.
func (x *exporter) account(rec *Record, m *Message, requestID string) {
	key := callKey(m.ID, requestID)
	u := *m.Usage
	old, dup := x.seen[key]
	if !dup {
		x.seen[key] = &u
		x.totals.addCall(&call{model: m.Model, usage: u}, x.prices)
	} else if u.OutputTokens > old.OutputTokens {
		x.totals.OutputTokens += u.OutputTokens - old.OutputTokens
		newCost, ok1 := x.prices.Cost(m.Model, u)
		oldCost, ok2 := x.prices.Cost(m.Model, *old)
		if ok1 && ok2 {
			x.totals.CostUSD += newCost - oldCost
		}
		*old = u
	}
	if !dup {
		rec.Usage = x.seen[key]
	} else if x.pending != nil && x.pendingKey == key {
		rec.Usage, x.pending.Usage = x.pending.Usage, nil
	}
	if rec.Usage != nil {
		x.pendingKey = key
	}
}

// emit writes a record, holding back the one that carries a usage until the
// next record shows whether its response goes on.
func (x *exporter) emit(rec *Record, depth int) error {
	if err := x.flush(); err != nil {
		return err
	}
	if rec.Usage != nil {
		x.pending, x.pendingDepth = rec, depth
		return nil
	}
	return x.r.record(rec, depth)
}

// flush writes the held-back record.
func (x *exporter) flush() error {
	p := x.pending
	if p == nil {
		return nil
	}
	x.pending = nil
	return x.r.record(p, x.pendingDepth)
}

func (x *exporter) stream(ctx context.Context, er *EntryReader, depth int) error {
	for n := 0; ; n++ {
		if n&255 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		e, err := er.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := x.entry(ctx, e, depth); err != nil {
			return err
		}
	}
}

func (x *exporter) entry(ctx context.Context, e *Entry, depth int) error {
	if depth == 0 && e.IsSidechain {
		x.addInline(e) // CLI 1.0.x: a subagent's line inside the main file
		return nil
	}
	if depth == 0 {
		if err := x.flushInlineFor(ctx, e, depth); err != nil {
			return err
		}
	}
	rec, ok := x.normalise(e)
	if !ok {
		return nil
	}
	rec = rec.cleaned(x.clean, x.redactOn)
	if err := x.emit(rec, depth); err != nil {
		return err
	}
	if depth == 0 {
		x.noteCalls(rec)
	}
	for _, b := range rec.Blocks {
		if b.Type != "tool_use" || (b.Name != "Agent" && b.Name != "Task") {
			continue
		}
		if sa, ok := x.subs[b.ID]; ok && !x.done[sa.AgentID] {
			if err := x.subagent(ctx, sa, b.ID, depth); err != nil {
				return err
			}
		}
	}
	// A Workflow tool_result names its run (CLI 2.1.332): the run's agents
	// nest after it.
	if e.Type == "user" && slices.ContainsFunc(rec.Blocks, isWorkflowResult) {
		if run := e.ResultWorkflowRunID(); run != "" {
			if err := x.workflow(ctx, run, workflowToolUseID(rec), depth); err != nil {
				return err
			}
		}
	}
	// A tool_result naming an agent the tool call did not (no meta file).
	// Only Agent results are decoded again: other toolUseResults can be MBs.
	if e.Type == "user" && slices.ContainsFunc(rec.Blocks, func(b RBlock) bool {
		return b.Type == "tool_result" && (b.ToolName == "Agent" || b.ToolName == "Task")
	}) {
		if id := e.ResultAgentID(); id != "" && !x.done[id] {
			if sa, ok := x.subs["agent:"+id]; ok {
				return x.subagent(ctx, sa, resultToolUseID(rec), depth)
			}
		}
	}
	return nil
}

// isWorkflowResult reports whether b is the tool_result of a Workflow call.
func isWorkflowResult(b RBlock) bool { return b.Type == "tool_result" && b.ToolName == "Workflow" }

// workflowToolUseID is the id of the Workflow call rec answers.
func workflowToolUseID(rec *Record) string {
	if i := slices.IndexFunc(rec.Blocks, isWorkflowResult); i >= 0 {
		return rec.Blocks[i].ToolUseID
	}
	return ""
}

// workflow nests the agents of a workflow run not yet exported, in the
// order the run started them.
func (x *exporter) workflow(ctx context.Context, run, toolUseID string, depth int) error {
	var agents []Subagent
	for key, sa := range x.subs {
		if sa.RunID == run && strings.HasPrefix(key, "agent:") && !x.done[sa.AgentID] {
			agents = append(agents, sa)
		}
	}
	if len(agents) == 0 {
		return nil
	}
	order := workflowOrder(filepath.Join(filepath.Dir(agents[0].Path), "journal.jsonl"))
	slices.SortFunc(agents, func(a, b Subagent) int {
		ia, oka := order[a.AgentID]
		ib, okb := order[b.AgentID]
		switch {
		case oka && okb && ia != ib:
			return ia - ib
		case oka != okb: // journalled first
			if oka {
				return -1
			}
			return 1
		}
		return strings.Compare(a.AgentID, b.AgentID)
	})
	for _, sa := range agents {
		if err := x.subagent(ctx, sa, toolUseID, depth); err != nil {
			return err
		}
	}
	return nil
}

// workflowOrder reads a workflow run's journal.jsonl: the position of each
// agent's "started" line. A missing or unreadable journal is no order.
func workflowOrder(path string) map[string]int {
	order := make(map[string]int)
	data, err := readSmallFile(path, 8<<20)
	if err != nil {
		return order
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		var l struct {
			Type    string `json:"type"`
			AgentID string `json:"agentId"`
		}
		if json.Unmarshal(line, &l) != nil || l.Type != "started" || l.AgentID == "" {
			continue
		}
		if _, seen := order[l.AgentID]; !seen {
			order[l.AgentID] = len(order)
		}
	}
	return order
}

func (x *exporter) subagent(ctx context.Context, sa Subagent, toolUseID string, depth int) error {
	x.done[sa.AgentID] = true
	if toolUseID == "" {
		toolUseID = sa.Meta.ToolUseID
	}
	rec := &Record{Type: "subagent", AgentID: sa.AgentID, AgentType: x.clean(sa.Meta.AgentType),
		Description: x.clean(sa.Meta.Description), ToolUseID: toolUseID, Sidechain: true}
	if c, ok := x.calls[toolUseID]; ok && rec.Description == "" && rec.AgentType == "" {
		rec.Description, rec.AgentType = x.clean(c.description), x.clean(c.agentType) // no meta file (CLI 2.0.x)
	}
	f, err := openFile(sa.Path)
	if err != nil {
		if x.warn != nil {
			x.warn(warningOf(sa.Path, err))
		}
		return nil
	}
	defer f.Close()
	er := NewEntryReader(f)
	// Peek at the first entry for the subagent's start time.
	first, err := er.Next()
	if err != nil && err != io.EOF {
		return fmt.Errorf("read subagent %s: %w", sa.AgentID, err)
	}
	if first != nil {
		rec.Timestamp = first.Timestamp
	}
	if err := x.flush(); err != nil {
		return err
	}
	if err := x.r.beginSub(rec, depth); err != nil {
		return err
	}
	saved := x.lastID
	x.lastID = ""
	if first != nil {
		if err := x.entry(ctx, first, depth+1); err != nil {
			return err
		}
	}
	if err := x.stream(ctx, er, depth+1); err != nil {
		return fmt.Errorf("subagent %s: %w", sa.AgentID, err)
	}
	x.lastID = saved
	x.stats.Add(er.Stats())
	if err := x.flush(); err != nil {
		return err
	}
	return x.r.endSub(rec, depth)
}

// normalise maps an entry to a record (not yet redacted: renderers redact
// what they print, after folding, which keeps large outputs fast); entries that carry no conversation
// (attachments, queue operations, modes, unknown types) are left out.
func (x *exporter) normalise(e *Entry) (*Record, bool) {
	rec := &Record{
		Type: e.Type, Subtype: e.Subtype, UUID: e.UUID, ParentUUID: e.ParentUUID,
		Timestamp: e.Timestamp, Sidechain: e.IsSidechain, Meta: e.IsMeta,
		CompactSummary: e.IsCompactSummary, APIError: e.IsAPIErrorMessage, RequestID: e.RequestID,
	}
	if rec.ParentUUID == "" {
		rec.ParentUUID = e.LogicalParentUUID
	}
	switch e.Type {
	case "user", "assistant":
		if e.Message == nil {
			return nil, false
		}
	case "system":
		var text string
		if len(e.Content) > 0 && e.Content[0] == '"' {
			_ = json.Unmarshal(e.Content, &text)
		}
		if text == "" && e.Subtype == "" {
			return nil, false
		}
		rec.Blocks = []RBlock{{Type: "text", Text: text}}
		if e.Subtype == "compact_boundary" {
			rec.Compaction = &Compaction{}
			if m := e.CompactMetadata; m != nil {
				rec.Compaction.Trigger, rec.Compaction.PreTokens = m.Trigger, m.PreTokens
			}
			x.compactions++
		}
		return rec, true
	case "summary":
		if e.Summary == "" {
			return nil, false
		}
		rec.Title = e.Summary
		return rec, true
	default:
		if KnownType(e.Type) || len(e.Raw) == 0 {
			return nil, false // attachments, queue operations, modes…
		}
		rec.Unknown, rec.Raw = true, e.Raw
		return rec, true
	}
	m := e.Message
	rec.Model, rec.MessageID = m.Model, m.ID
	if e.Type == "assistant" {
		rec.Continued = m.ID != "" && m.ID == x.lastID
		x.lastID = m.ID
		if m.Usage != nil && !e.IsAPIErrorMessage && m.Model != "<synthetic>" {
			x.account(rec, m, e.RequestID)
		}
	} else {
		x.lastID = ""
	}
	for _, b := range m.Content {
		rb := RBlock{Type: b.Type, ID: b.ID, Name: b.Name, ToolUseID: b.ToolUseID, IsError: b.IsError}
		switch b.Type {
		case "thinking":
			rb.Text = b.Thinking
		case "redacted_thinking":
		case "tool_use", "server_tool_use":
			rb.Input = b.Input
			x.tools[b.ID] = b.Name
		case "tool_result":
			rb.Text = b.ResultText()
			rb.ToolName = x.tools[b.ToolUseID]
		default:
			rb.Text = b.Text
		}
		rec.Blocks = append(rec.Blocks, rb)
	}
	return rec, true
}

// resultToolUseID returns the tool_use id an Agent tool_result answers.
func resultToolUseID(rec *Record) string {
	for _, b := range rec.Blocks {
		if b.Type == "tool_result" && (b.ToolName == "Agent" || b.ToolName == "Task") {
			return b.ToolUseID
		}
	}
	return ""
}

// cleaned returns a copy of r with clean applied to every string a person
// or tool wrote (see cleanText and cleanJSON).
func (r *Record) cleaned(clean func(string) string, redactOn bool) *Record {
	c := *r
	c.Description = clean(r.Description)
	c.Title = clean(r.Title)
	c.Raw = cleanJSON(r.Raw, clean, redactOn)
	c.Blocks = make([]RBlock, len(r.Blocks))
	for i, b := range r.Blocks {
		b.Text = clean(b.Text)
		b.Input = cleanJSON(b.Input, clean, redactOn)
		c.Blocks[i] = b
	}
	return &c
}
