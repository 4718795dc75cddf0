package runner

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pneuma-cli/pneuma/claude"
	"github.com/pneuma-cli/pneuma/jobfile"
	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/sandbox"
)

// A job with a sandbox (sandbox job field, --sandbox) runs its CLI and its
// verify commands under bubblewrap, with a network proxy of its own for
// the life of the job. The box rides in the job's context, so that every
// place that starts one of its processes confines it.

type boxKey struct{}

func withBox(ctx context.Context, b *sandbox.Box) context.Context {
	if b == nil {
		return ctx
	}
	return context.WithValue(ctx, boxKey{}, b)
}

// boxOf is the sandbox of the job ctx belongs to (nil: none).
func boxOf(ctx context.Context) *sandbox.Box {
	b, _ := ctx.Value(boxKey{}).(*sandbox.Box)
	return b
}

func firstBox(a, b *sandbox.Box) *sandbox.Box {
	if a != nil {
		return a
	}
	return b
}

// confine makes cfg start the CLI inside box (nil: no sandbox), with
// Claude Code's own Bash sandbox off: it cannot nest inside pneuma's.
func confine(box *sandbox.Box, cfg *claude.Config) error {
	if box == nil {
		return nil
	}
	settings, err := sandbox.CLISettings(cfg.Options.Settings)
	if err != nil {
		return err
	}
	cfg.Options.Settings = settings
	// A config file outside the sandbox's view is read here and passed inline.
	if m := cfg.Options.MCPConfig; m != "" && !strings.HasPrefix(strings.TrimSpace(m), "{") {
		data, err := os.ReadFile(m)
		if err != nil {
			return fmt.Errorf("sandbox: read mcp_config: %w", err)
		}
		cfg.Options.MCPConfig = string(data)
	}
	cfg.Launch = box.Prefix(cfg.Dir)
	cfg.Signal = sandbox.Signal
	cfg.Env = box.Env(cfg.Env)
	return nil
}

// planSandbox settles a job's sandbox: --sandbox turns it on; its paths
// are resolved against the jobs file's directory and must exist.
func (pl *planner) planSandbox(j *Job, spec jobfile.Job) {
	switch {
	case pl.o.Sandbox && spec.Sandbox.On():
		s := *spec.Sandbox
		j.Sandbox = &s
	case pl.o.Sandbox:
		j.Sandbox = &sandbox.Spec{Enabled: true}
	case spec.Sandbox.On():
		s := *spec.Sandbox
		j.Sandbox = &s
	default:
		return
	}
	j.Sandbox.Read = resolvePaths(pl.fileDir, j.Sandbox.Read)
	j.Sandbox.Write = resolvePaths(pl.fileDir, j.Sandbox.Write)
	for _, p := range slices.Concat(j.Sandbox.Read, j.Sandbox.Write) {
		if _, err := os.Stat(p); err != nil {
			pl.problem(spec.PosOf("sandbox"), "sandbox: %s: %v", p, pathErr(err))
		}
	}
}

// checkSandbox fails the plan (exit 3, before any job starts) when a job
// asks for a sandbox that cannot start here.
func (pl *planner) checkSandbox() {
	for _, j := range pl.p.Jobs {
		if !j.Sandbox.On() {
			continue
		}
		if _, err := sandbox.Check(); err != nil {
			pl.envErrs = append(pl.envErrs, fmt.Errorf("job %q asks for a sandbox, which cannot start here: %w", j.Name, err))
		}
		return
	}
}

// sessionSandbox settles a session's sandbox: its paths resolved against
// the server's working directory, and a sandbox that cannot start refused
// before the session opens.
func sessionSandbox(j *Job, spec jobfile.Job, workDir string) error {
	if !spec.Sandbox.On() {
		return nil
	}
	s := *spec.Sandbox
	s.Read, s.Write = resolvePaths(workDir, s.Read), resolvePaths(workDir, s.Write)
	for _, p := range slices.Concat(s.Read, s.Write) {
		if _, err := os.Stat(p); err != nil {
			return &ConfigError{fmt.Errorf("sandbox: %s: %s", p, pathErr(err))}
		}
	}
	if _, err := sandbox.Check(); err != nil {
		return &EnvError{fmt.Errorf("the session asks for a sandbox, which cannot start here: %w", err)}
	}
	j.Sandbox = &s
	return nil
}

// UnsandboxedBypass names the jobs of p that run in bypassPermissions
// without a sandbox: nothing but policy stands between them and the
// machine.
func UnsandboxedBypass(p *Plan) []string {
	var names []string
	for _, j := range p.Jobs {
		if j.Options.PermissionMode == "bypassPermissions" && !j.Sandbox.On() {
			names = append(names, j.Name)
		}
	}
	return names
}

// openSandbox prepares a sandboxed job's box (nil for other jobs) and
// points the job's CLAUDE_CONFIG_DIR at the box's private copy, where its
// transcripts are then found.
func (r *run) openSandbox(job *Job) (*sandbox.Box, error) {
	return openBox(job, r.opts.Environ, firstNonEmpty(job.Binary, r.plan.Binary), &r.idents)
}

