// Package policy decides which tool calls a Claude Code job may make.
//
// A policy is written in the jobs file with Claude Code's own permission
// rule syntax:
//
//	policy:
//	  allow: ["Bash(go test *)", "Edit", "Write(src/**)", "Read"]
//	  deny:  ["Bash(git push*)", "Bash(rm -rf *)"]
//	  default: deny      # or allow: what happens to a call no rule matches
//	  message: "..."     # optional text the model sees on a denial
//
// Rules:
//
//   - Tool matches every call of the tool. Tool(*) is the same.
//     Edit (bare or with a path) also covers Write, MultiEdit and
//     NotebookEdit; Read also covers Glob, Grep, LS and NotebookRead, as in
//     Claude Code.
//   - Bash(npm run build) matches that exact command; Bash(npm run:*) (the
//     legacy prefix form) matches "npm run" alone or followed by a space and
//     anything; Bash(go test *) is a wildcard pattern where * matches any
//     text and \* is a literal star. A pattern whose only wildcard is a
//     trailing " *" also matches the bare command (Bash(ls *) matches "ls"
//     and "ls -la" but not "lsof").
//   - File tools take gitignore-style paths: Write(src/**) relative to the
//     call's working directory, /src/** the same (Claude Code reads it as
//     relative to the project root), //abs/path/** absolute, ~/path from the
//     home directory; * matches within one path segment, ** across segments;
//     a pattern without a slash (*.env) matches at any depth; a pattern that
//     names a directory covers everything inside it. The tool's path comes
//     from file_path, notebook_path or path (Glob and Grep default to the
//     working directory); it is made absolute and cleaned, so src/../secrets
//     is secrets, and symbolic links are followed as far as they exist, so
//     a link inside src/ pointing elsewhere is judged by both paths.
//   - WebFetch(domain:example.com) matches that host exactly;
//     WebFetch(domain:*.example.com) matches its subdomains.
//   - Agent(name) (or Task(name)) matches that subagent type.
//   - mcp__server matches every tool of an MCP server (mcp__server__* too);
//     mcp__server__tool matches one tool.
//
// Precedence: deny rules first (any match denies, whatever the allow rules
// say), then allow rules, then the default. The default is "deny" when the
// policy has allow rules and "allow" when it has none, unless set.
//
// Bash commands are parsed with bash's grammar (mvdan.cc/sh, the parser of
// shfmt) and split into their simple commands: those joined by ;, &, &&,
// ||, |, |& and newlines, and those in { } blocks and the conditions and
// bodies of if, while and until. A deny rule that matches any part,
// including code inside $(...), backticks, <(...), subshells, loop, case
// and function bodies, here-documents, bash -c '...' and eval strings
// (parsed again, up to 8 levels), denies the whole command; deny rules
// also see the command with VAR=value prefixes, wrappers (timeout, nice,
// nohup, xargs, sudo, env, find -exec ...) and directory prefixes (/bin/rm)
// removed, with ANSI-C quotes decoded, a brace-expanded command name
// ({rm,-rf,/}) expanded, and a command name that is a glob (/bin/r?) read
// as the rule's command name when it matches it. A command that does not parse as bash is denied
// when the policy has deny rules for Bash (they could not be checked), and
// otherwise allowed only by a bare Bash rule. An allow needs every part
// allowed. A command that runs code no rule can see (command, process or
// arithmetic substitution, subshells, shells and eval, for, case,
// functions, [[ ]], coproc, a here-document that expands $(...)) or whose
// command name is not known before it runs ($CMD, "$CMD", $(which go), a
// glob) is allowed only by a bare Bash rule. Parts that only move the
// shell (cd dir, pwd, true, false, :) need no rule of their own, but a
// command made only of them is left to the default. An output redirection to a
// file (> out.txt, not 2>&1 or >/dev/null) is allowed only by a rule that
// itself contains ">". Allow rules match the command as written, or with
// harmless wrappers (timeout, nice, nohup, time, stdbuf) and well-known
// environment settings (CGO_ENABLED=0, GOFLAGS=..., NODE_ENV=...) removed.
package policy

