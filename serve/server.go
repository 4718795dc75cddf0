// Package serve is pneuma's HTTP and WebSocket front door: sessions (jobs
// you talk to) and runs, their durable event logs and fan-out, auth and
// limits. It holds no lifecycle: sessions are runner's (through Engine),
// runs are runner.Run's. docs/serve.md describes the API.
package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/pneuma-cli/pneuma/notify"
	"github.com/pneuma-cli/pneuma/runner"
)

// Config is the server's settings.
type Config struct {
	// Token is the operator's bearer token (scope full); every route but
	// /healthz and the console's static files needs a token. No token is
	// ever logged.
	Token string
	// Tokens are further tokens with their scopes (read, operate).
	Tokens []Token
	// Policy is what clients may ask for (see Policy).
	Policy Policy
	// MaxJobs bounds the agents at work across the server: each open
	// session counts one, each unfinished run its concurrency (default 8).
	MaxJobs int
	// AllowHosts are the Host headers the server answers (host:port,
	// lower case); empty allows any.
	AllowHosts []string
	// AccessLog gets one line per request; nil: none.
	AccessLog *AccessLog
	// Roots: repositories of sessions and runs must resolve under one.
	Roots []string
	// MaxSessions bounds the sessions not yet closed (default 4).
	MaxSessions int
	// StateDir holds sessions/ and runs/ (runner.StateDir).
	StateDir string
	// AllowOrigins are the browser origins besides the server's own that may
	// call the API (CORS) and open WebSockets; "*" allows any.
	AllowOrigins []string
	// WorkDir is where sessions and jobs without a repo run.
	WorkDir string
	// Binary is the claude CLI; Environ its base environment.
	Binary  string
	Environ []string
	// Getenv reads the server's environment (credentials in /api/health).
	Getenv func(string) string
	// Engine opens sessions; nil answers the session routes with 501.
	Engine Engine
	// Kill, when closed, kills every run's jobs at once (a second signal).
	Kill <-chan struct{}
	// Version and CLIVersion are reported by /api/health.
	Version, CLIVersion string
	// Web serves the console's static files at /; nil: none.
	Web http.Handler
	// Buffer is how many events may wait for one WebSocket client before it
	// is dropped with 4008 (default 1024).
	Buffer int
	// AuthTimeout is how long a WebSocket may take to authenticate (default 10s).
	AuthTimeout time.Duration
	// Logf logs server errors (default: none). The token never reaches it.
	Logf func(format string, args ...any)
	// Metrics serves /metrics (Prometheus text, behind the token); nil: 404.
	Metrics http.Handler
	// Telemetry, when set, adds telemetry to each run's options.
	Telemetry func(*runner.Options)
	// Counters count the WebSocket fan-out for metrics; nil: none.
	Counters Counters
	// SessionEvents, when set, sees every session's events (telemetry).
	SessionEvents func(id string, ev SessionEvent)
	// Notifier, when set, is told of sessions' permission requests and
	// idle turns and of runs' jobs (notify.go).
	Notifier *notify.Notifier
	// PublicURL is the URL people reach the server by; with it,
	// permission_request notifications carry approval links, valid for
	// LinkTTL (default DefaultLinkTTL).
	PublicURL string
	LinkTTL   time.Duration

	// gate is shared by the server's sessions and runs (New makes it):
	// at most MaxJobs CLIs at once, fewer after a 429/529 storm.
	gate *runner.SharedGate
}

func (c *Config) defaults() {
	if c.MaxSessions <= 0 {
		c.MaxSessions = 4
	}
	if c.MaxJobs <= 0 {
		c.MaxJobs = 8
	}
	c.Policy.defaults()
	if c.Buffer <= 0 {
		c.Buffer = 1024
	}
	if c.AuthTimeout <= 0 {
		c.AuthTimeout = 10 * time.Second
	}
	if c.Getenv == nil {
		c.Getenv = os.Getenv
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
}

// Server serves the API. Create it with New; stop it with Shutdown.
type Server struct {
	cfg      Config
	sessions *registry
	runs     *runRegistry
	handler  http.Handler
	routes   []Route
	gate     gate

	// ctx ends at Shutdown: WebSocket connections and long polls see it.
	ctx    context.Context
	cancel context.CancelFunc
	conns  sync.WaitGroup
	// lock holds the state directory until Shutdown (statelock.go).
	lock *stateLock
	// links mints and checks approval links; nil without a PublicURL.
	links *links
}

// New locks cfg.StateDir (a *StateLockedError when another server holds
// it), loads the sessions and runs saved there (listed idle; a damaged one
// listed damaged) and builds the route table.
func New(cfg Config) (*Server, error) {
	cfg.defaults()
	if cfg.StateDir == "" {
		return nil, errors.New("serve: no state directory")
	}
	lock, err := lockState(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, lock: lock}
	s.cfg.gate = runner.NewSharedGate(cfg.MaxJobs, func(limit int, reason string) {
		s.cfg.Logf("CLIs of sessions and runs at once: %d (%s)", limit, reason)
	})
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if err := s.setupNotify(); err != nil {
		return nil, errors.Join(err, lock.release())
	}
	if s.sessions, err = loadRegistry(&s.cfg); err != nil {
		return nil, errors.Join(err, lock.release())
	}
	if s.runs, err = loadRuns(&s.cfg); err != nil {
		return nil, errors.Join(err, lock.release())
	}
	s.routes = s.routeTable()
	s.handler = s.mount(s.routes)
	return s, nil
}

// Handler is the server's http.Handler.
func (s *Server) Handler() http.Handler { return s.handler }

// Routes is the route table, each with its auth mode (tests walk it).
func (s *Server) Routes() []Route { return s.routes }

// Shutdown ends a server whose http.Server has stopped accepting: it closes
// WebSockets and long polls, shuts every session down (turns interrupted,
// work committed, worktree kept, state saved), stops runs like Ctrl-C and
// closes the event logs. It returns when done or when ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	s.cancel()
	errs := []error{s.sessions.shutdown(ctx), s.runs.shutdown(ctx)}
	done := make(chan struct{})
	go func() { s.conns.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("websocket connections still open: %w", ctx.Err()))
	}
	return errors.Join(append(errs, s.lock.release())...)
}
