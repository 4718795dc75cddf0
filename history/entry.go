package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"
)

// Entry is one transcript line, decoded tolerantly: unknown types and fields
// are kept in Raw-typed fields or ignored, never an error.
type Entry struct {
	Type              string          `json:"type"`
	Subtype           string          `json:"subtype,omitempty"`
	UUID              string          `json:"uuid,omitempty"`
	ParentUUID        string          `json:"parentUuid,omitempty"`
	LogicalParentUUID string          `json:"logicalParentUuid,omitempty"`
	IsSidechain       bool            `json:"isSidechain,omitempty"`
	IsMeta            bool            `json:"isMeta,omitempty"`
	IsCompactSummary  bool            `json:"isCompactSummary,omitempty"`
	IsAPIErrorMessage bool            `json:"isApiErrorMessage,omitempty"`
	AgentID           string          `json:"agentId,omitempty"`
	SessionID         string          `json:"sessionId,omitempty"`
	Cwd               string          `json:"cwd,omitempty"`
	GitBranch         string          `json:"gitBranch,omitempty"`
	Version           string          `json:"version,omitempty"`
	Timestamp         time.Time       `json:"timestamp"`
	RequestID         string          `json:"requestId,omitempty"`
	PromptID          string          `json:"promptId,omitempty"`
	Message           *Message        `json:"message,omitempty"`
	ToolUseResult     json.RawMessage `json:"toolUseResult,omitempty"`
	Content           json.RawMessage `json:"content,omitempty"`
	Operation         string          `json:"operation,omitempty"`
	LastPrompt        string          `json:"lastPrompt,omitempty"`
	Attachment        json.RawMessage `json:"attachment,omitempty"`
	Mode              string          `json:"mode,omitempty"`
	// CompactMetadata is a compact_boundary's: what started the compaction
	// and how large the conversation was.
	CompactMetadata *CompactMetadata `json:"compactMetadata,omitempty"`
	// Summary is a summary entry's text: the session's title.
	Summary string `json:"summary,omitempty"`
	// Raw is the whole line, kept only for entry types this reader does
	// not know (see KnownType), so that exports can pass them on.
	Raw json.RawMessage `json:"-"`
	// Line is the entry's 1-based line number in its file.
	Line int `json:"-"`
	// Repaired is true when a known field had an unexpected shape and only
	// the envelope (type, uuid, timestamp) could be decoded.
	Repaired bool `json:"-"`
}

// CompactMetadata is what the CLI records about a compaction on its
// compact_boundary line.
type CompactMetadata struct {
	Trigger   string `json:"trigger,omitempty"` // "manual" (/compact) or "auto"
	PreTokens int64  `json:"preTokens,omitempty"`
}

// Message is the API message inside user and assistant entries.
type Message struct {
	ID         string  `json:"id,omitempty"`
	Role       string  `json:"role,omitempty"`
	Model      string  `json:"model,omitempty"`
	Content    Content `json:"content"`
	StopReason string  `json:"stop_reason,omitempty"`
	Usage      *Usage  `json:"usage,omitempty"`
}

// Content is a message's content: a plain string is one text block.
type Content []Block

// Unreadable is the type of a block whose JSON has an unexpected shape (a
// number where a block belongs, a block whose fields have the wrong types);
// its Text holds the raw JSON, so that nothing is lost.
const Unreadable = "unreadable"

// UnmarshalJSON accepts a string, an array of blocks, or one block object
// (seen in hand-edited and third-party transcripts). Parts of other shapes
// become Unreadable blocks instead of failing the whole entry.
func (c *Content) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0 || b[0] == 'n':
		*c = nil
	case b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*c = Content{{Type: "text", Text: s}}
	case b[0] == '[':
		var raws []json.RawMessage
		if err := json.Unmarshal(b, &raws); err != nil {
			return err
		}
		blocks := make(Content, len(raws))
		for i, r := range raws {
			blocks[i] = blockOf(r)
		}
		*c = blocks
	default:
		*c = Content{blockOf(b)}
	}
	return nil
}

// blockOf decodes one block, or keeps it as an Unreadable block.
func blockOf(raw json.RawMessage) Block {
	var blk Block
	if err := json.Unmarshal(raw, &blk); err != nil || blk.Type == "" {
		return Block{Type: Unreadable, Text: string(raw)}
	}
	return blk
}

// Repaired reports whether the message holds blocks of unexpected shapes.
func (m *Message) Repaired() bool {
	for _, b := range m.Content {
		if b.Type == Unreadable {
			return true
		}
	}
	return false
}