import (
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pneuma-cli/pneuma/internal/redact"
	"github.com/pneuma-cli/pneuma/internal/text"
)

// Spec is a policy as written in the jobs file.
type Spec struct {
	// Allow lists the rules that allow a call.
	Allow []string `yaml:"allow" json:"allow,omitempty"`
	// Deny lists the rules that deny a call; they win over allow rules.
	Deny []string `yaml:"deny" json:"deny,omitempty"`
	// Default is "allow" or "deny": the decision for a call no rule
	// matches. Empty means "deny" when Allow is not empty, else "allow".
	Default string `yaml:"default" json:"default,omitempty"`
	// Message is added to every denial, for the model to read.
	Message string `yaml:"message" json:"message,omitempty"`
	// BashTimeout caps the run time of every allowed Bash command ("2m"):
	// pneuma allows the call with its input edited to carry this timeout
	// (or a shorter one the model asked for).
	BashTimeout string `yaml:"bash_timeout" json:"bash_timeout,omitempty"`
}

// Policy is a compiled Spec. The zero value and a nil *Policy allow every
// call. A Policy is safe for concurrent use.
type Policy struct {
	bashTimeout time.Duration
	allow, deny []rule
	defaultDeny bool
	message     string
}

// RuleError is a rule that does not compile. List is "allow" or "deny" and
// Index the rule's position in it, for callers that map it back to a line
// of the jobs file.
type RuleError struct {
	List  string
	Index int
	Rule  string
	Err   error
}

// Error reports the list, index and text of the rule and what is wrong.
func (e *RuleError) Error() string {
	return fmt.Sprintf("policy %s[%d] %q: %v", e.List, e.Index, e.Rule, e.Err)
}

// Unwrap returns the underlying problem.
func (e *RuleError) Unwrap() error { return e.Err }

// Compile checks every rule of s and compiles it. It reports every bad rule
// (as a *RuleError) and a bad default; the policy is nil when any is bad.
func Compile(s Spec) (*Policy, []error) {
	var errs []error
	p := &Policy{message: strings.TrimSpace(s.Message)}
	home := homeDir()
	for i, t := range s.Allow {
		r, err := parseRule(t, home)
		if err != nil {
			errs = append(errs, &RuleError{List: "allow", Index: i, Rule: t, Err: err})
			continue
		}
		p.allow = append(p.allow, r)
	}
	for i, t := range s.Deny {
		r, err := parseRule(t, home)
		if err != nil {
			errs = append(errs, &RuleError{List: "deny", Index: i, Rule: t, Err: err})
			continue
		}
		p.deny = append(p.deny, r)
	}
	if t := strings.TrimSpace(s.BashTimeout); t != "" {
		d, err := time.ParseDuration(t)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("policy bash_timeout %q: write a duration such as 2m or 90s", s.BashTimeout))
		case d < time.Second || d > maxBashTimeout:
			errs = append(errs, fmt.Errorf("policy bash_timeout %s: must be between 1s and %s (the Bash tool's limit)", d, maxBashTimeout))
		default:
			p.bashTimeout = d
		}
	}
	switch strings.ToLower(strings.TrimSpace(s.Default)) {
	case "":
		p.defaultDeny = len(s.Allow) > 0
	case "allow":
		p.defaultDeny = false
	case "deny":
		p.defaultDeny = true
	default:
		errs = append(errs, fmt.Errorf(`policy default %q: must be "allow" or "deny" (when unset: "deny" if there are allow rules, else "allow")`, s.Default))
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return p, nil
}

// Call is one tool call to decide on.
type Call struct {
	// Tool is the tool name (tool_name in can_use_tool and PreToolUse).
	Tool string
	// Input is the tool input as the CLI sends it (input / tool_input).
	Input json.RawMessage
	// Cwd is the job's working directory; relative path rules are anchored
	// there. When it is empty or relative, relative path rules match
	// nothing.
	Cwd string
}

