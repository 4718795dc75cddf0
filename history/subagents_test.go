package history

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// obj is a transcript line under construction.
type obj = map[string]any

func jsonl(t *testing.T, path string, lines ...obj) {
	t.Helper()
	var b bytes.Buffer
	for _, l := range lines {
		data, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
		b.WriteByte('\n')
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func userLine(sid, uuid, parent string, content any, extra obj) obj {
	o := obj{"type": "user", "sessionId": sid, "uuid": uuid, "cwd": "/home/me/gen", "timestamp": "2026-11-20T10:00:00Z",
		"message": obj{"role": "user", "content": content}}
	if parent != "" {
		o["parentUuid"] = parent
	} else {
		o["parentUuid"] = nil
	}
	for k, v := range extra {
		o[k] = v
	}
	return o
}

func asstLine(sid, uuid, parent, msgID string, out int, content []obj, extra obj) obj {
	o := obj{"type": "assistant", "sessionId": sid, "uuid": uuid, "parentUuid": parent, "cwd": "/home/me/gen",
		"timestamp": "2026-11-20T10:00:01Z", "requestId": "req_" + msgID,
		"message": obj{"id": msgID, "role": "assistant", "model": "claude-sonnet-4-5-20250929", "content": content,
			"usage": obj{"input_tokens": 10, "output_tokens": out}}}
	for k, v := range extra {
		o[k] = v
	}
	return o
}

func textB(s string) obj { return obj{"type": "text", "text": s} }
func taskB(id, desc, prompt string) obj {
	return obj{"type": "tool_use", "id": id, "name": "Task", "input": obj{"description": desc, "prompt": prompt, "subagent_type": "general-purpose"}}
}
func resultB(id, text string) []obj {
	return []obj{{"type": "tool_result", "tool_use_id": id, "content": text}}
}

func exportString(t *testing.T, path string, f Format) string {
	t.Helper()
	var buf bytes.Buffer
	if err := Export(context.Background(), &buf, path, ExportOptions{Format: f}); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestTopLevelAgentFilesFoldIntoTheirSession(t *testing.T) {
	ctx := context.Background()
	cfg := t.TempDir()
	proj := filepath.Join(cfg, "projects", "-home-me-gen")
	const sid = "p2000000-0000-4000-8000-000000000000"
	main := filepath.Join(proj, sid+".jsonl")
	side := obj{"isSidechain": true, "agentId": "abc"}
	jsonl(t, main,
		userLine(sid, "u1", "", "Inspect the repo.", nil),
		asstLine(sid, "a1", "u1", "msg_p1", 20, []obj{taskB("toolu_T", "Look around", "List the files.")}, nil),
		userLine(sid, "u2", "a1", resultB("toolu_T", "Two files."), obj{"toolUseResult": obj{"agentId": "abc", "content": []obj{textB("Two files.")}}}),
		asstLine(sid, "a2", "u2", "msg_p2", 5, []obj{textB("The repo has two files.")}, nil),
	)
	jsonl(t, filepath.Join(proj, "agent-abc.jsonl"),
		userLine(sid, "s1", "", "List the files.", side),
		asstLine(sid, "s2", "s1", "msg_s1", 33, []obj{textB("SUBAGENT-SAYS-TWO")}, side),
	)

	c, err := Scan(ctx, cfg, ScanOptions{Summary: true})
	if err != nil {
		t.Fatal(err)
	}
	if ss := c.Sessions(); len(ss) != 1 || ss[0].ID != sid || ss[0].Subagents != 1 || ss[0].OutputTokens != 58 || ss[0].Prompts != 1 {
		t.Fatalf("sessions = %+v, want %s alone with 1 subagent and 58 output tokens", ss, sid)
	}
	if tu, err := TranscriptUsage(ctx, main, nil); err != nil || tu.OutputTokens != 58 || tu.APICalls != 3 {
		t.Errorf("TranscriptUsage = %+v, %v", tu, err)
	}
	md := exportString(t, main, FormatMarkdown)
	i, j, k := strings.Index(md, "Look around"), strings.Index(md, "SUBAGENT-SAYS-TWO"), strings.Index(md, "The repo has two files.")
	if i < 0 || j < i || k < j {
		t.Errorf("the subagent is not nested between its call and the answer:\n%s", md)
	}
	dst := t.TempDir()
	if err := Archive(ctx, cfg, []string{sid}, dst); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dst, "projects", "-home-me-gen", "agent-abc.jsonl")); err != nil {
		t.Errorf("archive lacks the agent file: %v", err)
	}
}

func TestInlineSidechainsNestUnderTheirCalls(t *testing.T) {
	cfg := t.TempDir()
	const sid = "p1000000-0000-4000-8000-000000000000"
	main := filepath.Join(cfg, "projects", "-home-me-gen", sid+".jsonl")
	side := obj{"isSidechain": true}
	jsonl(t, main,
		userLine(sid, "u1", "", "Do two things.", nil),
		asstLine(sid, "a1", "u1", "msg_1", 40, []obj{taskB("toolu_A", "Thing A", "Do A."), taskB("toolu_B", "Thing B", "Do B.")}, nil),
		// Parallel sidechains, interleaved; B starts first.
		userLine(sid, "b1", "", "Do B.", side),
		userLine(sid, "x1", "", "Do A.", side),
		asstLine(sid, "b2", "b1", "msg_b", 7, []obj{textB("B-WORK")}, side),
		asstLine(sid, "x2", "x1", "msg_a", 8, []obj{textB("A-WORK")}, side),
		userLine(sid, "u2", "a1", resultB("toolu_A", "A-RESULT"), nil),
		userLine(sid, "u3", "u2", resultB("toolu_B", "B-RESULT"), nil),
		asstLine(sid, "a2", "u3", "msg_2", 3, []obj{textB("Both done.")}, nil),
	)
	md := exportString(t, main, FormatMarkdown)
	order := []string{"Thing A", "A-WORK", "A-RESULT", "B-WORK", "B-RESULT", "Both done."}
	last := -1
	for _, s := range order {
		i := strings.Index(md, s)
		if i <= last {
			t.Fatalf("%q out of order (want %v):\n%s", s, order, md)
		}
		last = i
	}
	// The subagent prompts are not the person's prompts.
	var doc struct {
		Entries []Record `json:"entries"`
	}
	if err := json.Unmarshal([]byte(exportString(t, main, FormatJSON)), &doc); err != nil {
		t.Fatal(err)
	}
	var subs []string
	for _, r := range doc.Entries {
		if r.Sidechain && r.Type != "subagent" {
			t.Errorf("sidechain line at the top level: %+v", r)
		}
		if r.Type == "subagent" {
			subs = append(subs, r.ToolUseID+"/"+r.Description)
		}
	}
	if !slices.Equal(subs, []string{"toolu_A/Thing A", "toolu_B/Thing B"}) {
		t.Errorf("subagents = %v", subs)
	}
	c, err := Scan(context.Background(), cfg, ScanOptions{Summary: true})
	if err != nil {
		t.Fatal(err)
	}
	if s := c.Sessions()[0]; s.Prompts != 1 || s.Subagents != 2 || s.OutputTokens != 58 || s.FirstPrompt != "Do two things." {
		t.Errorf("summary = %+v", s)
	}
}

func TestOrphanSubagentsCountUnderTheirSession(t *testing.T) {
	cfg := t.TempDir()
	const sid = "o0000000-0000-4000-8000-000000000000"
	proj := filepath.Join(cfg, "projects", "-home-me-gen")
	side := obj{"isSidechain": true, "agentId": "z1"}
	jsonl(t, filepath.Join(proj, sid, "subagents", "agent-z1.jsonl"),
		userLine(sid, "s1", "", "Go.", side),
		asstLine(sid, "s2", "s1", "msg_z", 12, []obj{textB("ok")}, side))
	c, err := Scan(context.Background(), cfg, ScanOptions{Summary: true})
	if err != nil {
		t.Fatal(err)
	}
	ss := c.Sessions()
	if len(ss) != 1 || ss[0].ID != sid || ss[0].OutputTokens != 12 || !slices.Contains(ss[0].Flags, FlagOrphan) || ss[0].Project != "/home/me/gen" {
		t.Fatalf("sessions = %+v", ss)
	}
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0].Problem, "main transcript missing") {
		t.Errorf("warnings = %v", c.Warnings)
	}
}

