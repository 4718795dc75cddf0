package serve

import (
	"net"
	"strings"
	"testing"
)

// countConn records the writes that reach the socket.
type countConn struct {
	net.Conn
	writes []string
}

func (c *countConn) Write(p []byte) (int, error) {
	c.writes = append(c.writes, string(p))
	return len(p), nil
}

// A corked batch reaches the socket as one write, in order; writes outside
// a batch go straight through; a batch past maxCorked is not held whole.
func TestCorkConn(t *testing.T) {
	big := strings.Repeat("x", maxCorked)
	for _, tc := range []struct {
		name string
		run  func(c *corkConn)
		want []string
	}{
		{"batch", func(c *corkConn) {
			c.cork()
			c.Write([]byte("a"))
			c.Write([]byte("b"))
			c.Write([]byte("c"))
			c.uncork()
		}, []string{"abc"}},
		{"uncorked", func(c *corkConn) {
			c.Write([]byte("a"))
			c.Write([]byte("b"))
		}, []string{"a", "b"}},
		{"empty batch", func(c *corkConn) { c.cork(); c.uncork() }, nil},
		{"overflow", func(c *corkConn) {
			c.cork()
			c.Write([]byte("a"))
			c.Write([]byte(big))
			c.Write([]byte("b"))
			c.uncork()
		}, []string{"a", big, "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc := &countConn{}
			tc.run(&corkConn{Conn: cc})
			if strings.Join(cc.writes, "|") != strings.Join(tc.want, "|") || len(cc.writes) != len(tc.want) {
				t.Fatalf("writes %q, want %q", short(cc.writes), short(tc.want))
			}
		})
	}
}

func short(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		if len(s) > 10 {
			s = s[:10] + "..."
		}
		out[i] = s
	}
	return out
}