// maxBashTimeout is the Bash tool's own upper limit on its timeout input.
const maxBashTimeout = 10 * time.Minute

// Decision is the verdict on a Call.
type Decision struct {
	Allow bool
	// UpdatedInput, when set on an allowed call, is the input the tool must
	// run with instead of the model's (the policy edited it).
	UpdatedInput json.RawMessage
	// Rule is the text of the rule that decided ("Bash(go test *)"; for a
	// compound command the allow rules that matched, joined by ", "), or
	// "default" when no rule did, or "unparsable" for a Bash command
	// denied because it does not parse while deny rules apply to Bash.
	Rule string
	// Message explains a denial to the model; empty when allowed.
	Message string
}

// DefaultRule is Decision.Rule when no rule matched.
const DefaultRule = "default"

// UnparsableRule is Decision.Rule when a Bash command was denied because it
// does not parse as bash and the policy has deny rules for Bash, which
// could then not be checked.
const UnparsableRule = "unparsable"

// input holds the tool input fields the rules look at.
type input struct {
	Command      string `json:"command"`
	FilePath     string `json:"file_path"`
	NotebookPath string `json:"notebook_path"`
	Path         string `json:"path"`
	URL          string `json:"url"`
	SubagentType string `json:"subagent_type"`
	Pattern      string `json:"pattern"`
}

// globBase is the directory a Glob pattern starts from: base joined with
// the pattern's segments up to the first one holding a wildcard.
func globBase(base, pattern string) string {
	var fixed []string
	for _, seg := range strings.Split(pattern, "/") {
		if strings.ContainsAny(seg, "*?[{") {
			break
		}
		fixed = append(fixed, seg)
	}
	p := strings.Join(fixed, "/")
	switch {
	case path.IsAbs(pattern):
		return path.Clean("/" + p)
	case base == "":
		return p
	default:
		return path.Join(base, p)
	}
}

// withTimeout returns a Bash input whose "timeout" (milliseconds) is at most
// limit; nil when the input is not an object or already within the limit.
func withTimeout(raw json.RawMessage, limit time.Duration) json.RawMessage {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil
	}
	ms := float64(limit.Milliseconds())
	if cur, ok := m["timeout"].(float64); ok && cur > 0 && cur <= ms {
		return nil
	}
	m["timeout"] = ms
	out, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	return out
}

// Decide applies the policy to c. It never panics, whatever the input.
func (p *Policy) Decide(c Call) Decision {
	if p == nil {
		return Decision{Allow: true, Rule: DefaultRule}
	}
	var in input
	// Type mismatches leave the field empty; a non-object input leaves all
	// of them empty, and rules with a specifier then do not match.
	_ = json.Unmarshal(c.Input, &in)
	cwd := ""
	if c.Cwd != "" && filepath.IsAbs(c.Cwd) {
		cwd = path.Clean(filepath.ToSlash(c.Cwd))
	}
	if c.Tool == "Bash" {
		d := p.decideBash(in.Command)
		if d.Allow && p.bashTimeout > 0 {
			d.UpdatedInput = withTimeout(c.Input, p.bashTimeout)
		}
		return d
	}
	targets := p.callTargets(c.Tool, in, cwd)
	for i := range p.deny {
		r := &p.deny[i]
		if r.appliesTo(c.Tool) && r.matchAny(targets) {
			return p.denied(r.text, fmt.Sprintf("this %s call matches deny rule %q", c.Tool, r.text))
		}
	}
	for i := range p.allow {
		r := &p.allow[i]
		if r.appliesTo(c.Tool) && r.matchAll(targets) {
			return Decision{Allow: true, Rule: r.text}
		}
	}
	return p.byDefault(fmt.Sprintf("no allow rule matches this %s call", c.Tool))
}

