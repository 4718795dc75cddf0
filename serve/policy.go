package serve

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/pneuma-cli/pneuma/internal/safefile"
	"github.com/pneuma-cli/pneuma/jobfile"
	"github.com/pneuma-cli/pneuma/runner"
)

// Policy is what a client may ask of the server: an allowlist, restrictive
// by default. A client sets the prompt, the model, a permission mode of
// PermissionModes, limits within the caps and a repository under a root;
// every field that runs or reads something on the host is refused unless
// the operator named it in Allow. A field nobody classified (one added to
// the jobs file later) is refused: see jobFieldClass.
type Policy struct {
	// Allow names the host-reaching fields clients may set: "verify",
	// "extra_args", "mcp_config", "settings", "env", "add_dirs",
	// "plugin_dirs", "agent", "no_worktree" (worktree: false), "remote",
	// "push", "pull_request".
	Allow []string
	// PermissionModes are the permission modes a client may ask for
	// (default: default, acceptEdits, plan).
	PermissionModes []string
	// MaxTurns, MaxBudgetUSD and MaxTimeout cap what a client may set for
	// a job or session (0: no cap).
	MaxTurns     int
	MaxBudgetUSD float64
	MaxTimeout   time.Duration
	// Sandbox runs every job and session a client starts in pneuma's
	// sandbox: `sandbox: false` is refused, and hosts a client adds to
	// the sandbox's network need "sandbox_network" in Allow, paths it
	// opens "sandbox_read" or "sandbox_write".
	Sandbox bool
}

// DefaultPermissionModes are the permission modes a client may use unless
// the operator says otherwise: none of them skips the permission checks.
var DefaultPermissionModes = []string{"default", "acceptEdits", "plan"}

// GatedFields are the values of Policy.Allow.
var GatedFields = []string{"verify", "extra_args", "mcp_config", "settings", "env", "add_dirs", "plugin_dirs", "agent", "no_worktree", "remote", "push", "pull_request", "sandbox_network", "sandbox_read", "sandbox_write", "notify"}

// MaxNameBytes bounds a session's or job's name: names become branch
// names and commit messages.
const MaxNameBytes = 200

func (p *Policy) defaults() {
	if len(p.PermissionModes) == 0 {
		p.PermissionModes = DefaultPermissionModes
	}
}

// fieldClass says how the policy treats a job field.
type fieldClass int

const (
	// classClient: any value.
	classClient fieldClass = iota + 1
	// classGated: only with the operator's Allow.
	classGated
	// classFile: a file read for the client, under a root.
	classFile
	// classRepo: a repository under a root (checked with the roots).
	classRepo
	// classMode, className, classTurns, classBudget, classTimeout,
	// classWorktree: values checked against the policy.
	classMode
	className
	classTurns
	classBudget
	classTimeout
	classWorktree
	classSchema
	// classSandbox: paths under a root; off and, when forced, new hosts
	// only with the operator's say.
	classSandbox
	// classAgents: subagent definitions, each permission mode one the
	// policy allows.
	classAgents
)

// jobFieldClass classifies every field of jobfile.Job by its yaml name.
// A field missing here is refused: a new field is closed until someone
// decides whether it reaches the host.
var jobFieldClass = map[string]fieldClass{
	"name": className, "prompt": classClient, "prompts": classClient, "prompt_file": classFile,
	"repo": classRepo, "base": classClient, "model": classClient, "permission_mode": classMode,
	"allowed_tools": classClient, "disallowed_tools": classClient, "tools": classClient,
	"max_turns": classTurns, "max_budget_usd": classBudget,
	"system_prompt": classClient, "append_system_prompt": classClient,
	"timeout": classTimeout, "idle_timeout": classTimeout, "worktree": classWorktree,
	"commit": classClient, "retries": classClient, "policy": classClient,
	"fallback_model": classClient, "expect": classClient, "output_schema": classSchema,
	// Reaching the host: the CLI starts MCP servers' commands, settings
	// carry hooks, apiKeyHelper and env, env redirects the API (and the
	// operator's key) or PATH, verify runs a command, add_dirs opens
	// directories, a job without a worktree edits the repository in place,
	// remote/push/pull_request publish with the operator's credentials.
	"mcp_config": classGated, "add_dirs": classGated, "settings": classGated, "env": classGated,
	"extra_args": classGated, "verify": classGated, "remote": classGated, "push": classGated,
	"pull_request": classGated,
	// A sandbox only takes away (its read and write paths are checked
	// like files); the operator may force it on.
	"sandbox": classSandbox,
	// effort and hook events change nothing outside the CLI; subagents
	// defined inline may not run in a permission mode the server refuses.
	"effort": classClient, "include_hook_events": classClient, "agents": classAgents,
	// A plugin carries hooks and MCP servers (commands on the host); the
	// agent named may be defined by the repository or a plugin with its
	// own permission mode and tools.
	"plugin_dirs": classGated, "agent": classGated,
}

