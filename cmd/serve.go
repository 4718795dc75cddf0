package cmd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"
	"golang.org/x/net/netutil"

	"github.com/pneuma-cli/pneuma/claude"
	"github.com/pneuma-cli/pneuma/notify"
	"github.com/pneuma-cli/pneuma/runner"
	"github.com/pneuma-cli/pneuma/serve"
	"github.com/pneuma-cli/pneuma/serve/web"
)

// ServeOptions are the typed settings of `pneuma serve`.
type ServeOptions struct {
	Addr             string   `mapstructure:"addr"`
	TokenFile        string   `mapstructure:"token_file"`
	ReadTokenFile    string   `mapstructure:"read_token_file"`
	OperateTokenFile string   `mapstructure:"operate_token_file"`
	Root             []string `mapstructure:"root"`
	MaxSessions      int      `mapstructure:"max_sessions"`
	MaxJobs          int      `mapstructure:"max_jobs"`
	MaxConns         int      `mapstructure:"max_conns"`
	StateDir         string   `mapstructure:"state_dir"`
	AllowOrigin      []string `mapstructure:"allow_origin"`
	Claude           string   `mapstructure:"claude"`
	Config           string   `mapstructure:"config"`
	TLSCert          string   `mapstructure:"tls_cert"`
	TLSKey           string   `mapstructure:"tls_key"`
	InsecureHTTP     bool     `mapstructure:"insecure_http"`
	PublicURL        string   `mapstructure:"public_url"`
	AccessLog        string   `mapstructure:"access_log"`
	// The client policy (serve.Policy).
	ClientAllow           []string      `mapstructure:"client_allow"`
	ClientPermissionModes []string      `mapstructure:"client_permission_mode"`
	ClientMaxTurns        int           `mapstructure:"client_max_turns"`
	ClientMaxBudgetUSD    float64       `mapstructure:"client_max_budget_usd"`
	ClientMaxTimeout      time.Duration `mapstructure:"client_max_timeout"`
	ClientSandbox         bool          `mapstructure:"client_sandbox"`
	IdleTimeout           time.Duration `mapstructure:"idle_timeout"`
	MetricsAddr           string        `mapstructure:"metrics_addr"`
	LinkTTL               time.Duration `mapstructure:"link_ttl"`
	// Notify are the config file's notification targets (docs/notifications.md).
	Notify []notify.Target `mapstructure:"notify"`
}

const serveLong = `Serve sessions (Claude Code jobs you talk to) and runs over HTTP and
WebSocket, with the web console at /.

Every route but /healthz, the console's static files and the page of an
approval link (/approve/..., docs/notifications.md) needs
Authorization: Bearer <token>. Without --token-file a token is generated and
printed once, in the URL's fragment. A non-loopback --addr needs --token-file
and TLS (--tls-cert/--tls-key), or --insecure-http behind a TLS proxy.
--read-token-file and --operate-token-file add tokens that may only watch,
or watch and operate (start, send, answer, interrupt, close).

What clients may ask for is an allowlist (docs/serve.md, "Security"):
fields that run or read something on the host (verify, extra_args,
mcp_config, settings, env, add_dirs, plugin_dirs, agent, worktree: false,
remote, push, pull_request) are refused unless named in --client-allow; permission modes
are limited to --client-permission-mode (default: default, acceptEdits,
plan). A token with everything allowed is a shell on the host.

Settings come from flags, then PNEUMA_* environment variables (PNEUMA_ADDR,
PNEUMA_TOKEN_FILE, ...), then a config file (--config, or pneuma.yaml), which
also holds the notify: targets (docs/notifications.md).

EXIT STATUS
  0    stopped by SIGINT or SIGTERM (sessions shut down, work committed)
  2    usage or configuration error (non-loopback address without a token)
  3    environment error (the address cannot be bound, a TLS file cannot be read,
       the state directory is in use by another server)
  130  killed by a second signal`