// openBox opens job's box under pneuma's environment environ, for the CLI
// binary (nil when the job has no sandbox), with the git identity its
// repository resolves to from idents.
func openBox(job *Job, environ []string, binary string, idents *identities) (*sandbox.Box, error) {
	if !job.Sandbox.On() {
		return nil, nil
	}
	bwrap, err := sandbox.Check()
	if err != nil {
		return nil, err
	}
	env := envLookup(childEnv(environ, job.Env))
	home := env("HOME")
	src, js := env("CLAUDE_CONFIG_DIR"), ""
	if src == "" && home != "" {
		src, js = filepath.Join(home, ".claude"), filepath.Join(home, ".claude.json")
	}
	spec := *job.Sandbox
	name, email := idents.of(firstNonEmpty(job.Repo, job.Dir), environ)
	// The CLI is given its add_dirs and plugin_dirs to read: they are
	// opened read-only.
	spec.Read = slices.Concat(spec.Read, job.Options.AddDirs, job.Options.PluginDirs)
	box, err := sandbox.Open(sandbox.Config{
		Spec: spec, Bwrap: bwrap, Dir: job.Dir, Repo: job.Repo,
		Binary: binary, Home: home, ConfigSrc: src, ConfigJSON: js,
		StateDir: filepath.Join(job.JobDir, "sandbox"), APIURL: env("ANTHROPIC_BASE_URL"),
		GitName: name, GitEmail: email,
	})
	if err != nil {
		return nil, fmt.Errorf("open the sandbox of job %q: %w", job.Name, err)
	}
	jobEnv := maps.Clone(job.Env)
	if jobEnv == nil {
		jobEnv = map[string]string{}
	}
	jobEnv["CLAUDE_CONFIG_DIR"] = box.ConfigDir()
	job.Env = jobEnv
	return box, nil
}

// identities are the git identities of a run's repositories, each asked
// of git once per run (see gitIdentity), not once per sandboxed job: a
// process per job start costs milliseconds. The zero value is ready.
type identities struct {
	mu sync.Mutex
	m  map[string]*identity
}

type identity struct {
	once        sync.Once
	name, email string
}

// of is user.name and user.email as the repository at dir resolves them
// under environ, asked of git on the first call for dir.
func (ids *identities) of(dir string, environ []string) (name, email string) {
	ids.mu.Lock()
	id := ids.m[dir]
	if id == nil {
		if ids.m == nil {
			ids.m = map[string]*identity{}
		}
		id = &identity{}
		ids.m[dir] = id
	}
	ids.mu.Unlock()
	id.once.Do(func() { id.name, id.email = gitIdentity(dir, environ) })
	return id.name, id.email
}

// gitIdentity is user.name and user.email as dir resolves them under
// pneuma's environment ("" when unset), for the agent's own commits in a
// sandbox, where the user's ~/.gitconfig is hidden. One git process for
// both. It is asked at the repository's root, once per run (identities):
// a conditional include on the branch (includeIf "onbranch:") does not
// change a job's identity.
func gitIdentity(dir string, environ []string) (name, email string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "-C", dir, "config", "--get-regexp", `^user\.(name|email)$`)
	cmd.Env = environ
	out, err := cmd.Output()
	if err != nil {
		return "", "" // unset: git inside asks as it would anywhere
	}
	for line := range strings.Lines(string(out)) {
		key, value, _ := strings.Cut(strings.TrimRight(line, "\n"), " ")
		switch key { // git prints keys lower-case; the last value wins, as for git config --get
		case "user.name":
			name = value
		case "user.email":
			email = value
		}
	}
	return name, email
}

// closeSandbox stops a job's proxy (nil: no sandbox).
func closeSandbox(box *sandbox.Box) {
	if box != nil {
		_ = box.Close() // the proxy's end; the job's outcome is already settled
	}
}

// noteSandbox puts a job's sandbox in its report, with a warning when its
// proxy refused connections.
func noteSandbox(res *report.Job, box *sandbox.Box) {
	res.Sandbox = sandboxReport(box)
	if res.Sandbox == nil {
		return
	}
	for _, e := range res.Sandbox.RefErrors {
		res.Warnings = append(res.Warnings, report.Warning{Code: report.WarnSandboxRef, Message: e})
	}
	if res.Sandbox.RefusedCount == 0 {
		return
	}
	hosts := make([]string, 0, 5)
	for i, h := range res.Sandbox.Refused {
		if i == 5 {
			hosts = append(hosts, fmt.Sprintf("and %d more", len(res.Sandbox.Refused)-5))
			break
		}
		hosts = append(hosts, fmt.Sprintf("%s (%d)", h.Host, h.Count))
	}
	res.Warnings = append(res.Warnings, report.Warning{Code: report.WarnSandboxRefused,
		Message: fmt.Sprintf("the sandbox refused %d connection(s): %s; list a host the job needs in sandbox.network",
			res.Sandbox.RefusedCount, strings.Join(hosts, ", "))})
}

// sandboxReport is the report's view of a job's box (nil: no sandbox).
func sandboxReport(box *sandbox.Box) *report.Sandbox {
	if box == nil {
		return nil
	}
	rep := box.Report()
	out := &report.Sandbox{Network: rep.Network, Read: rep.Read, Write: rep.Write}
	for _, h := range rep.Refused {
		out.Refused = append(out.Refused, report.RefusedHost{Host: h.Host, Count: h.Count})
		out.RefusedCount += h.Count
	}
	for _, d := range rep.Denied {
		out.Denied = append(out.Denied, report.DeniedPath{Op: d.Op, Path: d.Path, Count: d.Count})
		if d.Op == "read" {
			out.DeniedReads += d.Count
		} else {
			out.DeniedWrites += d.Count
		}
	}
	out.RefErrors = rep.RefErrors
	return out
}