// Block is one content block (text, thinking, tool_use, tool_result, image…).
type Block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	Thinking  string          `json:"thinking,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

// ResultText returns a tool_result block's content as text: a string, or the
// text blocks of an array joined by newlines (images are named, not inlined).
func (b Block) ResultText() string {
	c := bytes.TrimSpace(b.Content)
	if len(c) == 0 {
		return ""
	}
	if c[0] == '"' {
		var s string
		_ = json.Unmarshal(c, &s)
		return s
	}
	var parts []Block
	if json.Unmarshal(c, &parts) != nil {
		return string(c)
	}
	var sb strings.Builder
	for i, p := range parts {
		if i > 0 {
			sb.WriteByte('\n')
		}
		switch p.Type {
		case "text":
			sb.WriteString(p.Text)
		default:
			fmt.Fprintf(&sb, "[%s]", p.Type)
		}
	}
	return sb.String()
}

// IsAgentCall reports whether a tool_use block starts a subagent ("Agent" on
// the wire, "Task" in older CLIs and init.tools; pitfall 23).
func (b Block) IsAgentCall() bool {
	return b.Type == "tool_use" && (b.Name == "Agent" || b.Name == "Task")
}

// ResultAgentID returns toolUseResult.agentId of an Agent tool_result entry.
func (e *Entry) ResultAgentID() string {
	if len(e.ToolUseResult) == 0 || e.ToolUseResult[0] != '{' {
		return ""
	}
	var r struct {
		AgentID string `json:"agentId"`
	}
	_ = json.Unmarshal(e.ToolUseResult, &r)
	return r.AgentID
}

// ResultWorkflowRunID returns toolUseResult.runId of a Workflow tool_result
// entry (CLI 2.1.332): the run whose agents are under
// <sid>/subagents/workflows/<runId>/.
func (e *Entry) ResultWorkflowRunID() string {
	if len(e.ToolUseResult) == 0 || e.ToolUseResult[0] != '{' {
		return ""
	}
	var r struct {
		RunID string `json:"runId"`
	}
	_ = json.Unmarshal(e.ToolUseResult, &r)
	return r.RunID
}

// EntryReader reads a transcript one entry at a time with bounded memory.
type EntryReader struct {
	lr   *LineReader
	line int
}

// NewEntryReader returns a reader of the transcript r.
func NewEntryReader(r io.Reader) *EntryReader {
	return &EntryReader{lr: NewLineReader(r, 0)}
}

// Next returns the next entry. Malformed lines are counted in Stats and
// skipped; it returns io.EOF at the end.
func (er *EntryReader) Next() (*Entry, error) {
	for {
		line, err := er.lr.Next()
		if err != nil {
			return nil, err
		}
		er.line++
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		e, err := ParseEntry(line)
		if err != nil {
			er.lr.Stats.Malformed++
			continue
		}
		if e.Repaired || (e.Message != nil && e.Message.Repaired()) {
			er.lr.Stats.Repaired++
		}
		e.Line = er.line
		if !KnownType(e.Type) {
			e.Raw = bytes.Clone(line)
		}
		return e, nil
	}
}

// Stats returns what the reader skipped so far.
func (er *EntryReader) Stats() ReadStats { return er.lr.Stats }

// ParseEntry decodes one transcript line. A line whose known fields have
// unexpected JSON types is still an error; unknown fields and types are not.
func ParseEntry(line []byte) (*Entry, error) {
	var e Entry
	line, tur := cutToolUseResult(line)
	if err := json.Unmarshal(line, &e); err != nil {
		// Retry with only the envelope: a known field of an unexpected shape
		// (say, message.content as an object) must not hide the entry.
		var env struct {
			Type      string    `json:"type"`
			UUID      string    `json:"uuid"`
			Timestamp time.Time `json:"timestamp"`
		}
		if json.Unmarshal(line, &env) != nil || env.Type == "" {
			return nil, fmt.Errorf("parse transcript line: %w", err)
		}
		// Keep what is left of a message as one unreadable block.
		e := &Entry{Type: env.Type, UUID: env.UUID, Timestamp: env.Timestamp, Repaired: true}
		if env.Type == "user" || env.Type == "assistant" {
			e.Message = &Message{Content: Content{{Type: Unreadable, Text: string(line)}}}
		}
		return e, nil
	}
	if tur != nil {
		e.ToolUseResult = tur
	}
	return &e, nil
}

var toolUseResultKey = []byte(`"toolUseResult"`)

// cutToolUseResult takes a large toolUseResult out of a line before it is
// decoded: it often repeats a multi-MB tool output that the message content
// already holds, and encoding/json would validate and skip it twice. It
// returns the line without it (a copy) and the value (a copy).
func cutToolUseResult(line []byte) ([]byte, json.RawMessage) {
	if len(line) < 64<<10 || !bytes.Contains(line, toolUseResultKey) {
		return line, nil
	}
	i := skipWS(line, 0)
	if i >= len(line) || line[i] != '{' {
		return line, nil
	}
	ks, vs, ve := -1, -1, -1
	prevEnd := -1 // end of the value before the key, when there is one
	last := -1
	_, err := scanObject(line, i, func(k []byte, s, e int) error {
		if ks < 0 && string(k) == "toolUseResult" {
			ks = bytes.LastIndex(line[:s], toolUseResultKey)
			vs, ve, prevEnd = s, e, last
		}
		last = e
		return nil
	})
	if err != nil || ks < 0 {
		return line, nil
	}
	var from, to int
	if prevEnd >= 0 {
		from, to = prevEnd, ve // drop ',"toolUseResult":value'
	} else {
		from, to = ks, skipWS(line, ve) // first key: drop it and its comma
		if to < len(line) && line[to] == ',' {
			to++
		}
	}
	out := make([]byte, 0, len(line)-(to-from))
	out = append(append(out, line[:from]...), line[to:]...)
	return out, bytes.Clone(line[vs:ve])
}

// knownTypes are the entry types of the CLI's own reader (reference 4.3):
// 2.1.197's, and those 2.1.332's reader adds (its bookkeeping of each API
// request, api-request*, the session's running cost, cost-state, and other
// state that carries no conversation).
var knownTypes = map[string]bool{}

func init() {
	for _, t := range strings.Fields(`user assistant attachment system progress summary custom-title
		ended-by-model ai-title last-prompt tag relocated agent-name agent-color agent-setting pr-link
		frame-link bridge-session file-history-snapshot attribution-snapshot speculation-accept mode
		permission-mode isolation-latch worktree-state queue-operation marble-origami-commit
		marble-origami-snapshot marble-origami-reset content-replacement fork-context-ref
		api-request api-request-resumed api-request-shape api-request-blob observer-ref continued-in
		resume-head-vouch file-history-delta session-owner dev-mods atis-latch tools-used
		data-flow-records data-flow-incomplete derived-from history-suppression cost-state memory-mode
		artifact-comment-monitor artifact-autoreact-ledger repl-mode hybrid-organization host-row`) {
		knownTypes[t] = true
	}
}

// KnownType reports whether the CLI's reader knows entry type t. Exports
// keep entries of other types (a newer CLI's) instead of dropping them.
func KnownType(t string) bool { return knownTypes[t] }

// SubagentMeta is <sid>/subagents/agent-<id>.meta.json.
type SubagentMeta struct {
	AgentType   string `json:"agentType"`
	Description string `json:"description"`
	ToolUseID   string `json:"toolUseId"`
	SpawnDepth  int    `json:"spawnDepth"`
}

// Subagent is one subagent transcript of a session.
type Subagent struct {
	AgentID string
	Path    string
	Meta    SubagentMeta
	// RunID is the workflow run that started the agent (its transcript is
	// <sid>/subagents/workflows/<RunID>/agent-<id>.jsonl); "" otherwise.
	RunID string
}

// workflowRunOf returns the run id of a workflow agent's transcript path,
// or "".
func workflowRunOf(path string) string {
	run := filepath.Dir(path)
	if filepath.Base(filepath.Dir(run)) != "workflows" || filepath.Base(filepath.Dir(filepath.Dir(run))) != "subagents" {
		return ""
	}
	return filepath.Base(run)
}

// Subagents lists a transcript's subagents with their meta files, keyed by
// the Agent tool_use id that started them (or "agent:<id>" when the meta file
// is missing; the tool_result's agentId links those).
func Subagents(sessionFile string) map[string]Subagent { return subagentsOf(sessionFile, nil) }

// subagentsOf is Subagents, reporting unreadable agent files to warn.
func subagentsOf(sessionFile string, warn func(Warning)) map[string]Subagent {
	out := make(map[string]Subagent)
	for _, p := range (SessionFile{Path: sessionFile}).SubagentFiles(warn) {
		id := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), "agent-"), ".jsonl")
		sa := Subagent{AgentID: id, Path: p, RunID: workflowRunOf(p)}
		if data, err := readSmallFile(strings.TrimSuffix(p, ".jsonl")+".meta.json", 1<<20); err == nil {
			_ = json.Unmarshal(data, &sa.Meta)
		}
		if sa.Meta.ToolUseID != "" {
			out[sa.Meta.ToolUseID] = sa
		}
		out["agent:"+id] = sa
	}
	return out
}