// target is what a non-Bash rule is matched against.
type target struct {
	file, cwd string // absolute clean path and the cwd to anchor relative patterns
	host      string
	agent     string
}

// callTargets lists the views of a call that rules must agree on: for a
// file, its lexical path and, when symbolic links change it, the resolved
// one.
func (p *Policy) callTargets(tool string, in input, cwd string) []target {
	switch {
	case fileTools[tool]:
		f := in.FilePath
		if f == "" {
			f = in.NotebookPath
		}
		if f == "" {
			f = in.Path
		}
		if f == "" && (tool == "Glob" || tool == "Grep" || tool == "LS") {
			f = cwd
		}
		if tool == "Glob" && in.Pattern != "" {
			// A Glob pattern can leave its base (../secrets/*, /etc/**):
			// judge the directory its fixed part names.
			f = globBase(f, filepath.ToSlash(in.Pattern))
		}
		f = filepath.ToSlash(f)
		if f == "" || strings.ContainsRune(f, 0) {
			return []target{{}}
		}
		if strings.HasPrefix(f, "~/") {
			if h := homeDir(); h != "" {
				f = path.Join(h, f[2:])
			}
		}
		if !path.IsAbs(f) {
			if cwd == "" {
				return []target{{}}
			}
			f = path.Join(cwd, f)
		}
		f = path.Clean(f)
		ts := []target{{file: f, cwd: cwd}}
		if rf, rc := resolve(f), resolve(cwd); rf != f || rc != cwd {
			ts = append(ts, target{file: rf, cwd: rc})
		}
		return ts
	case tool == "WebFetch":
		return []target{{host: hostOf(in.URL)}}
	case tool == "Agent" || tool == "Task":
		return []target{{agent: in.SubagentType}}
	}
	return []target{{}}
}

// resolve follows symbolic links in the longest existing prefix of the
// absolute path p; the rest is kept as written.
func resolve(p string) string {
	if p == "" {
		return p
	}
	rest := ""
	cur := p
	for i := 0; i < 64; i++ {
		if r, err := filepath.EvalSymlinks(filepath.FromSlash(cur)); err == nil {
			return path.Join(filepath.ToSlash(r), rest)
		}
		parent := path.Dir(cur)
		if parent == cur {
			break
		}
		rest = path.Join(path.Base(cur), rest)
		cur = parent
	}
	return p
}

// hostOf is the lower-case host of a URL, or "" when it has none.
func hostOf(raw string) string {
	s := strings.TrimSpace(raw)
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
	} else {
		return ""
	}
	if i := strings.IndexAny(s, "/?#"); i >= 0 {
		s = s[:i]
	}
	if i := strings.LastIndexByte(s, '@'); i >= 0 {
		s = s[i+1:]
	}
	if strings.HasPrefix(s, "[") {
		if i := strings.IndexByte(s, ']'); i >= 0 {
			return strings.ToLower(s[1:i])
		}
		return ""
	}
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSuffix(strings.ToLower(s), ".")
}

// matchOne matches a specifier rule against one view of a call.
func (r *rule) matchOne(t target) bool {
	switch r.kind {
	case kindTool, kindMCPServer:
		return true
	case kindPath:
		return t.file != "" && r.path.match(t.file, t.cwd)
	case kindDomain:
		if t.host == "" {
			return false
		}
		if d, ok := strings.CutPrefix(r.domain, "*."); ok {
			return strings.HasSuffix(t.host, "."+d)
		}
		return t.host == r.domain
	case kindAgent:
		return t.agent != "" && t.agent == r.domain
	}
	return false
}

func (r *rule) matchAny(ts []target) bool {
	for _, t := range ts {
		if r.matchOne(t) {
			return true
		}
	}
	return false
}

func (r *rule) matchAll(ts []target) bool {
	for _, t := range ts {
		if !r.matchOne(t) {
			return false
		}
	}
	return len(ts) > 0
}

