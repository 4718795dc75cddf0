package history

import (
	"context"
	"fmt"
	"io"
)

// Transcript is a whole session in memory: its entries in file order and its
// subagent transcripts. Use Export or Scan for large histories; they stream.
type Transcript struct {
	Path    string
	Entries []*Entry
	// Subagents maps the Agent tool_use id (or "agent:<agentId>") to the
	// subagent's transcript.
	Subagents map[string]*SubagentTranscript
	Stats     ReadStats
}

// SubagentTranscript is one subagent's sidechain.
type SubagentTranscript struct {
	Subagent
	Entries []*Entry
	Stats   ReadStats
}

// ReadTranscript reads a session and its subagents into memory.
func ReadTranscript(ctx context.Context, path string) (*Transcript, error) {
	entries, stats, err := readEntries(ctx, path)
	if err != nil {
		return nil, err
	}
	t := &Transcript{Path: path, Entries: entries, Stats: stats, Subagents: make(map[string]*SubagentTranscript)}
	for key, sa := range Subagents(path) {
		if st, ok := t.Subagents["agent:"+sa.AgentID]; ok {
			t.Subagents[key] = st
			continue
		}
		es, stats, err := readEntries(ctx, sa.Path)
		if err != nil {
			return nil, err
		}
		st := &SubagentTranscript{Subagent: sa, Entries: es, Stats: stats}
		t.Subagents[key] = st
		t.Subagents["agent:"+sa.AgentID] = st
	}
	return t, nil
}

func readEntries(ctx context.Context, path string) ([]*Entry, ReadStats, error) {
	f, err := openFile(path)
	if err != nil {
		return nil, ReadStats{}, fmt.Errorf("open transcript: %w", err)
	}
	defer f.Close()
	er := NewEntryReader(f)
	var out []*Entry
	for {
		if err := ctx.Err(); err != nil {
			return nil, er.Stats(), err
		}
		e, err := er.Next()
		if err == io.EOF {
			return out, er.Stats(), nil
		}
		if err != nil {
			return nil, er.Stats(), fmt.Errorf("read %s: %w", path, err)
		}
		out = append(out, e)
	}
}

// Thread returns the conversation that ends at the transcript's last message:
// it walks parentUuid back from the leaf, and across a compaction boundary
// (parentUuid null) through logicalParentUuid. Branches abandoned by a rewind
// are not on it. Entries without a uuid (queue operations, modes) never are.
func (t *Transcript) Thread() []*Entry {
	byUUID := make(map[string]*Entry, len(t.Entries))
	var leaf *Entry
	for _, e := range t.Entries {
		if e.UUID == "" {
			continue
		}
		byUUID[e.UUID] = e
		if !e.IsSidechain {
			leaf = e
		}
	}
	var rev []*Entry
	seen := make(map[string]bool)
	for e := leaf; e != nil && !seen[e.UUID]; {
		seen[e.UUID] = true
		rev = append(rev, e)
		parent := e.ParentUUID
		if parent == "" {
			parent = e.LogicalParentUUID
		}
		e = byUUID[parent]
	}
	out := make([]*Entry, len(rev))
	for i, e := range rev {
		out[len(rev)-1-i] = e
	}
	return out
}

// SubagentFor returns the subagent started by the Agent tool_use with id
// toolUseID, or nil.
func (t *Transcript) SubagentFor(toolUseID string) *SubagentTranscript {
	return t.Subagents[toolUseID]
}
