package policy

import (
	"errors"
	"fmt"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
)

// ruleKind says what a rule's specifier is matched against.
type ruleKind int

const (
	kindTool      ruleKind = iota // every call of the tool (or tool family)
	kindMCPServer                 // every tool of one MCP server
	kindBash                      // Bash(command pattern)
	kindPath                      // file tools: gitignore-style path pattern
	kindDomain                    // WebFetch(domain:host)
	kindAgent                     // Agent(name) / Task(name): the subagent type
)

// rule is one compiled allow or deny rule.
type rule struct {
	text   string
	tool   string
	kind   ruleKind
	bash   bashPattern
	path   pathPattern
	domain string
}

// editTools and readTools are the tool families that Edit(...) and
// Read(...) rules cover, as in Claude Code ("Edit rules apply to all
// built-in tools that edit files").
var (
	editTools = []string{"Edit", "Write", "MultiEdit", "NotebookEdit"}
	readTools = []string{"Read", "Glob", "Grep", "LS", "NotebookRead"}
	fileTools = map[string]bool{
		"Read": true, "Edit": true, "Write": true, "MultiEdit": true, "NotebookEdit": true,
		"Glob": true, "Grep": true, "LS": true, "NotebookRead": true,
	}
)

// knownTools are Claude Code's built-in tool names, used only to catch
// rules whose tool name is spelled with the wrong case.
var knownTools = []string{
	"Agent", "Bash", "BashOutput", "Edit", "ExitPlanMode", "Glob", "Grep", "KillShell",
	"LS", "MultiEdit", "NotebookEdit", "NotebookRead", "Read", "Skill", "SlashCommand",
	"Task", "TodoWrite", "WebFetch", "WebSearch", "Write",
}

var toolNameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)

// parseRule compiles one rule text. home is the user's home directory for
// ~/ patterns ("" when unknown).
func parseRule(text, home string) (rule, error) {
	r := rule{text: strings.TrimSpace(text)}
	t := r.text
	if t == "" {
		return r, errors.New("empty rule")
	}
	name, spec, hasSpec := t, "", false
	if open := strings.IndexByte(t, '('); open >= 0 {
		if !strings.HasSuffix(t, ")") {
			return r, errors.New(`missing ")" at the end: write Tool or Tool(specifier)`)
		}
		name, spec, hasSpec = strings.TrimSpace(t[:open]), t[open+1:len(t)-1], true
	} else if strings.HasSuffix(t, ")") {
		return r, errors.New(`")" without "(": write Tool or Tool(specifier)`)
	}
	if !toolNameRE.MatchString(strings.TrimSuffix(name, "__*")) {
		return r, fmt.Errorf("invalid tool name %q", name)
	}
	for _, k := range knownTools {
		if name != k && strings.EqualFold(name, k) {
			return r, fmt.Errorf("unknown tool %q: tool names are case-sensitive, did you mean %q", name, k)
		}
	}
	r.tool = name
	spec = strings.TrimSpace(spec)
	if hasSpec && spec == "" {
		return r, fmt.Errorf("empty specifier: write %s to match every call", name)
	}
	if strings.HasPrefix(name, "mcp__") {
		return parseMCP(r, hasSpec)
	}
	if !hasSpec || spec == "*" {
		r.kind = kindTool
		return r, nil
	}
	switch {
	case name == "Bash":
		b, err := compileBash(spec)
		if err != nil {
			return r, err
		}
		r.kind, r.bash = kindBash, b
	case fileTools[name]:
		p, err := compilePath(spec, home)
		if err != nil {
			return r, err
		}
		r.kind, r.path = kindPath, p
	case name == "WebFetch":
		d, ok := strings.CutPrefix(spec, "domain:")
		d = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(d), "."))
		if !ok || d == "" || strings.ContainsAny(d, "/: ") || strings.Contains(strings.TrimPrefix(d, "*."), "*") {
			return r, errors.New(`WebFetch takes "domain:example.com" or "domain:*.example.com"`)
		}
		r.kind, r.domain = kindDomain, d
	case name == "Agent" || name == "Task":
		r.kind = kindAgent
		r.domain = spec
	default:
		return r, fmt.Errorf("pneuma cannot match a specifier for tool %s; specifiers are understood for Bash, file tools (Read, Edit, Write, MultiEdit, NotebookEdit, Glob, Grep), WebFetch and Agent: write %s alone to match every call", name, name)
	}
	return r, nil
}