// decideBash applies the rules to a shell command.
func (p *Policy) decideBash(cmdline string) Decision {
	parsed := parseShell(cmdline)
	bashDeny := false
	for i := range p.deny {
		r := &p.deny[i]
		if !r.appliesTo("Bash") {
			continue
		}
		if r.kind != kindBash {
			return p.denied(r.text, fmt.Sprintf("Bash calls match deny rule %q", r.text))
		}
		bashDeny = true
		if part, ok := denyMatch(&r.bash, parsed); ok {
			return p.denied(r.text, fmt.Sprintf("%q matches deny rule %q", clip(part), r.text))
		}
	}
	if parsed.err != nil && bashDeny {
		// Deny rules cannot be checked against text that does not parse
		// (bash may still run its first lines): fail closed.
		return p.denied(UnparsableRule, fmt.Sprintf("the command does not parse as bash (%v), so the deny rules cannot be checked; rewrite it", parsed.err))
	}
	var bashRules []*rule
	for i := range p.allow {
		r := &p.allow[i]
		if !r.appliesTo("Bash") {
			continue
		}
		if r.kind != kindBash {
			return Decision{Allow: true, Rule: r.text}
		}
		bashRules = append(bashRules, r)
	}
	if len(bashRules) == 0 {
		return p.byDefault("no allow rule matches this Bash call")
	}
	if parsed.err != nil {
		return p.byDefault(fmt.Sprintf("the command does not parse as bash (%v); only a bare Bash rule allows it", parsed.err))
	}
	if parsed.opaque {
		return p.byDefault("the command runs code that rules cannot inspect (subshell, substitution, loop, function or here-document); only a bare Bash rule allows it")
	}
	if len(parsed.cmds) == 0 {
		return p.byDefault("the command is empty")
	}
	var used []string
	for _, c := range parsed.cmds {
		if c.opaque {
			return p.byDefault(fmt.Sprintf("%q runs code that rules cannot inspect (substitution, shell, eval, or a command name not known before it runs); only a bare Bash rule allows it", clip(c.text())))
		}
		if neutral(c) {
			continue
		}
		r := allowMatch(bashRules, c)
		if r == nil {
			why := fmt.Sprintf("no allow rule matches %q", clip(c.text()))
			if c.writes {
				why += " (it redirects output to a file, which only a rule containing \">\" allows)"
			}
			return p.byDefault(why)
		}
		if !slices.Contains(used, r.text) {
			used = append(used, r.text)
		}
	}
	if len(used) == 0 {
		return p.byDefault("no allow rule matches this Bash call")
	}
	return Decision{Allow: true, Rule: strings.Join(used, ", ")}
}

// neutral reports parts of a compound command that need no allow rule of
// their own because they change nothing but the shell's directory:
// cd [dir], pwd, true, false and ":". The model writes `cd dir && go test`
// all the time; rules are textual, so the directory does not widen them.
func neutral(c command) bool {
	if c.opaque || c.writes || len(c.words) == 0 || len(c.words) > 2 {
		return false
	}
	switch c.words[0] {
	case "cd":
		return true
	case "pwd", "true", "false", ":":
		return len(c.words) == 1
	}
	return false
}

// allowMatch finds an allow rule for one simple command.
func allowMatch(rules []*rule, c command) *rule {
	cands := []string{c.text()}
	if n, unsafeEnv := unwrapN(c.words); n > 0 && n < len(c.raw) && !unsafeEnv {
		cands = append(cands, strings.Join(c.raw[n:], " "))
	}
	for _, r := range rules {
		if c.writes && !r.bash.writes {
			continue
		}
		for _, s := range cands {
			if r.bash.match(s) {
				return r
			}
		}
	}
	return nil
}

// runners run their arguments as a command; deny rules look at every tail
// of their arguments.
var runners = map[string]bool{
	"xargs": true, "env": true, "sudo": true, "doas": true, "su": true, "runuser": true,
	"watch": true, "parallel": true, "nohup": true, "timeout": true, "nice": true,
	"ionice": true, "stdbuf": true, "time": true, "command": true, "builtin": true,
	"exec": true, "strace": true, "ltrace": true, "flock": true, "chroot": true,
	"unshare": true, "setsid": true, "fakeroot": true, "taskset": true, "chrt": true,
	"busybox": true, "npx": true, "bunx": true,
}