// TestWorkflowAgentsFoldIntoTheirSession: CLI 2.1.332's Workflow tool keeps
// the agents of a run under <sid>/subagents/workflows/<runId>/; they count
// (and are priced) under the session, nest after the Workflow call's result
// in the order the run's journal started them, and the task notification
// the CLI sends when the run ends is not a prompt.
func TestWorkflowAgentsFoldIntoTheirSession(t *testing.T) {
	ctx := context.Background()
	cfg := t.TempDir()
	proj := filepath.Join(cfg, "projects", "-home-me-gen")
	const sid, run = "w1000000-0000-4000-8000-000000000000", "wf_0123abcd-7f1"
	main := filepath.Join(proj, sid+".jsonl")
	wf := obj{"type": "tool_use", "id": "toolu_W", "name": "Workflow", "input": obj{"script": "export const meta = {}"}}
	jsonl(t, main,
		userLine(sid, "u1", "", "Run the workflow.", nil),
		asstLine(sid, "a1", "u1", "msg_w1", 20, []obj{wf}, nil),
		userLine(sid, "u2", "a1", resultB("toolu_W", "Workflow launched in background."),
			obj{"toolUseResult": obj{"status": "async_launched", "taskType": "local_workflow", "runId": run}}),
		asstLine(sid, "a2", "u2", "msg_w2", 5, []obj{textB("Launched.")}, nil),
		userLine(sid, "u3", "a2", "<task-notification>\n<task-id>t1</task-id>\n<status>completed</status>\n</task-notification>",
			obj{"origin": obj{"kind": "task-notification"}}),
		asstLine(sid, "a3", "u3", "msg_w3", 7, []obj{textB("WORKFLOW-DONE")}, nil),
	)
	dir := filepath.Join(proj, sid, "subagents", "workflows", run)
	side := func(id string) obj { return obj{"isSidechain": true, "agentId": id} }
	for id, text := range map[string]string{"a0000000000000001": "AGENT-ONE-WORK", "a0000000000000002": "AGENT-TWO-WORK"} {
		jsonl(t, filepath.Join(dir, "agent-"+id+".jsonl"),
			userLine(sid, "s1"+id, "", "Do "+text, side(id)),
			asstLine(sid, "s2"+id, "s1"+id, "msg_"+id, 100, []obj{textB(text)}, side(id)))
		if err := os.WriteFile(filepath.Join(dir, "agent-"+id+".meta.json"), []byte(`{"agentType":"workflow-subagent","description":"`+text+`"}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The journal started agent 2 first.
	jsonl(t, filepath.Join(dir, "journal.jsonl"), obj{"type": "launched"},
		obj{"type": "started", "agentId": "a0000000000000002"}, obj{"type": "started", "agentId": "a0000000000000001"})

	c, err := Scan(ctx, cfg, ScanOptions{Summary: true})
	if err != nil {
		t.Fatal(err)
	}
	if ss := c.Sessions(); len(ss) != 1 || ss[0].Subagents != 2 || ss[0].OutputTokens != 232 || ss[0].Prompts != 1 || ss[0].APICalls != 5 {
		t.Fatalf("sessions = %+v, want one with 2 subagents, 5 calls, 232 output tokens, 1 prompt", ss)
	}
	if rows := c.UsageBy(BySession, time.UTC); len(rows) != 1 || rows[0].APICalls != 5 || rows[0].CostUSD <= 0 || rows[0].Unpriced {
		t.Errorf("usage rows %+v, want the 5 calls priced", rows)
	}
	if tu, err := TranscriptUsage(ctx, main, nil); err != nil || tu.OutputTokens != 232 || tu.APICalls != 5 {
		t.Errorf("TranscriptUsage = %+v, %v", tu, err)
	}
	md := exportString(t, main, FormatMarkdown)
	order := []string{"Workflow launched in background.", "AGENT-TWO-WORK", "AGENT-ONE-WORK", "Launched.", "WORKFLOW-DONE"}
	last := -1
	for _, s := range order {
		i := strings.Index(md, s)
		if i <= last {
			t.Fatalf("%q out of order (want %v):\n%s", s, order, md)
		}
		last = i
	}
	var doc struct {
		Entries []Record `json:"entries"`
	}
	if err := json.Unmarshal([]byte(exportString(t, main, FormatJSON)), &doc); err != nil {
		t.Fatal(err)
	}
	var subs []string
	for _, r := range doc.Entries {
		if r.Type == "subagent" {
			subs = append(subs, r.ToolUseID+"/"+r.AgentType+"/"+r.Description)
		}
	}
	if want := []string{"toolu_W/workflow-subagent/AGENT-TWO-WORK", "toolu_W/workflow-subagent/AGENT-ONE-WORK"}; !slices.Equal(subs, want) {
		t.Errorf("subagents = %v, want %v", subs, want)
	}
	dst := t.TempDir()
	if err := Archive(ctx, cfg, []string{sid}, dst); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dst, "projects", "-home-me-gen", sid, "subagents", "workflows", run, "agent-a0000000000000001.jsonl")); err != nil {
		t.Errorf("archive lacks the workflow agent: %v", err)
	}
}