// fileFieldClass classifies the run-level fields of jobfile.File.
var fileFieldClass = map[string]fieldClass{
	"version": classClient, "concurrency": classClient, "budget_usd": classBudget,
	"stagger": classClient, "limits": classClient,
	// A target's URL is a request the server makes (policy_notify.go).
	"notify": classGated,
}

// sessionOwnClass classifies a session request's own fields. resume is
// checked further against the server's sessions (admitSession).
var sessionOwnClass = map[string]fieldClass{
	"resume": classClient, "fork_session": classClient, "permission_prompt": classClient, "permission_timeout": classClient,
}

// PolicyError is a field the policy refuses (403), by its path.
type PolicyError struct {
	Field  string
	Reason string
}

func (e *PolicyError) Error() string { return fmt.Sprintf("%s: %s", e.Field, e.Reason) }

// policyCheck checks one request against the policy and the roots.
type policyCheck struct {
	p     *Policy
	roots []string
	// dir is where relative paths are resolved (the jobs file's directory).
	dir string
	// state is the server's state dir, which no sandbox path may open.
	state string
}

// capJob gives a job the operator's caps as its limits where the client set
// none, so leaving a limit out is never a way past its cap.
func (p *Policy) capJob(spec *jobfile.Job) {
	spec.Cap(p.MaxTurns, p.MaxBudgetUSD, p.MaxTimeout)
	if p.Sandbox {
		spec.ForceSandbox()
	}
}

// refuse is the PolicyError of field f.
func refuse(f, format string, args ...any) *PolicyError {
	return &PolicyError{Field: f, Reason: fmt.Sprintf(format, args...)}
}

// job checks the fields a job (or defaults, or a session) set, prefix being
// its field path ("jobs[2]." or "").
func (c *policyCheck) job(prefix string, spec *jobfile.Job) error {
	v := reflect.ValueOf(spec).Elem()
	t := v.Type()
	for i := range t.NumField() {
		key, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if key == "" || key == "-" {
			continue
		}
		fv := v.Field(i)
		if !spec.IsSet(key) && fv.IsZero() {
			continue
		}
		if err := c.field(prefix+key, jobFieldClass[key], spec, fv); err != nil {
			return err
		}
	}
	return nil
}

// field checks one set field of class cl.
func (c *policyCheck) field(path string, cl fieldClass, spec *jobfile.Job, fv reflect.Value) error {
	switch cl {
	case classClient:
		return nil
	case classGated:
		if err := c.gated(path, lastKey(path)); err != nil {
			return err
		}
		return c.gatedPaths(path, spec)
	case className:
		return checkName(path, spec.Name)
	case classMode:
		if !slices.Contains(c.p.PermissionModes, spec.PermissionMode) {
			return refuse(path, "permission mode %q is not allowed by the server (allowed: %s)", spec.PermissionMode, strings.Join(c.p.PermissionModes, ", "))
		}
	case classTurns:
		if c.p.MaxTurns > 0 && spec.MaxTurns > c.p.MaxTurns {
			return refuse(path, "above the server's cap of %d", c.p.MaxTurns)
		}
	case classBudget:
		if c.p.MaxBudgetUSD > 0 && fv.Float() > c.p.MaxBudgetUSD {
			return refuse(path, "above the server's cap of %g USD", c.p.MaxBudgetUSD)
		}
	case classTimeout:
		if d := time.Duration(fv.Int()); c.p.MaxTimeout > 0 && d > c.p.MaxTimeout {
			return refuse(path, "above the server's cap of %s", c.p.MaxTimeout)
		}
	case classWorktree:
		if spec.Worktree != nil && !*spec.Worktree {
			return c.gated(path, "no_worktree")
		}
	case classFile:
		return c.path(path, fv.String())
	case classSchema:
		if s := spec.OutputSchema; s != "" && !strings.HasPrefix(strings.TrimSpace(string(s)), "{") {
			return c.path(path, string(s))
		}
	case classRepo:
		return c.path(path, spec.Repo)
	case classSandbox:
		return c.sandbox(path, spec)
	case classAgents:
		for _, name := range slices.Sorted(maps.Keys(spec.Agents)) {
			if m := spec.Agents[name].PermissionMode; m != "" && !slices.Contains(c.p.PermissionModes, m) {
				return refuse(path+"."+name+".permissionMode", "permission mode %q is not allowed by the server (allowed: %s)", m, strings.Join(c.p.PermissionModes, ", "))
			}
		}
	default:
		return refuse(path, "the server does not let clients set this field")
	}
	return nil
}