// NewCmdServe builds `pneuma serve`. runF replaces the server in tests.
func NewCmdServe(io *IO, runF func(context.Context, *ServeOptions) error) *cobra.Command {
	v := viper.New()
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve sessions and runs over HTTP and WebSocket",
		Long:  serveLong,
		Example: `  pneuma serve
  pneuma serve --addr :7077 --token-file /run/secrets/pneuma --root ~/src --max-sessions 8 \
    --tls-cert /etc/pneuma/cert.pem --tls-key /etc/pneuma/key.pem --public-url https://pneuma.example:7077`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			opts, err := loadServeOptions(v, c, io)
			if err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runServe(c.Context(), io, opts)
		},
	}
	f := cmd.Flags()
	f.String("addr", "127.0.0.1:7077", "address to listen on")
	f.String("token-file", "", "file holding the bearer token (default: a generated token, printed once)")
	f.StringArray("root", nil, "directory under which session and run repositories must be (repeatable; default: the working directory)")
	f.String("read-token-file", "", "file holding a token that may only watch (GET routes, following over WebSocket)")
	f.String("operate-token-file", "", "file holding a token that may watch and operate (start runs and sessions, send, answer, interrupt, close)")
	f.Int("max-sessions", 4, "sessions open at once")
	f.Int("max-jobs", 8, "agents at work at once across the server: each open session counts one, each run its concurrency")
	f.Int("max-conns", 256, "connections at once (further ones wait)")
	f.String("tls-cert", "", "TLS certificate file (PEM); with --tls-key the server speaks HTTPS")
	f.String("tls-key", "", "TLS private key file (PEM)")
	f.Bool("insecure-http", false, "allow plain HTTP on a non-loopback --addr (behind a TLS-terminating proxy)")
	f.String("public-url", "", "the URL clients reach the server by (its host is the Host header allowed besides the --addr's; permission notifications link to it)")
	f.Duration("link-ttl", serve.DefaultLinkTTL, "how long the approval link of a permission notification works (it needs --public-url)")
	f.String("access-log", "-", "where the access log goes: a file, - for stderr, off for none")
	f.StringArray("client-allow", nil, "a host-reaching field clients may set: verify, extra_args, mcp_config, settings, env, add_dirs, plugin_dirs, agent, no_worktree, remote, push, pull_request, sandbox_network, sandbox_read, sandbox_write, notify (repeatable)")
	f.StringArray("client-permission-mode", nil, "a permission mode clients may use (repeatable; default: default, acceptEdits, plan)")
	f.Int("client-max-turns", 0, "the largest max_turns a client may set (0: no cap)")
	f.Float64("client-max-budget-usd", 0, "the largest budget a client may set, per job or run (0: no cap)")
	f.Duration("client-max-timeout", 0, "the largest timeout or idle_timeout a client may set (0: no cap)")
	f.Duration("idle-timeout", 2*time.Minute, "close a keep-alive connection idle this long")
	f.Bool("client-sandbox", false, "run every job and session a client starts in pneuma's sandbox (bubblewrap; sandbox: false is refused)")
	f.String("state-dir", "", "where sessions and runs keep their state (default: .pneuma/serve)")
	f.StringArray("allow-origin", nil, "a foreign browser origin allowed to call the API (repeatable; * for any)")
	f.String("claude", "", "path of the claude CLI (default: claude on PATH)")
	f.String("config", "", "config file (default: pneuma.yaml in the current directory, if any)")
	f.String("metrics-addr", "", "serve /metrics on this address of its own, without a token (default: /metrics on --addr, behind the token)")
	return cmd
}

// loadServeOptions reads the settings of `pneuma serve` (loadSettings).
func loadServeOptions(v *viper.Viper, c *cobra.Command, io *IO) (*ServeOptions, error) {
	var o ServeOptions
	if err := loadSettings(v, c, io, &o); err != nil {
		return nil, err
	}
	return &o, nil
}

