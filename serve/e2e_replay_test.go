package serve_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakeapi"
	"github.com/pneuma-cli/pneuma/internal/testbed/poll"
)

// storyAPI answers "story" prompts slowly, in many stream events (about
// four seconds), and anything else at once.
func storyAPI(t *testing.T) *fakeapi.Server {
	return fakeapi.New(t, func(r *fakeapi.Request) fakeapi.Response {
		text := r.Text()
		switch {
		case strings.Contains(text, "remember"):
			if r.Contains("the word is kiwi") {
				return fakeapi.Text("kiwi")
			}
			return fakeapi.Text("I have no earlier turn")
		case strings.Contains(text, "story"):
			resp := fakeapi.Text("once")
			for i := range 7 {
				resp = resp.WithText(fmt.Sprintf("upon a time %d", i))
			}
			return resp.WithDelay(100 * time.Millisecond)
		}
		return fakeapi.Text("short answer")
	})
}

// A client dropped mid-turn comes back with subscribe {last_seq} and gets
// exactly the events it missed, then live ones; a client_msg_id sent twice
// is one turn; an interrupt by HTTP and by WebSocket ends the running turn
// and the next message works.
func TestE2EReplayDedupInterrupt(t *testing.T) {
	repo := claudetest.GitRepo(t)
	api := storyAPI(t)
	s := startServer(t, claudetest.NewEnv(t, api.URL), repo)
	o := s.create(jsonString(map[string]string{"repo": repo}))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	path := "/api/sessions/" + o.ID + "/ws"

	a := s.follow(ctx, path, 0)
	a.send(ctx, map[string]any{"type": "user_message", "content": "tell a story", "client_msg_id": "m1"})
	accepted := a.await("message_accepted", "m1")
	a.await("assistant", "upon a time 1")
	var again struct{ Seq float64 }
	s.must(202, "POST", "/api/sessions/"+o.ID+"/messages", `{"content":"tell a story","client_msg_id":"m1"}`, &again)
	if again.Seq != accepted["seq"].(float64) {
		t.Fatalf("the same client_msg_id twice: seq %v then %v", accepted["seq"], again.Seq)
	}
	a.c.CloseNow()
	<-a.done
	seen := a.events()
	checkGapless(t, seen, 1)
	last := seqOf(seen[len(seen)-1])
	// The story goes on: events the dropped client misses.
	waitFor(t, func() bool { return int64(len(s.events(o.ID))) > last })

	b := s.follow(ctx, path, last)
	b.await("result", "upon a time 6")
	s.must(202, "POST", "/api/sessions/"+o.ID+"/messages", `{"content":"and now?"}`, nil)
	b.await("result", "short answer")
	// The turn's end (turn_end, the status after) follows its result in
	// the log: wait until the client has every event the log has.
	var got, want []map[string]any
	waitFor(t, func() bool {
		got, want = b.events(), s.events(o.ID)[last:]
		return len(got) >= len(want)
	})
	checkGapless(t, got, last+1)
	if len(got) != len(want) {
		t.Fatalf("after reconnecting: %d events, the log has %d after %d", len(got), len(want), last)
	}
	for i := range got {
		if jsonString(got[i]) != jsonString(want[i]) {
			t.Fatalf("event %d differs from the log:\n%s\n%s", seqOf(got[i]), jsonString(got[i]), jsonString(want[i]))
		}
	}
	if n := countType(s.events(o.ID), "user_message"); n != 2 {
		t.Fatalf("%d user messages, want 2 (the duplicate client_msg_id is one)", n)
	}
	stories := 0
	for _, r := range api.Requests() {
		if strings.Contains(r.Text(), "tell a story") && !r.HasToolResult() {
			stories++
		}
	}
	if stories != 1 {
		t.Fatalf("the API saw the story prompt %d times, want once", stories)
	}

	// Interrupt by HTTP, then by WebSocket; each time the next message works.
	for _, how := range []string{"http", "websocket"} {
		b.send(ctx, map[string]any{"type": "user_message", "content": "another story " + how})
		b.await("assistant", "upon a time 0")
		if how == "http" {
			s.must(202, "POST", "/api/sessions/"+o.ID+"/interrupt", nil, nil)
		} else {
			b.send(ctx, map[string]any{"type": "interrupt"})
			b.await("interrupt_sent", "")
		}
		b.await("result", `"subtype":"error_during_execution"`)
		b.send(ctx, map[string]any{"type": "user_message", "content": "still there? " + how})
		b.await("result", "short answer")
	}
	if n := countType(s.events(o.ID), "cli_started"); n != 1 {
		t.Fatalf("%d CLI starts: an interrupt must not end the process", n)
	}
	checkGapless(t, b.events(), last+1)
}

