package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Proxy is the only way out of a sandbox: an HTTP proxy on a unix socket
// that pneuma alone controls. It tunnels CONNECT and forwards plain HTTP to
// the allowed destinations and refuses, and counts, everything else.
type Proxy struct {
	allow   map[hostPort]bool
	ln      net.Listener
	srv     *http.Server
	rp      *httputil.ReverseProxy
	tr      *http.Transport
	dialer  net.Dialer
	wg      sync.WaitGroup
	mu      sync.Mutex
	refused map[string]int
	conns   map[net.Conn]bool // tunnels, closed by Close
	closed  bool
}

// maxHeaderBytes bounds a request's header; the proxy reads nothing else.
const maxHeaderBytes = 64 << 10

// NewProxy starts a proxy on a new unix socket at path that allows the
// given destinations ("host" means ports 443 and 80).
func NewProxy(path string, allow []string) (*Proxy, error) {
	p := &Proxy{allow: map[hostPort]bool{}, refused: map[string]int{}, conns: map[net.Conn]bool{}}
	p.dialer.Timeout = 30 * time.Second
	for _, a := range allow {
		hp, err := parseHost(a)
		if err != nil {
			return nil, fmt.Errorf("sandbox proxy: %w", err)
		}
		if hp.port == 0 {
			p.allow[hostPort{hp.host, 443}], p.allow[hostPort{hp.host, 80}] = true, true
		} else {
			p.allow[hp] = true
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("sandbox proxy: %w", err)
	}
	p.ln = ln
	p.tr = &http.Transport{DialContext: p.dial, Proxy: nil, IdleConnTimeout: 90 * time.Second}
	p.rp = &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.Out.URL = r.In.URL; r.Out.Host = r.In.Host },
		Transport:     p.tr,
		FlushInterval: -1,                         // server-sent events go through as they come
		ErrorLog:      log.New(io.Discard, "", 0), // the client gets a 502; pneuma prints nothing
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second, MaxHeaderBytes: maxHeaderBytes}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		_ = p.srv.Serve(ln) // ends with Close
	}()
	return p, nil
}

// ServeHTTP tunnels a CONNECT or forwards an absolute-form request, when
// its destination is allowed.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.connect(w, r)
		return
	}
	if !r.URL.IsAbs() || r.URL.Scheme != "http" {
		http.Error(w, "pneuma sandbox proxy: only CONNECT and absolute http:// requests", http.StatusBadRequest)
		return
	}
	if !p.check(r.URL.Host, "80") {
		http.Error(w, "pneuma sandbox: "+r.URL.Host+" is not in the job's sandbox.network", http.StatusForbidden)
		return
	}
	r.Header.Del("Proxy-Connection")
	r.Header.Del("Proxy-Authorization")
	p.rp.ServeHTTP(w, r)
}

// connect opens a tunnel to an allowed destination.
func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	if !p.check(r.Host, "443") {
		http.Error(w, "pneuma sandbox: "+r.Host+" is not in the job's sandbox.network", http.StatusForbidden)
		return
	}
	up, err := p.dial(r.Context(), "tcp", r.Host)
	if err != nil {
		http.Error(w, "pneuma sandbox: "+err.Error(), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		_ = up.Close()
		http.Error(w, "pneuma sandbox: cannot tunnel", http.StatusInternalServerError)
		return
	}
	down, rw, err := hj.Hijack()
	if err != nil {
		_ = up.Close()
		return
	}
	if !p.track(up, down) {
		return
	}
	defer p.untrack(up, down)
	if _, err := io.WriteString(down, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	// Bytes the client sent after the header were read into rw already.
	if n := rw.Reader.Buffered(); n > 0 {
		b, _ := rw.Reader.Peek(n)
		if _, err := up.Write(b); err != nil {
			return
		}
	}
	splice(up, down)
}

// dial connects to an allowed address (checked again: the reverse proxy's
// transport dials here too).
func (p *Proxy) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	hp, ok := splitHostPort(addr, "")
	if !ok || !p.allow[hp] {
		return nil, fmt.Errorf("%s is not allowed", addr)
	}
	return p.dialer.DialContext(ctx, network, addr)
}

// check reports whether addr (host[:port], defaultPort when none) is
// allowed, and counts it when it is not.
func (p *Proxy) check(addr, defaultPort string) bool {
	hp, ok := splitHostPort(addr, defaultPort)
	if ok && p.allow[hp] {
		return true
	}
	key := addr
	if ok {
		key = net.JoinHostPort(hp.host, strconv.Itoa(hp.port))
	}
	if len(key) > 300 {
		key = key[:300]
	}
	p.mu.Lock()
	if _, seen := p.refused[key]; seen || len(p.refused) < maxRefusedHosts {
		p.refused[key]++
	} else {
		p.refused["(other)"]++
	}
	p.mu.Unlock()
	return false
}

// maxRefusedHosts bounds the refused list; the rest are counted together.
const maxRefusedHosts = 100

func splitHostPort(addr, defaultPort string) (hostPort, bool) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		if defaultPort == "" {
			return hostPort{}, false
		}
		host, port = strings.Trim(addr, "[]"), defaultPort
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 || host == "" {
		return hostPort{}, false
	}
	return hostPort{strings.ToLower(host), n}, true
}

// Refused is one destination the proxy refused, and how often.
type Refused struct {
	Host  string `json:"host"`
	Count int    `json:"count"`
}

// Refused lists the refused destinations, most refused first.
func (p *Proxy) Refused() []Refused {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Refused, 0, len(p.refused))
	for h, n := range p.refused {
		out = append(out, Refused{h, n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Host < out[j].Host
	})
	return out
}

func (p *Proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range cs {
			_ = c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.conns[c] = true
	}
	return true
}

func (p *Proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
		_ = c.Close()
	}
}

// Close stops the proxy and every tunnel, and removes its socket.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := p.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = p.srv.Close()
	}
	p.wg.Wait()
	p.tr.CloseIdleConnections() // the upstream connections of plain HTTP requests
	if err != nil {
		return fmt.Errorf("close sandbox proxy: %w", err)
	}
	return nil
}

// splice copies both ways until either side ends, then closes both.
func splice(a, b net.Conn) {
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src) // ends when either side closes
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		done <- struct{}{}
	}
	go cp(a, b)
	go cp(b, a)
	<-done
	<-done
	_ = a.Close()
	_ = b.Close()
}

// apiHost is the API endpoint of a base URL ("" is Anthropic's own).
func apiHost(baseURL string) (host string, port int, loop bool, err error) {
	if baseURL == "" {
		return "api.anthropic.com", 443, false, nil
	}
	u, err := url.Parse(baseURL)
	if err != nil || u.Hostname() == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", 0, false, fmt.Errorf("ANTHROPIC_BASE_URL %q is not an http(s) URL", baseURL)
	}
	port = 443
	if u.Scheme == "http" {
		port = 80
	}
	if s := u.Port(); s != "" {
		if port, err = strconv.Atoi(s); err != nil {
			return "", 0, false, fmt.Errorf("ANTHROPIC_BASE_URL %q: bad port", baseURL)
		}
	}
	host = strings.ToLower(u.Hostname())
	return host, port, loopback(host) && u.Scheme == "http", nil
}