// runServe is `pneuma serve`: it serves until the first signal, then shuts
// every session down within a bounded time; a second signal stops waiting.
func runServe(ctx context.Context, io *IO, o *ServeOptions) error {
	debug.SetGCPercent(runGCPercent(debug.SetGCPercent(-1), io.Getenv("GOGC"))) // as a run's, for the runs it serves
	wd, err := os.Getwd()
	if err != nil {
		return &ExitError{Code: ExitEnvironment, Err: err}
	}
	token, generated, err := serveToken(o)
	if err != nil {
		return err
	}
	if err := checkTransport(o); err != nil {
		return err
	}
	cfg, err := serveConfig(ctx, io, o, wd, token)
	if err != nil {
		return err
	}
	tel, stopTelemetry, err := startTelemetry(ctx, io, true)
	if err != nil {
		return err
	}
	defer stopTelemetry()
	cfg.Telemetry, cfg.Metrics, cfg.Counters, cfg.SessionEvents = tel.Wire, tel.MetricsHandler(), tel, tel.SessionEvent
	if o.MetricsAddr != "" {
		addr, stop, err := serveMetrics(o.MetricsAddr, cfg.Metrics)
		if err != nil {
			return &ExitError{Code: ExitEnvironment, Err: err}
		}
		defer stop()
		cfg.Metrics = nil
		fmt.Fprintf(io.ErrOut, "pneuma serve: metrics at http://%s/metrics\n", addr)
	}
	notes, stopNotify, err := startNotify(ctx, io, o.Notify)
	if err != nil {
		return err
	}
	defer stopNotify()
	cfg.Notifier, cfg.PublicURL, cfg.LinkTTL = notes, o.PublicURL, o.LinkTTL
	if cfg.Tokens, err = scopedTokens(o, token); err != nil {
		return err
	}
	logFile, err := accessLog(io, o.AccessLog)
	if err != nil {
		return err
	}
	if logFile != nil {
		defer logFile.Close()
		cfg.AccessLog = serve.NewAccessLog(logFile)
	} else if o.AccessLog == "-" || o.AccessLog == "" {
		cfg.AccessLog = serve.NewAccessLog(io.ErrOut)
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return &ExitError{Code: ExitEnvironment, Err: fmt.Errorf("listen on %s: %w", o.Addr, err)}
	}
	if cfg.AllowHosts, err = allowedHosts(o, ln.Addr()); err != nil {
		ln.Close()
		return err
	}
	srv, err := serve.New(cfg)
	if err != nil {
		ln.Close()
		return &ExitError{Code: ExitEnvironment, Err: err}
	}
	scheme := "http"
	if o.TLSCert != "" {
		scheme = "https"
	}
	url := scheme + "://" + ln.Addr().String() + "/"
	if generated {
		url += "#token=" + token
	}
	fmt.Fprintf(io.Out, "pneuma serve: %s\n", url)
	sayApprovalLinks(io, notes, srv)
	hs := &http.Server{Handler: tel.HTTP(srv.Handler()), ConnState: tel.ConnState, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: max(o.IdleTimeout, time.Millisecond), MaxHeaderBytes: 64 << 10}
	ln = netutil.LimitListener(ln, max(o.MaxConns, 1))
	served := make(chan error, 1)
	go func() {
		if o.TLSCert != "" {
			served <- hs.ServeTLS(ln, o.TLSCert, o.TLSKey)
			return
		}
		served <- hs.Serve(ln)
	}()
	select {
	case <-ctx.Done():
	case err := <-served:
		_ = srv.Shutdown(context.Background())
		return &ExitError{Code: ExitEnvironment, Err: fmt.Errorf("serve: %w", err)}
	}
	return stopServer(ctx, io, hs, srv)
}

