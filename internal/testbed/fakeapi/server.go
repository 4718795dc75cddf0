// Package fakeapi is a scriptable fake of the Anthropic Messages API for
// tests, the offline demo and benchmarks.
//
// A Server listens on a loopback port and answers POST /v1/messages the way
// the real API does, streaming (SSE) or not, with whatever a test's Handler
// returns: text, tool calls (Write, Edit, Read, Bash, Agent, parallel calls),
// HTTP errors with headers, slow or broken streams and requests that never
// answer. It records every request, so tests can assert on what the real
// Claude Code CLI sent (model, messages, tool names). The wire format is the
// one Claude Code 2.1.197 accepts (docs/claude-cli.md, section 6).
package fakeapi

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Handler chooses the response to one request. It may be called from several
// goroutines at once (a subagent and the main thread, parallel retries).
type Handler func(r *Request) Response

// Server is a running fake API. New starts one for a test, Start for a
// program (the demo, benchmarks); Close stops it.
type Server struct {
	URL string // base URL, http://127.0.0.1:PORT; use it as ANTHROPIC_BASE_URL

	logf   func(format string, args ...any) // request log
	errorf func(format string, args ...any) // protocol errors and handler panics
	record bool
	srv    *httptest.Server
	done   chan struct{} // closed by Close: releases hung and delayed requests
	once   sync.Once

	mu        sync.Mutex
	handler   Handler
	n         int // requests received
	reqs      []Request
	unhandled []string
	arrived   chan struct{} // closed and replaced whenever a request is recorded
}

// Options configures Start.
type Options struct {
	// Addr is the TCP address to listen on; empty means 127.0.0.1 on a free
	// port.
	Addr string
	// Logf receives one line per request and every handler panic or
	// undecodable request; nil discards them.
	Logf func(format string, args ...any)
	// NoRecord stops the server from keeping requests, so that a long-lived
	// server's memory stays flat; Requests and WaitRequests then see none.
	NoRecord bool
}

// New starts a fake API answering with h (nil answers Text("done") to
// everything). It is closed by t.Cleanup, which first releases requests held
// by Hang or WithDelay. Undecodable requests and handler panics fail the test.
func New(t testing.TB, h Handler) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("fakeapi: listen: %v", err)
	}
	s := start(ln, h, t.Logf, t.Errorf, true)
	t.Cleanup(s.Close)
	return s
}

// Start starts a fake API answering with h (nil answers Text("done") to
// everything) outside of tests. The caller must Close it.
func Start(h Handler, o Options) (*Server, error) {
	addr := o.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("fakeapi: listen on %s: %w", addr, err)
	}
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	return start(ln, h, logf, logf, !o.NoRecord), nil
}

func start(ln net.Listener, h Handler, logf, errorf func(string, ...any), record bool) *Server {
	if h == nil {
		h = Sequence()
	}
	s := &Server{logf: logf, errorf: errorf, record: record, handler: h, done: make(chan struct{}), arrived: make(chan struct{})}
	s.srv = &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(s.serveHTTP)}}
	s.srv.Start()
	s.URL = s.srv.URL
	return s
}

// Close releases the requests held by Hang or WithDelay, drops every
// connection and waits for the handlers to return. It is safe to call more
// than once.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.done)
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
}

// SetHandler replaces the handler for the requests that arrive from now on.
func (s *Server) SetHandler(h Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handler = h
}

// Requests returns a copy of every /v1/messages request received so far, in
// arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Unhandled returns "METHOD /path" for every request to a path other than
// POST /v1/messages (each answered 404).
func (s *Server) Unhandled() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.unhandled...)
}

// WaitRequests blocks until at least n /v1/messages requests have arrived, and
// returns them, or returns ctx's error.
func (s *Server) WaitRequests(ctx context.Context, n int) ([]Request, error) {
	for {
		s.mu.Lock()
		if len(s.reqs) >= n {
			out := append([]Request(nil), s.reqs...)
			s.mu.Unlock()
			return out, nil
		}
		arrived := s.arrived
		s.mu.Unlock()
		select {
		case <-arrived:
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for %d requests: %w", n, ctx.Err())
		}
	}
}

