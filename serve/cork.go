package serve

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"sync"
)

// The WebSocket library flushes every message to the socket: one write
// system call per event per client, which is most of the cost of fan-out.
// corkConn lets a client's writer put a whole batch of pending events into
// one system call: the library's connection is a corkConn, and while it is
// corked its writes collect in memory until uncork sends them at once.
// Writes outside a batch (replies, pongs, close frames) go straight through.

// corkConn is a net.Conn whose writes can be held and sent together.
type corkConn struct {
	net.Conn
	mu     sync.Mutex // one connection's writes; never held across connections
	corked bool
	buf    []byte
}

// maxCorked bounds a batch held in memory; past it writes go through.
const maxCorked = 1 << 20

func (c *corkConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.corked && len(c.buf)+len(p) <= maxCorked {
		c.buf = append(c.buf, p...)
		return len(p), nil
	}
	if err := c.flushLocked(); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

// cork holds writes until uncork.
func (c *corkConn) cork() {
	c.mu.Lock()
	c.corked = true
	c.mu.Unlock()
}

// uncork sends what was held in one write and lets writes through again.
func (c *corkConn) uncork() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.corked = false
	return c.flushLocked()
}

func (c *corkConn) flushLocked() error {
	if len(c.buf) == 0 {
		return nil
	}
	_, err := c.Conn.Write(c.buf)
	c.buf = c.buf[:0]
	if cap(c.buf) > 64<<10 {
		c.buf = nil // a burst's buffer is not kept for an idle client
	}
	return err
}

// corkWriter hands the WebSocket library a corkConn when it hijacks the
// connection.
type corkWriter struct {
	http.ResponseWriter
	conn *corkConn
}

// Hijack hijacks the underlying connection and wraps it.
func (w *corkWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("the connection cannot be hijacked")
	}
	nc, brw, err := hj.Hijack()
	if err != nil {
		return nil, nil, err
	}
	if err := brw.Writer.Flush(); err != nil {
		nc.Close()
		return nil, nil, err
	}
	w.conn = &corkConn{Conn: nc}
	brw.Writer.Reset(w.conn)
	return w.conn, brw, nil
}