// parseMCP handles mcp__server, mcp__server__* and mcp__server__tool.
func parseMCP(r rule, hasSpec bool) (rule, error) {
	if hasSpec {
		return r, errors.New("MCP rules take no specifier: write mcp__server or mcp__server__tool")
	}
	parts := strings.Split(r.tool, "__")
	for _, p := range parts[1:] {
		if p == "" {
			return r, fmt.Errorf("invalid MCP tool name %q: write mcp__server or mcp__server__tool", r.tool)
		}
	}
	switch {
	case len(parts) == 2:
		r.kind = kindMCPServer
	case len(parts) == 3 && parts[2] == "*":
		r.kind, r.tool = kindMCPServer, "mcp__"+parts[1]
	default:
		if strings.Contains(r.tool, "*") {
			return r, fmt.Errorf("invalid MCP tool name %q: only mcp__server__* may use a wildcard", r.tool)
		}
		r.kind = kindTool
	}
	return r, nil
}

// appliesTo reports whether the rule is about calls of tool at all.
func (r *rule) appliesTo(tool string) bool {
	switch {
	case r.kind == kindMCPServer:
		return tool == r.tool || strings.HasPrefix(tool, r.tool+"__")
	case r.tool == tool:
		return true
	case r.tool == "Edit":
		return slices.Contains(editTools, tool)
	case r.tool == "Read":
		return slices.Contains(readTools, tool)
	case r.tool == "Agent" || r.tool == "Task":
		return tool == "Agent" || tool == "Task"
	}
	return false
}

// bashPattern is the specifier of a Bash rule, in one of Claude Code's
// three forms: exact ("npm run build"), legacy prefix ("npm run:*") or
// wildcard ("go test *", "git * main").
type bashPattern struct {
	exact  string
	prefix string
	re     *regexp.Regexp
	writes bool // the rule itself mentions a redirection, so it may allow one
	// name is the pattern's command name when it is literal ("rm" in
	// "rm -rf *"): deny rules try it for a command name that is a glob.
	name string
}

