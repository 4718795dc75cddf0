package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// runJobs are the three jobs of the scripted run, with what each costs.
var runJobs = []struct {
	name  string
	cost  float64
	in    int64
	out   int64
	turns int
}{
	{"lint", 0.0123, 1200, 340, 3},
	{"tests", 0.0456, 5400, 980, 7},
	{"docs", 0.0071, 800, 120, 2},
}

// playRun emits the events of a three-job run, step apart, and keeps the
// report current as a server would.
func (s *standIn) playRun(id string, step time.Duration) {
	key := "runs/" + id
	s.emit(key, map[string]any{"type": "run_started", "run_id": id, "jobs": len(runJobs)})
	var jobs []any
	totals := map[string]any{"jobs": len(runJobs), "succeeded": 0, "cost_usd": 0.0, "input_tokens": int64(0), "output_tokens": int64(0),
		"cache_read_input_tokens": 0, "cache_creation_input_tokens": 0, "num_turns": 0, "duration_ms": 0}
	for i, j := range runJobs {
		time.Sleep(step)
		branch := fmt.Sprintf("pneuma/%s/%s", id, j.name)
		s.emit(key, map[string]any{"type": "job_started", "run_id": id, "job": j.name, "attempt": 1, "branch": branch})
		time.Sleep(step)
		job := map[string]any{"name": j.name, "position": i, "status": "succeeded", "cost_usd": j.cost,
			"usage": map[string]any{"input_tokens": j.in, "output_tokens": j.out}, "num_turns": j.turns,
			"duration_ms": 1500 + 700*i, "files_changed": i + 1, "insertions": 10 * (i + 1), "deletions": i, "branch": branch}
		jobs = append(jobs, job)
		totals["succeeded"] = totals["succeeded"].(int) + 1
		totals["cost_usd"] = totals["cost_usd"].(float64) + j.cost
		totals["input_tokens"] = totals["input_tokens"].(int64) + j.in
		totals["output_tokens"] = totals["output_tokens"].(int64) + j.out
		totals["num_turns"] = totals["num_turns"].(int) + j.turns
		totals["duration_ms"] = totals["duration_ms"].(int) + 1500 + 700*i
		s.setReport(id, map[string]any{"schema": "pneuma.report/v1", "run_id": id, "status": "running", "jobs": jobs, "totals": totals})
		s.emit(key, map[string]any{"type": "job_finished", "run_id": id, "job": j.name, "result": job})
	}
	rep := map[string]any{"schema": "pneuma.report/v1", "run_id": id, "status": "succeeded", "jobs": jobs, "totals": totals,
		"started_at": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)}
	s.setReport(id, rep)
	s.emit(key, map[string]any{"type": "run_finished", "run_id": id, "report": rep})
}

func (s *standIn) setReport(id string, rep map[string]any) {
	// A copy through JSON: the report escapes to handlers and events.
	b, _ := json.Marshal(rep)
	var c map[string]any
	json.Unmarshal(b, &c)
	s.mu.Lock()
	s.reports[id] = c
	s.mu.Unlock()
}

// report returns a run's report as the server has it.
func (s *standIn) report(id string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reports[id]
}

const editInput = `{"file_path":"/repo/main.go","old_string":"// old comment\nfunc main() {}","new_string":"// new comment\nfunc main() {}"}`