func (s *Server) serveHTTP(w http.ResponseWriter, hr *http.Request) {
	if hr.Method != http.MethodPost || hr.URL.Path != "/v1/messages" {
		s.logf("fakeapi: %s %s -> 404", hr.Method, hr.URL.Path)
		if s.record {
			s.mu.Lock()
			s.unhandled = append(s.unhandled, hr.Method+" "+hr.URL.Path)
			s.mu.Unlock()
		}
		writeError(w, http.StatusNotFound, "not_found_error", "fakeapi serves only POST /v1/messages, not "+hr.Method+" "+hr.URL.Path, requestID())
		return
	}
	body, err := io.ReadAll(hr.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "read body: "+err.Error(), requestID())
		return
	}
	req, perr := parseRequest(body)
	if perr != nil {
		req = Request{Body: body}
	}
	req.Query = hr.URL.RawQuery
	req.Time = time.Now()
	req.Header = hr.Header.Clone()

	s.mu.Lock()
	s.n++
	req.N = s.n
	if s.record {
		s.reqs = append(s.reqs, req)
	}
	close(s.arrived)
	s.arrived = make(chan struct{})
	h := s.handler
	s.mu.Unlock()

	if perr != nil {
		s.errorf("fakeapi: request #%d: %v", req.N, perr)
		writeError(w, http.StatusBadRequest, "invalid_request_error", perr.Error(), requestID())
		return
	}
	resp, ok := s.call(h, &req)
	if !ok {
		writeError(w, http.StatusInternalServerError, "api_error", "fakeapi handler panicked", requestID())
		return
	}
	s.logf("fakeapi: %s -> %s", req.String(), resp.describe())
	(&responder{w: w, hr: hr, done: s.done}).respond(&req, resp)
}

// call runs the handler, turning a panic into an error (a test error under
// New) and a 500 answer instead of a silently dropped connection.
func (s *Server) call(h Handler, r *Request) (resp Response, ok bool) {
	defer func() {
		if p := recover(); p != nil {
			s.errorf("fakeapi: handler panicked on request #%d: %v", r.N, p)
			ok = false
		}
	}()
	return h(r), true
}

// responder writes one Response.
type responder struct {
	w    http.ResponseWriter
	hr   *http.Request
	done <-chan struct{}
}

// wait pauses for d, and reports false when the client left or the server is
// closing; the caller then drops the connection.
func (p *responder) wait(d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-p.hr.Context().Done():
		return false
	case <-p.done:
		return false
	}
}

func (p *responder) respond(req *Request, r Response) {
	if r.hang {
		select {
		case <-p.hr.Context().Done():
		case <-p.done:
		}
		p.abort()
		return
	}
	rid := requestID()
	for _, kv := range r.header {
		p.w.Header().Add(kv[0], kv[1])
	}
	switch {
	case r.raw != nil:
		if !p.wait(r.delay) {
			p.abort()
			return
		}
		p.w.Header().Set("request-id", rid)
		p.w.Header().Set("Content-Type", "application/json")
		p.w.WriteHeader(r.statusCode())
		io.WriteString(p.w, *r.raw)
	case r.IsError():
		if !p.wait(r.delay) {
			p.abort()
			return
		}
		writeError(p.w, r.statusCode(), r.errType, r.errMsg, rid)
	case req.Stream:
		p.stream(req, r, rid)
	default:
		if !p.wait(r.delay) {
			p.abort()
			return
		}
		p.w.Header().Set("request-id", rid)
		p.w.Header().Set("Content-Type", "application/json")
		p.w.WriteHeader(r.statusCode())
		json.NewEncoder(p.w).Encode(message(req, r))
	}
}

// abort drops the connection without a complete HTTP response.
func (p *responder) abort() {
	// httptest serves HTTP/1.1, whose connections can always be hijacked.
	if conn, _, err := http.NewResponseController(p.w).Hijack(); err == nil {
		conn.Close()
	}
}

func (p *responder) stream(req *Request, r Response, rid string) {
	h := p.w.Header()
	h.Set("request-id", rid)
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	p.w.WriteHeader(r.statusCode())
	rc := http.NewResponseController(p.w)
	rc.Flush()
	evs := events(req, r)
	for i, ev := range evs {
		if r.breakAfter > 0 && i == r.breakAfter {
			p.abort()
			return
		}
		if !p.wait(r.delay) {
			p.abort()
			return
		}
		data, err := json.Marshal(ev)
		if err != nil { // only our own maps and valid JSON: cannot happen
			p.abort()
			return
		}
		fmt.Fprintf(p.w, "event: %s\ndata: %s\n\n", ev["type"], data)
		if err := rc.Flush(); err != nil {
			return
		}
	}
	if r.breakAfter >= len(evs) {
		p.abort() // every event sent, but the body never ends properly
	}
}

// usageJSON is the usage object of message_start and of a non-streaming message.
func usageJSON(u Usage, output int) map[string]any {
	return map[string]any{
		"input_tokens":                u.Input,
		"cache_creation_input_tokens": u.CacheWrite,
		"cache_read_input_tokens":     u.CacheRead,
		"output_tokens":               output,
		"service_tier":                "standard",
	}
}

// block is one content block of an answer, with its tool input already encoded.
type block struct {
	thinking *string
	text     *string
	id       string
	name     string
	input    json.RawMessage
}