func compileBash(spec string) (bashPattern, error) {
	var b bashPattern
	// A rule matches one simple command; an operator in it would never match.
	probe := strings.NewReplacer(`\*`, "x", "*", "x").Replace(spec)
	if p := parseShell(probe); len(p.cmds) > 1 {
		return b, errors.New("the pattern contains a shell operator (&&, ||, ;, |, &, newline): compound commands are split and each part is matched on its own, so write one rule per command")
	}
	b.writes = strings.Contains(spec, ">")
	if name, _, _ := strings.Cut(strings.TrimSpace(strings.TrimSuffix(spec, ":*")), " "); !strings.ContainsAny(name, `*\`) {
		b.name = name
	}
	if pre, ok := strings.CutSuffix(spec, ":*"); ok && !hasUnescapedStar(pre) {
		pre = strings.TrimSpace(pre)
		if pre == "" {
			return b, errors.New(`empty prefix before ":*"`)
		}
		b.prefix = unescapeStars(pre)
		return b, nil
	}
	if !hasUnescapedStar(spec) {
		b.exact = unescapeStars(spec)
		return b, nil
	}
	re, err := wildcardRegexp(spec)
	if err != nil {
		return b, err
	}
	b.re = re
	return b, nil
}

// hasUnescapedStar reports a '*' not written as '\*'.
func hasUnescapedStar(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '*':
			return true
		}
	}
	return false
}

func unescapeStars(s string) string {
	return strings.NewReplacer(`\*`, "*", `\\`, `\`).Replace(s)
}

// wildcardRegexp turns "go test *" into a regexp. '*' matches any text,
// spaces and newlines included; '\*' is a literal star. As in Claude Code,
// a pattern whose only wildcard is a trailing " *" also matches the bare
// command: "ls *" matches "ls" and "ls -la" but not "lsof".
func wildcardRegexp(spec string) (*regexp.Regexp, error) {
	var parts []string
	var cur strings.Builder
	stars := 0
	for i := 0; i < len(spec); i++ {
		c := spec[i]
		switch {
		case c == '\\' && i+1 < len(spec) && (spec[i+1] == '*' || spec[i+1] == '\\'):
			cur.WriteByte(spec[i+1])
			i++
		case c == '*':
			parts = append(parts, cur.String())
			cur.Reset()
			stars++
		default:
			cur.WriteByte(c)
		}
	}
	parts = append(parts, cur.String())
	var expr strings.Builder
	expr.WriteString(`(?s)^`)
	last := len(parts) - 1
	if stars == 1 && parts[last] == "" && strings.HasSuffix(parts[0], " ") && len(strings.TrimSpace(parts[0])) > 0 {
		expr.WriteString(regexp.QuoteMeta(strings.TrimSuffix(parts[0], " ")))
		expr.WriteString(`(?: .*)?$`)
		return regexp.Compile(expr.String())
	}
	for i, p := range parts {
		if i > 0 {
			expr.WriteString(`.*`)
		}
		expr.WriteString(regexp.QuoteMeta(p))
	}
	expr.WriteString(`$`)
	return regexp.Compile(expr.String())
}

func (b *bashPattern) match(cmd string) bool {
	switch {
	case b.re != nil:
		return b.re.MatchString(cmd)
	case b.prefix != "":
		return cmd == b.prefix || strings.HasPrefix(cmd, b.prefix+" ")
	default:
		return cmd == b.exact
	}
}

// pathPattern is the specifier of a file-tool rule, a gitignore-style
// pattern. Relative patterns are anchored at the call's working directory.
type pathPattern struct {
	abs     string // absolute pattern ("" when relative to the cwd)
	rel     string // pattern relative to the cwd
	anyDeep bool   // no '/' in the pattern: matches at any depth (gitignore)
}

func compilePath(spec, home string) (pathPattern, error) {
	var p pathPattern
	s := spec
	switch {
	case strings.HasPrefix(s, "//"):
		p.abs = path.Clean("/" + strings.TrimLeft(s, "/"))
	case s == "~" || strings.HasPrefix(s, "~/"):
		if home == "" {
			return p, errors.New("the pattern starts with ~ but the home directory is unknown")
		}
		p.abs = path.Join(home, strings.TrimPrefix(s, "~"))
	case strings.HasPrefix(s, "~"):
		return p, errors.New(`~user paths are not supported: write ~/path or //absolute/path`)
	case strings.HasPrefix(s, "/"):
		// Claude Code reads /path as relative to the settings file, which
		// lives at the project root: here, the job's working directory.
		p.rel = path.Clean(strings.TrimLeft(s, "/"))
	default:
		t := strings.TrimPrefix(strings.TrimSuffix(s, "/"), "./")
		p.anyDeep = !strings.Contains(t, "/") && !strings.HasPrefix(s, "./")
		p.rel = path.Clean(t)
	}
	pat := p.abs
	if pat == "" {
		pat = p.rel
	}
	for _, seg := range strings.Split(pat, "/") {
		if _, err := path.Match(seg, ""); err != nil {
			return p, fmt.Errorf("bad glob %q in path pattern", seg)
		}
	}
	if strings.Contains(pat, "\\") {
		return p, errors.New(`backslashes are not supported in path patterns: use "/"`)
	}
	return p, nil
}

// pattern returns the absolute pattern for a call in cwd, or "" when the
// pattern is relative and the cwd is unknown.
func (p *pathPattern) pattern(cwd string) string {
	switch {
	case p.abs != "":
		return p.abs
	case cwd == "" || !path.IsAbs(cwd):
		return ""
	case p.anyDeep:
		return path.Join(cwd, "**", p.rel)
	default:
		return path.Join(cwd, p.rel)
	}
}

// match reports whether the absolute, clean file path, or a directory that
// contains it, matches the pattern (a pattern naming a directory covers
// everything inside it, as in gitignore).
func (p *pathPattern) match(file, cwd string) bool {
	pat := p.pattern(cwd)
	if pat == "" || !path.IsAbs(file) {
		return false
	}
	return globSegments(splitPath(pat), splitPath(file))
}

func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// globSegments reports whether the pattern segments match name or one of
// its ancestors, where "**" matches any number of segments and other
// segments use path.Match.
func globSegments(pat, name []string) bool {
	// ok[j] reports whether pat[:i] matches name[:j]; dynamic programming
	// keeps "**" linear instead of exponential.
	ok := make([]bool, len(name)+1)
	ok[0] = true
	next := make([]bool, len(name)+1)
	for _, seg := range pat {
		if seg == "**" {
			seen := false
			for j := range ok {
				seen = seen || ok[j]
				next[j] = seen
			}
		} else {
			next[0] = false
			for j := 1; j <= len(name); j++ {
				// The only error is a malformed pattern, which then
				// matches nothing: a rule never grants by accident.
				m, _ := path.Match(seg, name[j-1])
				next[j] = ok[j-1] && m
			}
		}
		ok, next = next, ok
	}
	for _, v := range ok {
		if v {
			return true
		}
	}
	return false
}

// homeDir is the home directory for ~/ patterns.
func homeDir() string {
	h, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return path.Clean(h)
}
