package serve

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

type counting struct{ sent, dropped atomic.Int64 }

func (c *counting) EventsSent(n int) { c.sent.Add(int64(n)) }
func (c *counting) ClientDropped()   { c.dropped.Add(1) }

// TestCountersFanOut: the events written to a WebSocket client and a
// client dropped for lag are counted (the /metrics of pneuma serve).
func TestCountersFanOut(t *testing.T) {
	cnt := &counting{}
	b := newBed(t, func(c *Config) { c.Buffer = 8; c.Counters = cnt })
	id := b.createSession()
	sess := b.engine.last()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _, err := b.dial(ctx, "/api/sessions/"+id+"/ws", testToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	send(t, ctx, c, `{"type":"subscribe","last_seq":0}`)
	pad := strings.Repeat("p", 64<<10)
	for i := 1; i <= 400; i++ { // 25 MiB: more than loopback buffers hold
		sess.emit("stream_event", map[string]any{"i": i, "pad": pad})
	}
	var last int64
	for {
		_, data, err := c.Read(ctx)
		var ce websocket.CloseError
		if errors.As(err, &ce) && ce.Code == CloseSlow {
			break
		}
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		var m map[string]any
		_ = json.Unmarshal(data, &m)
		last = seqOf(m)
	}
	if cnt.dropped.Load() != 1 || cnt.sent.Load() != last || last == 0 {
		t.Errorf("counted %d sent, %d dropped; the client read %d and was dropped once", cnt.sent.Load(), cnt.dropped.Load(), last)
	}
}