// maxTails bounds the tails tried per command so that a huge command line
// cannot make a decision quadratic.
const maxTails = 64

// denyCandidates lists the ways a deny rule may see one simple command.
func denyCandidates(c command) []string {
	var out []string
	add := func(words []string) {
		if len(words) == 0 {
			return
		}
		s := strings.Join(words, " ")
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
		if strings.Contains(words[0], "/") {
			b := append([]string{path.Base(words[0])}, words[1:]...)
			if s := strings.Join(b, " "); !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	add(c.raw)
	add(c.words)
	for _, alt := range c.alt {
		add(alt)
	}
	n, _ := unwrapN(c.words)
	add(c.raw[n:])
	add(c.words[n:])
	w := c.words[n:]
	if len(w) > 0 && runners[path.Base(w[0])] {
		for i := 1; i < len(w) && i <= maxTails; i++ {
			add(w[i:])
		}
	}
	for i := 0; i < len(w) && i <= maxTails; i++ {
		switch w[i] {
		case "-exec", "-execdir", "-ok", "-okdir":
			add(w[i+1:])
		}
	}
	return out
}

// denyMatch reports the first part of a parsed command line, nested code
// included, that the pattern matches.
func denyMatch(b *bashPattern, p parsedShell) (string, bool) {
	for _, cmds := range [][]command{p.cmds, p.nested} {
		for _, c := range cmds {
			for _, s := range denyCandidates(c) {
				if b.match(s) {
					return s, true
				}
				if s, ok := globNamed(b, s); ok && b.match(s) {
					return s, true
				}
			}
		}
	}
	return "", false
}

// globNamed rewrites a candidate whose command name is a glob (/bin/r? runs
// /bin/rm) with the pattern's literal command name when the glob matches
// it, so that the deny rule sees what the glob may run.
func globNamed(b *bashPattern, s string) (string, bool) {
	name, rest, hasRest := strings.Cut(s, " ")
	if b.name == "" || !hasGlob(name) || strings.Trim(path.Base(name), "*?") == "" {
		// A bare * is an argument list far more often than a command.
		return "", false
	}
	if ok, _ := path.Match(path.Base(name), b.name); !ok {
		return "", false
	}
	if !hasRest {
		return b.name, true
	}
	return b.name + " " + rest, true
}

// denied builds a denial by rule.
func (p *Policy) denied(rule, why string) Decision {
	return Decision{Rule: rule, Message: p.explain("pneuma policy denied this call: " + why)}
}

// byDefault builds the decision for a call no rule settled.
func (p *Policy) byDefault(why string) Decision {
	if !p.defaultDeny {
		return Decision{Allow: true, Rule: DefaultRule}
	}
	return Decision{Rule: DefaultRule, Message: p.explain("pneuma policy denied this call: " + why + " (policy default: deny)")}
}

func (p *Policy) explain(msg string) string {
	msg = redact.String(msg)
	if p.message != "" {
		msg += ". " + p.message
	}
	return msg
}

// clip shortens text quoted in a message.
func clip(s string) string {
	return text.Truncate(printable(s), 200)
}

// Tools returns the rule texts of the allow and deny lists, for example to
// pass them to the CLI's --allowedTools and --disallowedTools.
func (p *Policy) Tools() (allowed, denied []string) {
	if p == nil {
		return nil, nil
	}
	for _, r := range p.allow {
		allowed = append(allowed, r.text)
	}
	for _, r := range p.deny {
		denied = append(denied, r.text)
	}
	return allowed, denied
}

// DefaultAllow reports the decision for calls no rule matches.
func (p *Policy) DefaultAllow() bool { return p == nil || !p.defaultDeny }
