package history

import (
	"context"
	"encoding/json"
	"slices"
)

// CLI 1.0.x kept subagent sidechains inline in the main transcript: lines
// with isSidechain true, each subagent's first line a user prompt without a
// parent, parallel subagents interleaved. The exporter gathers each chain
// and nests it where the session shows it: just before the result of the
// Task call that started it (its prompt is the call's prompt), or at the end.

// inlineChain is one inline sidechain being gathered.
type inlineChain struct {
	root    string // uuid of its first line
	call    agentCall
	entries []*Entry
}

// agentCall is a Task/Agent tool call of the main chain.
type agentCall struct {
	id, prompt, description, agentType string
}

func agentCallOf(b RBlock) agentCall {
	var in struct {
		Prompt       string `json:"prompt"`
		Description  string `json:"description"`
		SubagentType string `json:"subagent_type"`
	}
	_ = json.Unmarshal(b.Input, &in)
	return agentCall{id: b.ID, prompt: in.Prompt, description: in.Description, agentType: in.SubagentType}
}

// noteCalls remembers the Agent calls of a main-chain record that no
// subagent file answers; an inline sidechain may.
func (x *exporter) noteCalls(rec *Record) {
	for _, b := range rec.Blocks {
		if b.Type == "tool_use" && (b.Name == "Agent" || b.Name == "Task") {
			c := agentCallOf(b)
			x.calls[b.ID] = c
			if _, ok := x.subs[b.ID]; !ok {
				x.openCalls = append(x.openCalls, c)
			}
		}
	}
}

// addInline files a sidechain line of the main transcript under its chain.
func (x *exporter) addInline(e *Entry) {
	ch := x.chainOf[e.ParentUUID]
	if ch == nil || ch.entries == nil {
		ch = &inlineChain{root: e.UUID, call: x.matchCall(firstText(e))}
		x.chains = append(x.chains, ch)
	}
	ch.entries = append(ch.entries, e)
	if e.UUID != "" {
		x.chainOf[e.UUID] = ch
	}
}

// matchCall takes the open Agent call whose prompt is the chain's first
// prompt, else the oldest open call.
func (x *exporter) matchCall(prompt string) agentCall {
	if len(x.openCalls) == 0 {
		return agentCall{}
	}
	i := slices.IndexFunc(x.openCalls, func(c agentCall) bool { return c.prompt != "" && c.prompt == prompt })
	if i < 0 {
		i = 0
	}
	c := x.openCalls[i]
	x.openCalls = slices.Delete(x.openCalls, i, i+1)
	return c
}

// flushInlineFor nests the chains answered by the tool results of e, a
// main-chain user entry, before e is written.
func (x *exporter) flushInlineFor(ctx context.Context, e *Entry, depth int) error {
	if len(x.chains) == 0 || e.Type != "user" || e.Message == nil {
		return nil
	}
	for _, b := range e.Message.Content {
		if b.Type != "tool_result" {
			continue
		}
		for _, ch := range x.chains {
			if ch.call.id == b.ToolUseID && ch.entries != nil {
				if err := x.inlineSub(ctx, ch, depth); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// flushInline nests every chain not yet written, oldest first.
func (x *exporter) flushInline(ctx context.Context, depth int) error {
	for _, ch := range x.chains {
		if ch.entries != nil {
			if err := x.inlineSub(ctx, ch, depth); err != nil {
				return err
			}
		}
	}
	x.chains = nil
	return nil
}

func (x *exporter) inlineSub(ctx context.Context, ch *inlineChain, depth int) error {
	rec := &Record{Type: "subagent", AgentID: ch.root, AgentType: x.clean(ch.call.agentType),
		Description: x.clean(ch.call.description), ToolUseID: ch.call.id, Sidechain: true, Timestamp: ch.entries[0].Timestamp}
	entries := ch.entries
	ch.entries = nil // written; later lines of it start a new chain
	if err := x.flush(); err != nil {
		return err
	}
	if err := x.r.beginSub(rec, depth); err != nil {
		return err
	}
	saved := x.lastID
	x.lastID = ""
	for _, e := range entries {
		if err := x.entry(ctx, e, depth+1); err != nil {
			return err
		}
	}
	x.lastID = saved
	if err := x.flush(); err != nil {
		return err
	}
	return x.r.endSub(rec, depth)
}

// firstText returns the first text of an entry's message.
func firstText(e *Entry) string {
	if e.Message == nil {
		return ""
	}
	for _, b := range e.Message.Content {
		if b.Type == "text" {
			return b.Text
		}
	}
	return ""
}