// checkTransport refuses a non-loopback address without TLS (unless
// --insecure-http) and half a TLS configuration.
func checkTransport(o *ServeOptions) error {
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return &ExitError{Code: ExitUsage, Err: errors.New("--tls-cert and --tls-key go together")}
	}
	if o.TLSCert == "" && !o.InsecureHTTP && !isLoopback(o.Addr) {
		return &ExitError{Code: ExitUsage, Err: fmt.Errorf("refusing to serve plain HTTP on %s: it is not a loopback address, and the token would cross the network in clear; give --tls-cert and --tls-key, or --insecure-http behind a TLS-terminating proxy", o.Addr)}
	}
	// /metrics on its own listener has no token: off loopback it tells
	// anyone what the server spends and runs, so the operator says so.
	if o.MetricsAddr != "" && !o.InsecureHTTP && !isLoopback(o.MetricsAddr) {
		return &ExitError{Code: ExitUsage, Err: fmt.Errorf("refusing --metrics-addr %s: it is not a loopback address and /metrics there has no token; bind it to loopback, or give --insecure-http to expose it", o.MetricsAddr)}
	}
	return nil
}

// allowedHosts are the Host headers the server answers: for a loopback
// bind, localhost, 127.0.0.1 and [::1] with the port; else the --addr's
// host with the port; and --public-url's host. A bind to all interfaces
// without --public-url has no name to check against and is refused.
func allowedHosts(o *ServeOptions, addr net.Addr) ([]string, error) {
	host, _, _ := net.SplitHostPort(o.Addr)
	_, port, _ := net.SplitHostPort(addr.String())
	var hosts []string
	switch {
	case isLoopback(o.Addr):
		for _, h := range []string{"localhost", "127.0.0.1", "[::1]"} {
			hosts = append(hosts, h+":"+port)
		}
	case host != "" && !net.ParseIP(host).IsUnspecified():
		hosts = append(hosts, strings.ToLower(net.JoinHostPort(host, port)))
	}
	if o.PublicURL != "" {
		u, err := neturl.Parse(o.PublicURL)
		if err != nil || u.Host == "" {
			return nil, &ExitError{Code: ExitUsage, Err: fmt.Errorf("--public-url %q: not a URL with a host", o.PublicURL)}
		}
		hosts = append(hosts, strings.ToLower(u.Host))
		if u.Port() == "" {
			hosts = append(hosts, strings.ToLower(u.Hostname()))
		}
	}
	if len(hosts) == 0 {
		return nil, &ExitError{Code: ExitUsage, Err: fmt.Errorf("--addr %s listens on every interface: give --public-url, the URL clients use, so that the Host header can be checked", o.Addr)}
	}
	return hosts, nil
}

// accessLog opens --access-log: nil for stderr ("-") or none ("off").
func accessLog(io *IO, path string) (*os.File, error) {
	if path == "" || path == "-" || path == "off" {
		return nil, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, &ExitError{Code: ExitEnvironment, Err: fmt.Errorf("--access-log: %w", err)}
	}
	return f, nil
}

// shutdownTimeout bounds a graceful stop.
const shutdownTimeout = 60 * time.Second

// stopServer stops accepting, then shuts sessions and runs down; a second
// signal cancels the wait.
func stopServer(ctx context.Context, io *IO, hs *http.Server, srv *serve.Server) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if kill := killSignal(ctx); kill != nil {
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			select {
			case <-kill:
				cancel()
			case <-stop:
			}
		}()
	}
	herr := hs.Shutdown(sctx)
	serr := srv.Shutdown(sctx)
	_ = hs.Close()
	if k := killSignal(ctx); k != nil {
		select {
		case <-k:
			return &SilentError{Code: ExitInterrupted}
		default:
		}
	}
	if err := errors.Join(herr, serr); err != nil {
		fmt.Fprintf(io.ErrOut, "pneuma serve: stopped with errors: %v\n", err)
	}
	return nil
}

// serveToken reads --token-file, or generates a token (only for a loopback
// address: anyone who can reach the port could otherwise use it).
func serveToken(o *ServeOptions) (token string, generated bool, err error) {
	if o.TokenFile != "" {
		token, err := readToken("--token-file", o.TokenFile)
		return token, false, err
	}
	if !isLoopback(o.Addr) {
		return "", false, &ExitError{Code: ExitUsage, Err: fmt.Errorf("refusing to serve on %s without --token-file: it is not a loopback address", o.Addr)}
	}
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:]), true, nil
}