// sessionsAPI serves sessions and history.
func (s *standIn) sessionsAPI(w http.ResponseWriter, r *http.Request, p []string) {
	switch {
	case r.Method == "POST" && r.URL.Path == "/api/sessions":
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		s.mu.Lock()
		id := fmt.Sprintf("s%d", len(s.sessions)+1)
		sess := map[string]any{"id": id, "name": body["name"], "status": "idle", "repo": body["repo"], "model": "claude-sonnet-4-5",
			"branch": "pneuma/session/" + id, "created_at": time.Now().UTC().Format(time.RFC3339), "num_turns": 0, "cost_usd": 0,
			"permission_prompt": body["permission_prompt"]}
		s.sessions[id] = sess
		s.mu.Unlock()
		s.emit("sessions/"+id, map[string]any{"type": "session_init", "model": "claude-sonnet-4-5"})
		writeJSON(w, 201, sess)
	case r.Method == "GET" && r.URL.Path == "/api/sessions":
		s.mu.Lock()
		var list []any
		for _, v := range s.sessions {
			list = append(list, v)
		}
		b, _ := json.Marshal(list)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	case r.Method == "GET" && len(p) == 2 && p[0] == "sessions":
		s.mu.Lock()
		b, _ := json.Marshal(s.sessions[p[1]])
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	case r.Method == "GET" && r.URL.Path == "/api/history/sessions":
		writeJSON(w, 200, []any{
			map[string]any{"session_id": "h-1", "project": "/work/pneuma", "started": "2025-06-01T10:00:00Z", "last_activity": "2025-06-01T10:20:00Z",
				"first_prompt": "Fix the flaky test " + xss, "prompts": 4, "input_tokens": 12000, "output_tokens": 3400, "cost_usd": 0.42, "api_calls": 12},
			map[string]any{"session_id": "h-2", "project": "/work/other", "started": "2025-06-02T09:00:00Z", "last_activity": "2025-06-02T09:05:00Z",
				"first_prompt": "Write the README", "prompts": 1, "input_tokens": 2000, "output_tokens": 800, "cost_usd": 0.05, "api_calls": 2},
		})
	case r.Method == "GET" && r.URL.Path == "/api/history/usage":
		var rows []any
		for i := range 14 {
			rows = append(rows, map[string]any{"date": fmt.Sprintf("2025-06-%02d", i+1), "input_tokens": 1000 * i, "output_tokens": 300 * i,
				"cost_usd": 0.05 * float64(i%5+1), "api_calls": i + 1})
		}
		writeJSON(w, 200, rows)
	case r.Method == "GET" && len(p) == 3 && p[0] == "history" && p[1] == "sessions":
		transcript(w)
	default:
		http.NotFound(w, r)
	}
}

// sessionMessage answers what a session's client sends: a user message
// starts a turn that streams text and asks permission to edit; allowing it
// runs the tool (whose output carries the XSS payload) and ends the turn.
func (s *standIn) sessionMessage(key string, m map[string]any) {
	switch m["type"] {
	case "user_message":
		go s.playTurn(key, m)
	case "permission_response":
		go s.playAllowed(key, m)
	}
}

func (s *standIn) playTurn(key string, m map[string]any) {
	step := 120 * time.Millisecond
	s.emit(key, map[string]any{"type": "user_message", "content": m["content"], "client_msg_id": m["client_msg_id"]})
	s.emit(key, map[string]any{"type": "status_change", "status": "running"})
	s.emit(key, map[string]any{"type": "stream_event", "event": map[string]any{"type": "message_start"}})
	s.emit(key, map[string]any{"type": "stream_event", "event": map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}}})
	for _, part := range []string{"Let me ", "look at ", "the file."} {
		time.Sleep(step)
		s.emit(key, map[string]any{"type": "stream_event", "event": map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": part}}})
	}
	time.Sleep(step)
	s.emit(key, map[string]any{"type": "stream_event", "event": map[string]any{"type": "content_block_stop", "index": 0}})
	s.emit(key, map[string]any{"type": "assistant", "message": map[string]any{"content": []any{map[string]any{"type": "text", "text": "Let me look at the file."}}}})
	var input map[string]any
	json.Unmarshal([]byte(editInput), &input)
	s.emit(key, map[string]any{"type": "assistant", "message": map[string]any{"content": []any{map[string]any{"type": "tool_use", "id": "tu1", "name": "Edit", "input": input}}}})
	s.emit(key, map[string]any{"type": "permission_request", "request_id": "p1", "tool_name": "Edit", "input": input, "tool_use_id": "tu1"})
	s.emit(key, map[string]any{"type": "status_change", "status": "waiting_permission"})
}

func (s *standIn) playAllowed(key string, m map[string]any) {
	s.emit(key, map[string]any{"type": "permission_resolved", "request_id": m["request_id"], "behavior": m["behavior"], "by": "client"})
	s.emit(key, map[string]any{"type": "status_change", "status": "running"})
	s.emit(key, map[string]any{"type": "user", "message": map[string]any{"content": []any{
		map[string]any{"type": "tool_result", "tool_use_id": "tu1", "content": "The file was edited. " + xss}}}})
	s.emit(key, map[string]any{"type": "content_update", "files": []any{map[string]any{"path": "main.go", "action": "modified"}}})
	s.emit(key, map[string]any{"type": "assistant", "message": map[string]any{"content": []any{map[string]any{"type": "text", "text": "Done: the comment is updated."}}}})
	s.emit(key, map[string]any{"type": "result", "subtype": "success", "is_error": false, "num_turns": 2, "total_cost_usd": 0.0321, "duration_ms": 4200})
	s.emit(key, map[string]any{"type": "status_change", "status": "idle"})
}
