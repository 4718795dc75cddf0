package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/pneuma-cli/pneuma/internal/testbed/poll"
	"github.com/pneuma-cli/pneuma/runner"
)

// dial opens a WebSocket to path; header auth unless token is "".
func (b *bed) dial(ctx context.Context, path, token string, h http.Header) (*websocket.Conn, *http.Response, error) {
	if h == nil {
		h = http.Header{}
	}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(b.ts.URL, "http")+path, &websocket.DialOptions{HTTPHeader: h})
	if err == nil {
		c.SetReadLimit(4 << 20)
	}
	return c, resp, err
}

func readMsg(t *testing.T, ctx context.Context, c *websocket.Conn) map[string]any {
	t.Helper()
	_, data, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func send(t *testing.T, ctx context.Context, c *websocket.Conn, v string) {
	t.Helper()
	if err := c.Write(ctx, websocket.MessageText, []byte(v)); err != nil {
		t.Fatal(err)
	}
}

func seqOf(m map[string]any) int64 { f, _ := m["seq"].(float64); return int64(f) }

func TestWebSocketAuth(t *testing.T) {
	b := newBed(t, nil)
	id := b.createSession()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	path := "/api/sessions/" + id + "/ws"
	for _, tc := range []struct{ name, first string }{
		{"silent", ""},
		{"wrong token", `{"type":"auth","token":"nope"}`},
		{"not auth", `{"type":"ping"}`},
	} {
		c, _, err := b.dial(ctx, path, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		if tc.first != "" {
			send(t, ctx, c, tc.first)
		}
		_, _, err = c.Read(ctx)
		if websocket.CloseStatus(err) != CloseUnauthorized {
			t.Errorf("%s: %v, want close 4001", tc.name, err)
		}
		c.CloseNow()
	}
	if _, resp, err := b.dial(ctx, path, "wrong", nil); err == nil || resp.StatusCode != 403 {
		t.Errorf("wrong header token: %v", err)
	}
	c, _, err := b.dial(ctx, path, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	send(t, ctx, c, `{"type":"auth","token":"`+testToken+`"}`)
	if m := readMsg(t, ctx, c); m["type"] != "session_snapshot" {
		t.Fatalf("after auth: %v", m)
	}
	send(t, ctx, c, `{"type":"ping"}`)
	if m := readMsg(t, ctx, c); m["type"] != "pong" {
		t.Fatalf("ping: %v", m)
	}
	send(t, ctx, c, `{"type":"ping","extra":1}`)
	if m := readMsg(t, ctx, c); m["type"] != "error" || !strings.Contains(m["message"].(string), `"extra"`) {
		t.Fatalf("unknown field: %v", m)
	}
	send(t, ctx, c, `{"type":"user_message","content":"`+strings.Repeat("x", MaxBody)+`"}`)
	if _, _, err := c.Read(ctx); websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Fatalf("2 MiB message: %v, want 1009", err)
	}
}

func TestWebSocketOrigin(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b := newBed(t, nil)
	id := b.createSession()
	h := http.Header{"Origin": {"http://evil.example"}}
	if _, resp, err := b.dial(ctx, "/api/sessions/"+id+"/ws", testToken, h); err == nil || resp == nil || resp.StatusCode != 403 {
		t.Fatalf("foreign origin accepted: %v", err)
	}
	own := http.Header{"Origin": {b.ts.URL}}
	c, _, err := b.dial(ctx, "/api/sessions/"+id+"/ws", testToken, own)
	if err != nil {
		t.Fatalf("own origin: %v", err)
	}
	c.CloseNow()

	b2 := newBed(t, func(c *Config) { c.AllowOrigins = []string{"http://evil.example"} })
	id2 := b2.createSession()
	c, _, err = b2.dial(ctx, "/api/sessions/"+id2+"/ws", testToken, h)
	if err != nil {
		t.Fatalf("allowed origin: %v", err)
	}
	c.CloseNow()
}

// TestReplayAfterReconnect: a client that comes back with subscribe gets
// exactly the events it missed, then live ones.
func TestReplayAfterReconnect(t *testing.T) {
	b := newBed(t, nil)
	id := b.createSession()
	sess := b.engine.last()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	path := "/api/sessions/" + id + "/ws"
	c, _, err := b.dial(ctx, path, testToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m := readMsg(t, ctx, c); m["type"] != "session_snapshot" || m["last_seq"].(float64) != 0 {
		t.Fatalf("snapshot: %v", m)
	}
	for i := 1; i <= 10; i++ {
		sess.emit("stream_event", map[string]int{"i": i})
	}
	for i := int64(1); i <= 5; i++ {
		if m := readMsg(t, ctx, c); seqOf(m) != i {
			t.Fatalf("live: %v, want seq %d", m, i)
		}
	}
	c.Close(websocket.StatusNormalClosure, "")
	for i := 11; i <= 20; i++ {
		sess.emit("stream_event", map[string]int{"i": i})
	}
	c, _, err = b.dial(ctx, path, testToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	send(t, ctx, c, `{"type":"subscribe","last_seq":5}`)
	for i := int64(6); i <= 20; i++ {
		m := readMsg(t, ctx, c)
		if seqOf(m) != i || m["i"].(float64) != float64(i) {
			t.Fatalf("replay: %v, want seq %d", m, i)
		}
	}
	sess.emit("stream_event", map[string]int{"i": 21})
	if m := readMsg(t, ctx, c); seqOf(m) != 21 {
		t.Fatalf("live after replay: %v", m)
	}
	send(t, ctx, c, `{"type":"user_message","content":"hi","client_msg_id":"x"}`)
	// The reply and the events of the turn interleave; both must come, the
	// reply after the message's event.
	var accepted, user bool
	for !(accepted && user) {
		m := readMsg(t, ctx, c)
		if m["type"] == "message_accepted" && !user {
			t.Fatalf("%v before its user_message event", m)
		}
		accepted = accepted || m["type"] == "message_accepted" && seqOf(m) == 22
		user = user || m["type"] == "user_message" && seqOf(m) == 22
	}
}

// TestAcceptedAfterItsEvent: a user_message sent right after subscribing,
// while the replay is still being written, is answered message_accepted
// {seq:N} only after the event N: a client that takes the last seq it saw
// from every frame (docs/serve.md, the console) would otherwise drop the
// event as one it had seen. Every event comes once, in seq order.
func TestAcceptedAfterItsEvent(t *testing.T) {
	b := newBed(t, nil)
	id := b.createSession()
	sess := b.engine.last()
	pad := strings.Repeat("x", 2000)
	for i := 1; i <= 3000; i++ { // a replay of several pages: the pump is busy
		sess.emit("stream_event", map[string]any{"i": i, "pad": pad})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, _, err := b.dial(ctx, "/api/sessions/"+id+"/ws", testToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	send(t, ctx, c, `{"type":"subscribe","last_seq":0}`)
	send(t, ctx, c, `{"type":"user_message","content":"hi","client_msg_id":"m1"}`)
	var last int64
	for {
		m := readMsg(t, ctx, c)
		if m["type"] == "message_accepted" {
			if seqOf(m) > last {
				t.Fatalf("message_accepted for seq %d came before that event (the last event sent was %d)", seqOf(m), last)
			}
			if last < 3001 || m["client_msg_id"] != "m1" {
				t.Fatalf("accepted %v after event %d, want seq 3001", m, last)
			}
			return
		}
		if seqOf(m) != last+1 {
			t.Fatalf("event %v after seq %d: want seq %d", m["type"], last, last+1)
		}
		last = seqOf(m)
	}
}

// TestSlowClient: a client that stops reading is closed with 4008 and the
// last seq it was sent, and comes back with subscribe for the rest.
func TestSlowClient(t *testing.T) {
	b := newBed(t, func(c *Config) { c.Buffer = 8 })
	id := b.createSession()
	sess := b.engine.last()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	path := "/api/sessions/" + id + "/ws"
	c, _, err := b.dial(ctx, path, testToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	send(t, ctx, c, `{"type":"subscribe","last_seq":0}`)
	log := b.s.sessions.get(id).log
	poll.Eventually(t, 10*time.Second, func() bool { return log.Followers() == 1 }, "the client follows the log")
	pad := strings.Repeat("p", 64<<10)
	const n = 400 // 25 MiB: more than loopback buffers hold
	start := time.Now()
	for i := 1; i <= n; i++ {
		sess.emit("stream_event", map[string]any{"i": i, "pad": pad})
	}
	if d := time.Since(start); d > 5*time.Second && !raceEnabled {
		t.Errorf("appending behind a stalled client took %v: the session waited for it", d)
	}
	var last int64
	var err2 error
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			err2 = err
			break
		}
		var m map[string]any
		json.Unmarshal(data, &m)
		if seqOf(m) != last+1 {
			t.Fatalf("gap: got %d after %d", seqOf(m), last)
		}
		last = seqOf(m)
	}
	var ce websocket.CloseError
	if !errors.As(err2, &ce) || ce.Code != CloseSlow || ce.Reason != fmt.Sprintf(`{"last_seq":%d}`, last) {
		t.Fatalf("close: %v, want 4008 with last_seq %d", err2, last)
	}
	if last >= n {
		t.Fatalf("never fell behind (last %d)", last)
	}
	c2, _, err := b.dial(ctx, path, testToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.CloseNow()
	send(t, ctx, c2, fmt.Sprintf(`{"type":"subscribe","last_seq":%d}`, last))
	for i := last + 1; i <= n; i++ {
		if m := readMsg(t, ctx, c2); seqOf(m) != i {
			t.Fatalf("resubscribe: %d, want %d", seqOf(m), i)
		}
	}
}

// An unauthenticated WebSocket cannot tell which session and run ids exist:
// for a known id and an unknown one alike, silence, a wrong token or
// another message first is the same 4001 with the same reason; only a
// client that authenticated hears 4004 for an unknown id.
func TestWebSocketUnknownIDLooksKnown(t *testing.T) {
	b := jobBed(t, func(runner.JobDir) {}) // run r1
	sid := b.createSession()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	closeOf := func(path, first string) (websocket.StatusCode, string) {
		c, _, err := b.dial(ctx, path, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		if first != "" {
			send(t, ctx, c, first)
		}
		_, _, err = c.Read(ctx)
		var ce websocket.CloseError
		if !errors.As(err, &ce) {
			return -1, err.Error()
		}
		return ce.Code, ce.Reason
	}
	for _, pair := range [][2]string{
		{"/api/sessions/" + sid + "/ws", "/api/sessions/no-such-session/ws"},
		{"/api/runs/r1/ws", "/api/runs/no-such-run/ws"},
	} {
		for _, first := range []string{"", `{"type":"auth","token":"nope"}`, `{"type":"ping"}`} {
			kc, kr := closeOf(pair[0], first)
			uc, ur := closeOf(pair[1], first)
			if kc != CloseUnauthorized || uc != kc || ur != kr {
				t.Errorf("first message %q: known id %d %q, unknown id %d %q; want both 4001 alike", first, kc, kr, uc, ur)
			}
		}
		if code, _ := closeOf(pair[1], `{"type":"auth","token":"`+testToken+`"}`); code != CloseNotFound {
			t.Errorf("%s after auth: %d, want 4004", pair[1], code)
		}
	}
}