// sandbox checks a job's sandbox field: never off when the operator forces
// it, its paths under a root, its extra hosts allowed when forced.
func (c *policyCheck) sandbox(path string, spec *jobfile.Job) error {
	sb := spec.Sandbox
	if sb == nil {
		return nil
	}
	if !sb.Enabled {
		if c.p.Sandbox {
			return refuse(path, "the server runs every job sandboxed")
		}
		return nil
	}
	if len(sb.Network) > 0 && c.p.Sandbox {
		if err := c.gated(path+".network", "sandbox_network"); err != nil {
			return err
		}
	}
	for _, list := range []struct {
		key   string
		paths []string
	}{{"read", sb.Read}, {"write", sb.Write}} {
		if len(list.paths) > 0 && c.p.Sandbox {
			if err := c.gated(path+"."+list.key, "sandbox_"+list.key); err != nil {
				return err
			}
		}
		for i, p := range list.paths {
			field := fmt.Sprintf("%s.%s[%d]", path, list.key, i)
			if err := c.path(field, p); err != nil {
				return err
			}
			if err := c.sandboxPath(field, p); err != nil {
				return err
			}
		}
	}
	return nil
}

// maxScan bounds the entries sandboxPath looks at below a sandbox path.
const maxScan = 10000

// sandboxPath refuses (400) a sandbox read or write path that is, holds or
// is inside a git dir (a repository's .git, a bare repository), a .pneuma
// (other jobs' worktrees, runs' records) or the server's state dir
// (sessions, runs, tokens). A writable git config names filter drivers
// that the server's own `git add -A` runs on the host; the sandbox binds
// these read-only or hidden after the job's paths anyway (sandbox.protect),
// but only for the job's own repository. A directory with more than
// maxScan entries below it cannot be checked, and is refused too.
func (c *policyCheck) sandboxPath(field, p string) error {
	abs := runner.ResolvePath(c.dir, p)
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	bad := func(why string) error {
		return refuseInput(field, "%s %s: a sandbox path must not open git's or pneuma's own files", p, why)
	}
	if st := c.state; st != "" {
		if a, err := filepath.Abs(st); err == nil {
			st = a
		}
		if real, err := filepath.EvalSymlinks(st); err == nil {
			st = real
		}
		if within(abs, st) || within(st, abs) {
			return bad("is, holds or is inside the server's state dir")
		}
	}
	for d := abs; ; d = filepath.Dir(d) {
		if b := filepath.Base(d); b == ".git" || b == ".pneuma" || gitDirAt(d) {
			return bad("is inside a git dir or .pneuma (" + d + ")")
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	n := 0
	err := filepath.WalkDir(abs, func(q string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable here: unreadable inside too
		}
		if n++; n > maxScan {
			return errTooBig
		}
		if b := e.Name(); q != abs && (b == ".git" || b == ".pneuma") || e.IsDir() && gitDirAt(q) {
			return fmt.Errorf("holds %s", q)
		}
		return nil
	})
	switch {
	case errors.Is(err, errTooBig):
		return bad(fmt.Sprintf("holds more than %d files and directories, too many to check for a git dir", maxScan))
	case err != nil:
		return bad(err.Error() + ", a git dir or .pneuma")
	}
	return nil
}

var errTooBig = errors.New("too big")

// gitDirAt reports whether dir looks like a git dir (HEAD, objects and
// refs), as a bare repository is.
func gitDirAt(dir string) bool {
	for _, n := range []string{"HEAD", "objects", "refs"} {
		if _, err := os.Lstat(filepath.Join(dir, n)); err != nil {
			return false
		}
	}
	return true
}

// within reports whether path is dir or below it (both clean, absolute).
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func (c *policyCheck) gated(path, key string) error {
	if slices.Contains(c.p.Allow, key) {
		return nil
	}
	return refuse(path, "reaches the host; the server does not let clients set it (the operator may allow %q)", key)
}

// gatedPaths checks the files and directories an allowed field names:
// opened or not, they stay under the roots (settings and mcp_config given
// as a file, add_dirs).
func (c *policyCheck) gatedPaths(path string, spec *jobfile.Job) error {
	var paths []string
	switch lastKey(path) {
	case "settings":
		paths = fileOf(spec.Settings)
	case "mcp_config":
		paths = fileOf(spec.MCPConfig)
	case "add_dirs":
		paths = spec.AddDirs
	case "plugin_dirs":
		paths = spec.PluginDirs
	}
	for i, p := range paths {
		field := path
		if k := lastKey(path); k == "add_dirs" || k == "plugin_dirs" {
			field = fmt.Sprintf("%s[%d]", path, i)
		}
		if err := c.path(field, p); err != nil {
			return err
		}
	}
	return nil
}

// fileOf is v as a file path, unless it is inline JSON (the jobs file's
// rule for settings and mcp_config).
func fileOf(v string) []string {
	if t := strings.TrimSpace(v); t == "" || strings.HasPrefix(t, "{") {
		return nil
	}
	return []string{v}
}

// path checks a path a client named against the roots: lexically, then
// resolved. A missing path under a root passes (the plan reports it: 400).
func (c *policyCheck) path(field, p string) error {
	if _, err := safefile.CheckRoots(runner.ResolvePath(c.dir, p), c.roots); err != nil {
		return refuse(field, "%s is not under any root of the server", p)
	}
	return nil
}

// file checks a jobs file's run-level fields, defaults and jobs.
func (c *policyCheck) file(f *jobfile.File) error {
	v := reflect.ValueOf(f).Elem()
	t := v.Type()
	for i := range t.NumField() {
		key, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if key == "" || key == "-" || key == "defaults" || key == "jobs" || v.Field(i).IsZero() {
			continue
		}
		switch cl := fileFieldClass[key]; cl {
		case classClient:
		case classBudget:
			if c.p.MaxBudgetUSD > 0 && f.BudgetUSD > c.p.MaxBudgetUSD {
				return refuse(key, "above the server's cap of %g USD", c.p.MaxBudgetUSD)
			}
		case classGated:
			if err := c.notifyTargets(key, f.Notify); err != nil {
				return err
			}
		default:
			return refuse(key, "the server does not let clients set this field")
		}
	}
	if err := c.job("defaults.", &f.Defaults); err != nil {
		return err
	}
	for i := range f.Jobs {
		if err := c.job(fmt.Sprintf("jobs[%d].", i), &f.Jobs[i]); err != nil {
			return err
		}
		// A job without its own repo or permission mode takes the
		// defaults'; one with neither runs in the server's directory.
		if f.Jobs[i].Repo == "" && f.Defaults.Repo == "" {
			if err := c.path(fmt.Sprintf("jobs[%d].repo", i), c.dir); err != nil {
				return err
			}
		}
	}
	return nil
}

// session checks a session request.
func (c *policyCheck) session(spec *SessionSpec) error {
	if err := c.job("", &spec.Job); err != nil {
		return err
	}
	v := reflect.ValueOf(spec).Elem()
	for i := range v.NumField() {
		key, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		if key == "job" || v.Field(i).IsZero() {
			continue
		}
		if sessionOwnClass[key] != classClient {
			return refuse(key, "the server does not let clients set this field")
		}
	}
	if spec.Job.Repo == "" {
		return c.path("repo", c.dir)
	}
	return nil
}

// checkName refuses names that would be unsafe in a branch or a commit
// message: too long, or holding newlines or other control characters.
func checkName(field, name string) error {
	if len(name) > MaxNameBytes {
		return refuseName(field, "longer than %d bytes", MaxNameBytes)
	}
	if i := strings.IndexFunc(name, unicode.IsControl); i >= 0 {
		return refuseName(field, "holds a control character (newline, tab, ...) at byte %d", i)
	}
	return nil
}

// NameError is input refused as malformed or unsafe whatever the policy
// (400, not 403): a name, a sandbox path onto git's or pneuma's own files.
type NameError struct{ Problem Problem }

func (e *NameError) Error() string { return e.Problem.Field + ": " + e.Problem.Message }

func refuseName(field, format string, args ...any) error {
	return &NameError{Problem{Field: field, Message: fmt.Sprintf(format, args...)}}
}

// refuseInput is refuseName for input other than a name.
var refuseInput = refuseName

func lastKey(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[i+1:]
	}
	return path
}

// ModeAllowed reports whether a client may switch a session to mode (the
// check for a mid-session permission-mode change).
func (s *Server) ModeAllowed(mode string) bool {
	return slices.Contains(s.cfg.Policy.PermissionModes, mode)
}