func blocks(r Response) []block {
	var out []block
	if r.thinking != nil {
		out = append(out, block{thinking: r.thinking})
	}
	for i := range r.text {
		out = append(out, block{text: &r.text[i]})
	}
	for _, c := range r.calls {
		in := c.Input
		if in == nil {
			in = map[string]any{}
		}
		data, err := json.Marshal(in)
		if err != nil {
			data = []byte(fmt.Sprintf(`{"fakeapi_error":%q}`, err.Error()))
		}
		id := c.ID
		if id == "" {
			id = "toolu_fake_" + rand.Text()
		}
		out = append(out, block{id: id, name: c.Name, input: data})
	}
	return out
}

func model(req *Request, r Response) string {
	switch {
	case r.model != "":
		return r.model
	case req.Model != "":
		return req.Model
	default:
		return "claude-opus-4-8"
	}
}

// message is the non-streaming answer.
func message(req *Request, r Response) map[string]any {
	content := []any{}
	for _, b := range blocks(r) {
		switch {
		case b.thinking != nil:
			content = append(content, map[string]any{"type": "thinking", "thinking": *b.thinking, "signature": signature})
		case b.text != nil:
			content = append(content, map[string]any{"type": "text", "text": *b.text})
		default:
			content = append(content, map[string]any{"type": "tool_use", "id": b.id, "name": b.name, "input": b.input})
		}
	}
	u := r.usageOrDefault()
	return map[string]any{
		"id": "msg_fake_" + rand.Text(), "type": "message", "role": "assistant", "model": model(req, r),
		"content": content, "stop_reason": r.stop(), "stop_sequence": nil, "usage": usageJSON(u, u.Output),
	}
}

// events is the SSE answer, event by event.
func events(req *Request, r Response) []map[string]any {
	u := r.usageOrDefault()
	start := min(1, u.Output)
	evs := []map[string]any{
		{"type": "message_start", "message": map[string]any{
			"id": "msg_fake_" + rand.Text(), "type": "message", "role": "assistant", "model": model(req, r),
			"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": usageJSON(u, start),
		}},
		{"type": "ping"},
	}
	for i, b := range blocks(r) {
		switch {
		case b.thinking != nil:
			evs = append(evs, map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}})
			for _, piece := range split(*b.thinking, 3) {
				evs = append(evs, map[string]any{"type": "content_block_delta", "index": i,
					"delta": map[string]any{"type": "thinking_delta", "thinking": piece}})
			}
			evs = append(evs, map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "signature_delta", "signature": signature}})
		case b.text != nil:
			evs = append(evs, map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "text", "text": ""}})
			for _, piece := range split(*b.text, 3) {
				evs = append(evs, map[string]any{"type": "content_block_delta", "index": i,
					"delta": map[string]any{"type": "text_delta", "text": piece}})
			}
		default:
			evs = append(evs, map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": b.id, "name": b.name, "input": map[string]any{}}})
			for _, piece := range split(string(b.input), 3) {
				evs = append(evs, map[string]any{"type": "content_block_delta", "index": i,
					"delta": map[string]any{"type": "input_json_delta", "partial_json": piece}})
			}
		}
		evs = append(evs, map[string]any{"type": "content_block_stop", "index": i})
	}
	return append(evs,
		map[string]any{"type": "message_delta",
			"delta": map[string]any{"stop_reason": r.stop(), "stop_sequence": nil},
			"usage": map[string]any{"output_tokens": u.Output}},
		map[string]any{"type": "message_stop"},
	)
}

// split cuts s into at most n non-empty pieces on rune boundaries (one empty
// piece for an empty s), the way the API streams text and tool input.
func split(s string, n int) []string {
	if s == "" {
		return []string{""}
	}
	rs := []rune(s)
	size := (len(rs) + n - 1) / n
	var out []string
	for i := 0; i < len(rs); i += size {
		out = append(out, string(rs[i:min(i+size, len(rs))]))
	}
	return out
}

func writeError(w http.ResponseWriter, status int, typ, msg, rid string) {
	w.Header().Set("request-id", rid)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{
		"type":       "error",
		"error":      map[string]any{"type": typ, "message": msg},
		"request_id": rid,
	})
}

// signature is the opaque signature of fake thinking blocks.
const signature = "fakeapi-signature"

func requestID() string { return "req_fake_" + rand.Text() }

// describe summarises a response for test logs.
func (r Response) describe() string {
	switch {
	case r.hang:
		return "hang"
	case r.raw != nil:
		return fmt.Sprintf("raw %d (%d bytes)", r.statusCode(), len(*r.raw))
	case r.IsError():
		return fmt.Sprintf("error %d %s", r.status, r.errType)
	}
	var parts []string
	if r.thinking != nil {
		parts = append(parts, "thinking")
	}
	if len(r.text) > 0 {
		parts = append(parts, fmt.Sprintf("%d text", len(r.text)))
	}
	for _, c := range r.calls {
		parts = append(parts, c.Name)
	}
	d := strings.Join(parts, "+")
	if r.breakAfter > 0 {
		d += fmt.Sprintf(" (break after %d events)", r.breakAfter)
	}
	return d
}
