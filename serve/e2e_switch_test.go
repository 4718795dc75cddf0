package serve_test

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakeapi"
)

// TestE2ESwitchModelAndMode: a client switches a running session's model
// and permission mode over HTTP and the WebSocket; the real CLI
// acknowledges each (set_permission_mode names the mode in effect), its
// next API call uses the new model, a mode the server's policy refuses
// never reaches it, and every client sees the switch as an event.
func TestE2ESwitchModelAndMode(t *testing.T) {
	repo := claudetest.GitRepo(t)
	var mu sync.Mutex
	models := map[string]string{} // the model each turn's request named
	api := fakeapi.New(t, func(r *fakeapi.Request) fakeapi.Response {
		mu.Lock()
		defer mu.Unlock()
		for _, turn := range []string{"turn one", "turn two", "turn three"} {
			if strings.Contains(r.Text(), turn) {
				models[turn] = r.Model
			}
		}
		if !r.Stream && (r.Model == "no-such-model" || r.Model == "gpt-4o") {
			// The CLI confirms a new model with a one-token call; the API
			// does not know these.
			return fakeapi.Error(404, "not_found_error", "model: "+r.Model)
		}
		return fakeapi.Text("ok")
	})
	s := startServer(t, claudetest.NewEnv(t, api.URL), repo)
	o := s.create(jsonString(map[string]any{"repo": repo, "name": "switcher", "effort": "low", "include_hook_events": true}))
	s.must(200, "POST", "/api/sessions/"+o.ID+"/messages", `{"content":"turn one","wait":true}`, nil)

	var ack struct {
		Model    string          `json:"model"`
		Mode     string          `json:"mode"`
		Pending  bool            `json:"pending"`
		Response json.RawMessage `json:"response"`
	}
	s.must(200, "POST", "/api/sessions/"+o.ID+"/model", `{"model":"claude-haiku-4-5"}`, &ack)
	if ack.Pending || ack.Model != "claude-haiku-4-5" {
		t.Errorf("set_model over HTTP: %+v, want the running CLI's acknowledgement", ack)
	}
	s.must(200, "POST", "/api/sessions/"+o.ID+"/permission-mode", `{"mode":"plan"}`, &ack)
	var mode struct {
		Mode string `json:"mode"`
	}
	if err := json.Unmarshal(ack.Response, &mode); ack.Pending || err != nil || mode.Mode != "plan" {
		t.Errorf("set_permission_mode over HTTP: %+v (%v), want the CLI to name plan", ack, err)
	}
	if code, body := s.do("POST", "/api/sessions/"+o.ID+"/permission-mode", `{"mode":"bypassPermissions"}`); code != 403 {
		t.Errorf("a mode the policy refuses: %d %s, want 403", code, body)
	}
	if code, body := s.do("POST", "/api/sessions/"+o.ID+"/model", `{"model":"--dangerously-skip-permissions"}`); code != 400 {
		t.Errorf("a model that is a flag: %d %s, want 400", code, body)
	}
	if code, _ := s.do("POST", "/api/sessions/"+o.ID+"/model", `{"model":"x","extra":1}`); code != 400 {
		t.Errorf("an unknown field: %d, want 400", code)
	}
	// A model the API does not know: the CLI's error, naming it; the
	// session keeps haiku (turn two).
	if code, body := s.do("POST", "/api/sessions/"+o.ID+"/model", `{"model":"no-such-model"}`); code != 422 ||
		!strings.Contains(string(body), `claude refused set_model \"no-such-model\" (not_found): Model 'no-such-model' not found`) {
		t.Errorf("an unknown model: %d %s, want 422 with the CLI's error", code, body)
	}
	if code, body := s.do("POST", "/api/sessions/"+o.ID+"/permission-mode", `{"mode":"bogus"}`); code != 400 || !strings.Contains(string(body), `\"bogus\" is not a permission mode`) || !strings.Contains(string(body), `"field":"mode"`) {
		t.Errorf("a mode that is none: %d %s, want 400 naming it", code, body)
	}
	s.must(200, "POST", "/api/sessions/"+o.ID+"/messages", `{"content":"turn two","wait":true}`, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w := s.follow(ctx, "/api/sessions/"+o.ID+"/ws", 0)
	w.send(ctx, map[string]any{"type": "set_model", "model": "claude-sonnet-4-5"})
	if m := w.await("model_set", "claude-sonnet-4-5"); m["pending"] == true {
		t.Errorf("set_model over the WebSocket: %v", m)
	}
	w.send(ctx, map[string]any{"type": "set_model", "model": "gpt-4o"})
	w.await("error", `claude refused set_model \"gpt-4o\" (not_found)`)
	w.send(ctx, map[string]any{"type": "set_permission_mode", "mode": "bypassPermissions"})
	w.await("error", "not allowed by the server")
	w.send(ctx, map[string]any{"type": "set_permission_mode", "mode": "acceptEdits"})
	// The reply and the event every client sees come in either order.
	w.awaitAll([2]string{"permission_mode_set", `"mode":"acceptEdits"`}, [2]string{"permission_mode_changed", "acceptEdits"})
	s.must(200, "POST", "/api/sessions/"+o.ID+"/messages", `{"content":"turn three","wait":true}`, nil)

	// Not held past the check: the API handler takes mu, and the CLI's
	// calls below must reach it.
	mu.Lock()
	perTurn := maps.Clone(models)
	mu.Unlock()
	if perTurn["turn two"] != "claude-haiku-4-5" || perTurn["turn three"] != "claude-sonnet-4-5" || perTurn["turn one"] == perTurn["turn two"] {
		t.Errorf("models per turn %v: the switches did not reach the API calls", perTurn)
	}
	evs := s.events(o.ID)
	if countType(evs, "model_changed") != 2 || countType(evs, "permission_mode_changed") != 2 {
		t.Errorf("switch events:\n%s", dump(evs))
	}
	if n := countType(evs, "cli_started"); n != 1 {
		t.Errorf("%d CLI starts: a switch must not restart the CLI", n)
	}

	// A switch right after a session's first message waits for the CLI
	// that message starts (its init line) and answers with what that CLI
	// says, never "pending". CLI 2.1.332 confirms the new model with a
	// one-token API call beside the turn's own; the confirmation must reach
	// the API within the CLI's deadline (this test once held the handler's
	// lock across this part, so both calls waited behind it and the CLI
	// answered check_unreachable).
	o2 := s.create(jsonString(map[string]any{"repo": repo, "name": "starting"}))
	s.must(202, "POST", "/api/sessions/"+o2.ID+"/messages", `{"content":"turn four"}`, nil)
	ack.Model, ack.Pending, ack.Response = "", false, nil
	s.must(200, "POST", "/api/sessions/"+o2.ID+"/model", `{"model":"claude-haiku-4-5"}`, &ack)
	if ack.Pending || ack.Model != "claude-haiku-4-5" || !strings.Contains(string(ack.Response), "claude-haiku-4-5") {
		t.Errorf("set_model while the CLI starts: %+v, want the CLI's acknowledgement", ack)
	}
}

// TestE2EForkSession: a session opened with resume and fork_session
// continues a copy of the CLI session it names: the model sees the first
// session's conversation, the CLI session gets a new id, and the session
// forked from is left as it was.
func TestE2EForkSession(t *testing.T) {
	repo := claudetest.GitRepo(t)
	var mu sync.Mutex
	sawHistory := false
	api := fakeapi.New(t, func(r *fakeapi.Request) fakeapi.Response {
		if strings.Contains(r.Text(), "fork turn") {
			mu.Lock()
			sawHistory = r.Contains("FIRST-SESSION-MARK")
			mu.Unlock()
		}
		return fakeapi.Text("ok")
	})
	s := startServer(t, claudetest.NewEnv(t, api.URL), repo)
	a := s.create(jsonString(map[string]any{"repo": repo, "name": "original"}))
	s.must(200, "POST", "/api/sessions/"+a.ID+"/messages", `{"content":"FIRST-SESSION-MARK remember this","wait":true}`, nil)
	a = s.get(a.ID)
	if a.CLISessionID == "" {
		t.Fatalf("the first session has no CLI session id: %+v", a)
	}
	s.must(200, "DELETE", "/api/sessions/"+a.ID, nil, nil)

	if code, body := s.do("POST", "/api/sessions", jsonString(map[string]any{"repo": repo, "fork_session": true})); code != 400 {
		t.Errorf("fork_session without resume: %d %s, want 400", code, body)
	}
	b := s.create(jsonString(map[string]any{"repo": repo, "name": "fork", "resume": a.CLISessionID, "fork_session": true}))
	s.must(200, "POST", "/api/sessions/"+b.ID+"/messages", `{"content":"fork turn","wait":true}`, nil)
	b = s.get(b.ID)
	mu.Lock()
	defer mu.Unlock()
	if !sawHistory {
		t.Errorf("the fork's turn did not carry the first session's conversation")
	}
	if b.CLISessionID == "" || b.CLISessionID == a.CLISessionID {
		t.Errorf("fork's CLI session %q, first %q: want a new id", b.CLISessionID, a.CLISessionID)
	}
}