// readToken reads a token file: at least 16 characters, surrounding
// space trimmed. Errors name the flag and file, never the content.
func readToken(flag, path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", &ExitError{Code: ExitUsage, Err: fmt.Errorf("%s: %w", flag, err)}
	}
	token := strings.TrimSpace(string(data))
	if len(token) < 16 {
		return "", &ExitError{Code: ExitUsage, Err: fmt.Errorf("%s %s: the token must be at least 16 characters", flag, path)}
	}
	return token, nil
}

// scopedTokens reads --read-token-file and --operate-token-file; each
// token must differ from the others.
func scopedTokens(o *ServeOptions, full string) ([]serve.Token, error) {
	seen := map[string]string{full: "--token-file"}
	var out []serve.Token
	for _, t := range []struct {
		flag, path string
		scope      serve.Scope
	}{{"--read-token-file", o.ReadTokenFile, serve.ScopeRead}, {"--operate-token-file", o.OperateTokenFile, serve.ScopeOperate}} {
		if t.path == "" {
			continue
		}
		tok, err := readToken(t.flag, t.path)
		if err != nil {
			return nil, err
		}
		if other, dup := seen[tok]; dup {
			return nil, &ExitError{Code: ExitUsage, Err: fmt.Errorf("%s holds the same token as %s", t.flag, other)}
		}
		seen[tok] = t.flag
		out = append(out, serve.Token{Scope: t.scope, Value: tok})
	}
	return out, nil
}

// isLoopback: "127.0.0.1:7077", "[::1]:7077", "localhost:7077"; an empty
// host (all interfaces) is not.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// serveConfig resolves the server's settings.
func serveConfig(ctx context.Context, io *IO, o *ServeOptions, wd, token string) (serve.Config, error) {
	roots := o.Root
	if len(roots) == 0 {
		roots = []string{wd}
	}
	for i, r := range roots {
		abs, err := filepath.Abs(r)
		if err != nil {
			return serve.Config{}, &ExitError{Code: ExitUsage, Err: fmt.Errorf("--root %s: %w", r, err)}
		}
		roots[i] = abs
	}
	state := o.StateDir
	if state == "" {
		state = runner.RepoLayout(wd).Serve()
	}
	bin, err := claude.Find(o.Claude, exec.LookPath)
	if err != nil {
		fmt.Fprintf(io.ErrOut, "pneuma serve: %v (sessions and runs will fail until it is installed)\n", err)
		bin = "claude"
	}
	for _, f := range o.ClientAllow {
		if !slices.Contains(serve.GatedFields, f) {
			return serve.Config{}, &ExitError{Code: ExitUsage, Err: fmt.Errorf("--client-allow %q: not one of %s", f, strings.Join(serve.GatedFields, ", "))}
		}
	}
	return serve.Config{
		Token: token, Roots: roots, MaxSessions: o.MaxSessions, MaxJobs: o.MaxJobs, StateDir: state, AllowOrigins: o.AllowOrigin,
		Policy: serve.Policy{Allow: o.ClientAllow, PermissionModes: o.ClientPermissionModes,
			MaxTurns: o.ClientMaxTurns, MaxBudgetUSD: o.ClientMaxBudgetUSD, MaxTimeout: o.ClientMaxTimeout,
			Sandbox: o.ClientSandbox},
		WorkDir: wd, Binary: bin, Environ: os.Environ(), Getenv: io.Getenv,
		Engine:  serve.RunnerEngine,
		Version: Version, CLIVersion: cliVersion(ctx, bin),
		Web:  web.Handler(),
		Kill: killSignal(ctx),
		Logf: func(format string, args ...any) { fmt.Fprintf(io.ErrOut, "pneuma serve: "+format+"\n", args...) },
	}, nil
}

// cliVersion asks the CLI its version, for /api/health ("" if it cannot say).
func cliVersion(ctx context.Context, bin string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := claude.Version(ctx, bin)
	if err != nil {
		return ""
	}
	return v
}