// A server stopped mid-session (SIGTERM, or SIGKILL) and started again: the
// session is listed idle with its events, a replay from any seq gives
// exactly the events after it, and the next message resumes the CLI
// session (the API sees the earlier turn).
func TestE2ERestart(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			repo := claudetest.GitRepo(t)
			api := storyAPI(t)
			env := claudetest.NewEnv(t, api.URL)
			s := startServer(t, env, repo)
			o := s.create(jsonString(map[string]string{"repo": repo}))
			s.must(200, "POST", "/api/sessions/"+o.ID+"/messages", `{"content":"the word is kiwi","wait":true}`, nil)
			if sig == syscall.SIGTERM {
				// Stopped mid-turn: the turn is interrupted.
				s.must(202, "POST", "/api/sessions/"+o.ID+"/messages", `{"content":"tell a story"}`, nil)
				s.waitEvent(o.ID, 0, "assistant", "upon a time 0")
			} else {
				// The CLI writes its transcript a moment after the result; a
				// server killed within that moment takes the CLI with it (its
				// pipes break) and leaves nothing to resume (then the session
				// starts a new CLI session and says resume_failed). Killed
				// later, it must resume.
				cli := s.waitStatus(o.ID, "idle").CLISessionID
				waitFor(t, func() bool {
					m, _ := filepath.Glob(filepath.Join(env.ConfigDir, "projects", "*", cli+".jsonl"))
					return len(m) == 1
				})
			}
			before := s.events(o.ID)
			s.stop(sig)
			s.restart()

			var list []session
			s.must(200, "GET", "/api/sessions", nil, &list)
			if len(list) != 1 || list[0].ID != o.ID || list[0].Status != "idle" || list[0].CLISessionID == "" {
				t.Fatalf("sessions after the restart: %+v", list)
			}
			after := s.events(o.ID)
			if len(after) < len(before) {
				t.Fatalf("%d events after the restart, %d before", len(after), len(before))
			}
			for i := range before {
				if jsonString(before[i]) != jsonString(after[i]) {
					t.Fatalf("event %d changed across the restart:\n%s\n%s", i+1, jsonString(before[i]), jsonString(after[i]))
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			// Clients replay from the start, the middle and the end; the next
			// message's user_message (seq n+1) marks the end of what they
			// replayed: before it each has exactly the events after its seq.
			n := int64(len(after))
			froms := []int64{0, n / 2, n}
			var clients []*wsClient
			for _, from := range froms {
				clients = append(clients, s.follow(ctx, "/api/sessions/"+o.ID+"/ws", from))
			}

			var turn struct {
				Seq    int64 `json:"seq"`
				Result struct {
					Result string `json:"result"`
				} `json:"result"`
			}
			s.must(200, "POST", "/api/sessions/"+o.ID+"/messages", `{"content":"remember the word?","wait":true}`, &turn)
			for i, c := range clients {
				from := froms[i]
				c.await("user_message", "remember the word?")
				got := c.events()
				checkGapless(t, got, from+1)
				if int64(len(got)) < n+1-from || seqOf(got[n-from]) != n+1 {
					t.Fatalf("replay after %d: %d events before the next message's, want %d", from, len(got), n-from)
				}
				c.c.CloseNow()
			}
			evs := s.events(o.ID)
			if turn.Result.Result != "kiwi" || turn.Seq != n+1 {
				t.Fatalf("the message after the restart: seq %d (log had %d), result %q; events after %d:\n%s", turn.Seq, n, turn.Result.Result, n, dump(evs[n:]))
			}
			checkGapless(t, evs, 1)
			for _, ev := range evs[n:] {
				if ev["type"] == "cli_started" && ev["resume"] != list[0].CLISessionID {
					t.Fatalf("the CLI after the restart did not resume %s: %v", list[0].CLISessionID, ev)
				}
			}
		})
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	poll.Eventually(t, 30*time.Second, cond, "the condition")
}
