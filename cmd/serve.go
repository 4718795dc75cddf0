package cmd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/pneuma-cli/pneuma/claude"
	"github.com/pneuma-cli/pneuma/runner"
	"github.com/pneuma-cli/pneuma/serve"
	"github.com/pneuma-cli/pneuma/serve/web"
)

// ServeOptions are the typed settings of `pneuma serve`.
type ServeOptions struct {
	Addr        string   `mapstructure:"addr"`
	TokenFile   string   `mapstructure:"token_file"`
	Root        []string `mapstructure:"root"`
	MaxSessions int      `mapstructure:"max_sessions"`
	StateDir    string   `mapstructure:"state_dir"`
	AllowOrigin []string `mapstructure:"allow_origin"`
	Claude      string   `mapstructure:"claude"`
	Config      string   `mapstructure:"config"`
	MetricsAddr string   `mapstructure:"metrics_addr"`
}

const serveLong = `Serve sessions (Claude Code jobs you talk to) and runs over HTTP and
WebSocket, with the web console at /.

Every route but /healthz and the console's static files needs
Authorization: Bearer <token>. Without --token-file a token is generated and
printed once, in the URL's fragment. A non-loopback --addr needs --token-file.

Settings come from flags, then PNEUMA_* environment variables (PNEUMA_ADDR,
PNEUMA_TOKEN_FILE, ...), then a config file (--config, or pneuma.yaml).

EXIT STATUS
  0    stopped by SIGINT or SIGTERM (sessions shut down, work committed)
  2    usage or configuration error (non-loopback address without a token)
  3    environment error (the address cannot be bound)
  130  killed by a second signal`

// NewCmdServe builds `pneuma serve`. runF replaces the server in tests.
func NewCmdServe(io *IO, runF func(context.Context, *ServeOptions) error) *cobra.Command {
	v := viper.New()
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve sessions and runs over HTTP and WebSocket",
		Long:  serveLong,
		Example: `  pneuma serve
  pneuma serve --addr :7077 --token-file /run/secrets/pneuma --root ~/src --max-sessions 8`,
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
	f.Int("max-sessions", 4, "sessions open at once")
	f.String("state-dir", "", "where sessions and runs keep their state (default: .pneuma/serve)")
	f.StringArray("allow-origin", nil, "a foreign browser origin allowed to call the API (repeatable; * for any)")
	f.String("claude", "", "path of the claude CLI (default: claude on PATH)")
	f.String("config", "", "config file (default: pneuma.yaml in the current directory, if any)")
	f.String("metrics-addr", "", "serve /metrics on this address of its own, without a token (default: /metrics on --addr, behind the token)")
	return cmd
}

// loadServeOptions reads flags, PNEUMA_* variables and the config file the
// way `pneuma run` does (bindSettings is loadRunOptions' binding half; the
// two should share it once run.go can change).
func loadServeOptions(v *viper.Viper, c *cobra.Command, io *IO) (*ServeOptions, error) {
	if err := bindSettings(v, c, io); err != nil {
		return nil, err
	}
	var o ServeOptions
	if err := v.UnmarshalExact(&o); err != nil {
		return nil, &ExitError{Code: ExitUsage, Err: fmt.Errorf("settings: %w", err)}
	}
	return &o, nil
}

// bindSettings binds every flag of c to v, with PNEUMA_* variables and the
// config file (--config, PNEUMA_CONFIG or ./pneuma.yaml) under them.
func bindSettings(v *viper.Viper, c *cobra.Command, io *IO) error {
	c.Flags().VisitAll(func(fl *pflag.Flag) {
		if fl.Name == "help" {
			return
		}
		key := strings.ReplaceAll(fl.Name, "-", "_")
		_ = v.BindPFlag(key, fl)
		_ = v.BindEnv(key, "PNEUMA_"+strings.ToUpper(key))
	})
	cfg, _ := c.Flags().GetString("config")
	if cfg == "" {
		cfg = io.Getenv("PNEUMA_CONFIG")
	}
	if cfg == "" {
		if _, err := os.Stat("pneuma.yaml"); err != nil {
			return nil
		}
		cfg = "pneuma.yaml"
	}
	v.SetConfigFile(cfg)
	if err := v.ReadInConfig(); err != nil {
		return &ExitError{Code: ExitUsage, Err: fmt.Errorf("read config file %s: %w", cfg, err)}
	}
	return nil
}

// runServe is `pneuma serve`: it serves until the first signal, then shuts
// every session down within a bounded time; a second signal stops waiting.
func runServe(ctx context.Context, io *IO, o *ServeOptions) error {
	wd, err := os.Getwd()
	if err != nil {
		return &ExitError{Code: ExitEnvironment, Err: err}
	}
	token, generated, err := serveToken(o)
	if err != nil {
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
	srv, err := serve.New(cfg)
	if err != nil {
		return &ExitError{Code: ExitEnvironment, Err: err}
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		_ = srv.Shutdown(context.Background())
		return &ExitError{Code: ExitEnvironment, Err: fmt.Errorf("listen on %s: %w", o.Addr, err)}
	}
	url := "http://" + ln.Addr().String() + "/"
	if generated {
		url += "#token=" + token
	}
	fmt.Fprintf(io.Out, "pneuma serve: %s\n", url)
	hs := &http.Server{Handler: tel.HTTP(srv.Handler()), ConnState: tel.ConnState, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err := <-served:
		_ = srv.Shutdown(context.Background())
		return &ExitError{Code: ExitEnvironment, Err: fmt.Errorf("serve: %w", err)}
	}
	return stopServer(ctx, io, hs, srv)
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
		data, err := os.ReadFile(o.TokenFile)
		if err != nil {
			return "", false, &ExitError{Code: ExitUsage, Err: fmt.Errorf("--token-file: %w", err)}
		}
		token = strings.TrimSpace(string(data))
		if len(token) < 16 {
			return "", false, &ExitError{Code: ExitUsage, Err: fmt.Errorf("--token-file %s: the token must be at least 16 characters", o.TokenFile)}
		}
		return token, false, nil
	}
	if !isLoopback(o.Addr) {
		return "", false, &ExitError{Code: ExitUsage, Err: fmt.Errorf("refusing to serve on %s without --token-file: it is not a loopback address", o.Addr)}
	}
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:]), true, nil
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
	return serve.Config{
		Token: token, Roots: roots, MaxSessions: o.MaxSessions, StateDir: state, AllowOrigins: o.AllowOrigin,
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
