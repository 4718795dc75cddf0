package runner

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/pneuma-cli/pneuma/claude"
	"github.com/pneuma-cli/pneuma/internal/redact"
	"github.com/pneuma-cli/pneuma/internal/text"
	"github.com/pneuma-cli/pneuma/policy"
)

// auditEntry is one line of audit.jsonl: one tool call of the main thread or
// of a subagent, with who decided and how it went.
type auditEntry struct {
	Time      time.Time `json:"time"`
	Tool      string    `json:"tool"`
	ToolUseID string    `json:"tool_use_id"`
	// Agent is the Agent tool call a subagent's call belongs to; empty for
	// the main thread.
	Agent    string `json:"agent,omitempty"`
	Input    string `json:"input"`
	Decision string `json:"decision"`
	Rule     string `json:"rule,omitempty"`
	// Via says where pneuma decided: the PreToolUse hook or a can_use_tool request.
	Via string `json:"via,omitempty"`
	// Edited is true when pneuma allowed the call with an edited input
	// (policy bash_timeout).
	Edited bool `json:"edited,omitempty"`
	// OK is true when the tool ran and returned no error; nil when no result came.
	OK    *bool  `json:"ok"`
	Error string `json:"error,omitempty"`
	// path is the file a file tool was given, for inspect.
	path string
}

// decision is who decided a tool call and how.
type decision struct {
	decision, rule, via string
	edited              bool // allowed with an edited input
}

// audit collects a job's tool calls and pneuma's decisions on them and
// writes audit.jsonl. It is called from the event loop and from the
// process's control handler at once.
type audit struct {
	mu       sync.Mutex
	f        *lazyFile
	pending  map[string]*auditEntry
	order    []string
	verdicts map[string]decision
	calls    int
	denied   map[string]bool
	writeErr error
	closed   bool
	// onCall, when set, is told of each entry as it is written (telemetry);
	// it is called with mu held and must not call back.
	onCall func(auditEntry)
	// onStart, when set, is told of each call as its tool_use is seen, and
	// onText of each piece of the main thread's text (the live view); both
	// are called with mu held and must not call back.
	onStart func(auditEntry)
	onText  func()
	// inspect, when set, is given each tool result's text and the file
	// the tool was given (a sandbox counting its refusals); called with mu
	// held, it must not call back.
	inspect func(path, text string)
}

// newAudit returns a job's audit, written to path from its first entry.
func newAudit(path string) *audit {
	return &audit{f: newLazyFile(path, "audit log"), pending: map[string]*auditEntry{}, verdicts: map[string]decision{}, denied: map[string]bool{}}
}

// written says whether audit.jsonl was created (a job without tool calls
// has none).
func (a *audit) written() bool { return a.f.written() }

// decided records pneuma's verdict on a call before the tool runs.
func (a *audit) decided(toolUseID string, v decision) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.verdicts[toolUseID] = v
	if v.decision == decisionDeny {
		a.denied[toolUseID] = true
	}
	if e, ok := a.pending[toolUseID]; ok {
		e.Decision, e.Rule, e.Via, e.Edited = v.decision, v.rule, v.via, v.edited
	}
}

// event takes the tool_use and tool_result blocks of a stream event.
func (a *audit) event(ev claude.Event) {
	if ev.Message == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, b := range ev.Message.Content {
		switch b.Type {
		case "tool_use":
			if _, seen := a.pending[b.ID]; seen || b.ID == "" {
				continue
			}
			a.calls++
			e := &auditEntry{
				Time: time.Now().UTC(), Tool: b.Name, ToolUseID: b.ID, Agent: ev.ParentToolUseID,
				Input: policy.Summarize(b.Name, b.Input, auditInputMax), Decision: decisionCLI,
			}
			if v, ok := a.verdicts[b.ID]; ok {
				e.Decision, e.Rule, e.Via, e.Edited = v.decision, v.rule, v.via, v.edited
			}
			if a.inspect != nil {
				e.path = inputPath(b.Input)
			}
			a.pending[b.ID] = e
			a.order = append(a.order, b.ID)
			if a.onStart != nil {
				a.onStart(*e)
			}
		case "text":
			if a.onText != nil && ev.Type == "assistant" && ev.ParentToolUseID == "" {
				a.onText()
			}
		case "tool_result":
			e, ok := a.pending[b.ToolUseID]
			if !ok {
				continue
			}
			if v, ok := a.verdicts[b.ToolUseID]; ok {
				e.Decision, e.Rule, e.Via, e.Edited = v.decision, v.rule, v.via, v.edited
			}
			if a.inspect != nil {
				a.inspect(e.path, blockText(b.Content))
			}
			okv := !b.IsError
			e.OK = &okv
			if b.IsError {
				line, _, _ := strings.Cut(blockText(b.Content), "\n")
				e.Error = redact.String(text.Truncate(line, 300))
			}
			a.write(e)
			delete(a.pending, b.ToolUseID)
		}
	}
}

// denial marks a call the CLI's permission system refused (result
// permission_denials), so that it is counted once.
func (a *audit) denial(toolUseID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.denied[toolUseID] = true
}

// counts returns the tool calls seen and how many were refused.
func (a *audit) counts() (calls, denials int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls, len(a.denied)
}

// flush writes the calls that never got a result.
func (a *audit) flush() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, id := range a.order {
		if e, ok := a.pending[id]; ok {
			a.write(e)
			delete(a.pending, id)
		}
	}
	a.order = a.order[:0]
}

func (a *audit) close() error {
	a.flush()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return a.writeErr
	}
	a.closed = true
	if err := a.f.Close(); a.writeErr == nil {
		a.writeErr = err
	}
	return a.writeErr
}

// write appends one entry; the caller holds mu.
func (a *audit) write(e *auditEntry) {
	if a.closed {
		return
	}
	if a.onCall != nil {
		a.onCall(*e)
	}
	data, err := json.Marshal(e)
	if err == nil {
		_, err = a.f.Write(append(data, '\n'))
	}
	if err != nil && a.writeErr == nil {
		a.writeErr = fmt.Errorf("write audit log: %w", err)
	}
}

// inputPath is the file_path or notebook_path of a tool's input ("" for
// none).
func inputPath(raw json.RawMessage) string {
	var in struct {
		FilePath     string `json:"file_path"`
		NotebookPath string `json:"notebook_path"`
	}
	if json.Unmarshal(raw, &in) != nil {
		return ""
	}
	return firstNonEmpty(in.FilePath, in.NotebookPath)
}

// blockText returns the text of a tool_result's content (a string or blocks).
func blockText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) == nil {
		var out string
		for _, b := range blocks {
			out += b.Text
		}
		return out
	}
	return string(raw)
}
