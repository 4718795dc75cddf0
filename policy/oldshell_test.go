package policy

// The hand-written bash oldLexer policy used before it parsed commands with
// mvdan.cc/sh, kept as test-only code (it is not in the binary) so that
// FuzzShellParserNotMorePermissive can check that no decision moved toward
// allow. Frozen: do not fix bugs here; they are what the new parser fixes.

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// oldMaxNesting bounds the recursion into $(...), backticks and bash -c strings
// so that adversarial input cannot exhaust the stack.
const oldMaxNesting = 8

// oldCommand is one simple oldCommand of a shell oldCommand line.
type oldCommand struct {
	raw    []string // the words as written (quotes kept), redirections to harmless targets dropped
	words  []string // the words with quotes and escapes removed
	writes bool     // has an output redirection to a file
	opaque bool     // runs code that cannot be matched textually
}

// text is the command as matched by Bash rules: its words as written, joined
// by single spaces.
func (c oldCommand) text() string { return strings.Join(c.raw, " ") }

// oldParsedShell is the result of lexing a oldCommand line.
type oldParsedShell struct {
	cmds []oldCommand
	// nested holds code run indirectly: the bodies of $(...), backticks,
	// <(...), subshells, heredocs, bash -c strings and eval arguments. Deny
	// rules are checked against it too.
	nested []string
	opaque bool // something could not be understood or runs hidden code
}

// oldShellReserved are words that start or end compound commands; they are
// stripped from the front of a simple oldCommand so that `if rm -rf /; then`
// is matched as `rm -rf /`.
var oldShellReserved = map[string]bool{
	"if": true, "then": true, "else": true, "elif": true, "fi": true,
	"do": true, "done": true, "while": true, "until": true,
	"{": true, "}": true, "!": true,
}

// oldShellOpaqueStart are words that begin constructs whose body is not a plain
// simple oldCommand.
var oldShellOpaqueStart = map[string]bool{
	"for": true, "case": true, "esac": true, "select": true, "function": true,
	"[[": true, "]]": true, "coproc": true,
}

// oldShellInterpreters run code given as an argument, on stdin or from a file.
var oldShellInterpreters = map[string]bool{
	"bash": true, "sh": true, "zsh": true, "dash": true, "ksh": true, "mksh": true,
	"fish": true, "ash": true, "busybox": true, "eval": true, "source": true, ".": true,
}

// oldTokKind tells words, operators and redirections apart.
type oldTokKind int

const (
	oldTokWord oldTokKind = iota
	oldTokSep
	oldTokRedir
)

type oldToken struct {
	kind   oldTokKind
	raw    string // as written
	val    string // word value without quotes (words and redirection targets)
	op     string // redirection operator or separator
	opaque bool   // contains a substitution or other hidden code
	start  int    // byte offset where the oldToken begins
}

// oldLexer turns a oldCommand line into tokens and collects nested code.
type oldLexer struct {
	s        string
	i        int
	toks     []oldToken
	nested   []string
	opaque   bool
	heredocs []oldHeredoc
}

type oldHeredoc struct {
	delim  string
	quoted bool
	strip  bool // <<- strips leading tabs
	at     int  // index of the redirection oldToken
}

// oldParseShell lexes s into simple commands.
func oldParseShell(s string, depth int) oldParsedShell {
	var p oldParsedShell
	if depth > oldMaxNesting {
		p.opaque = true
		return p
	}
	lx := &oldLexer{s: s}
	lx.run()
	p.opaque = lx.opaque
	p.nested = lx.nested

	var cur []oldToken
	flush := func() {
		if c, ok := oldBuildCommand(cur); ok {
			p.cmds = append(p.cmds, c)
		}
		cur = cur[:0]
	}
	for _, t := range lx.toks {
		if t.kind == oldTokSep {
			flush()
			continue
		}
		cur = append(cur, t)
	}
	flush()

	// Code hidden in eval and shell -c strings is looked at for deny rules,
	// also where another oldCommand starts the shell (xargs sh -c, find -exec
	// bash -c, sudo bash -c).
	for _, c := range p.cmds {
		w := oldUnwrap(c.words)
		if len(w) > 0 && w[0] == "eval" {
			p.nested = append(p.nested, strings.Join(w[1:], " "))
		}
		for i := 0; i < len(w) && i <= oldMaxTails; i++ {
			if name := path.Base(w[i]); !oldShellInterpreters[name] || name == "." || name == "source" || name == "eval" {
				continue
			}
			for j := i + 1; j+1 < len(w) && strings.HasPrefix(w[j], "-"); j++ {
				if !strings.HasPrefix(w[j], "--") && strings.Contains(w[j], "c") {
					p.nested = append(p.nested, w[j+1])
					break
				}
			}
		}
	}
	return p
}

// oldBuildCommand turns the tokens of one simple oldCommand into a oldCommand.
func oldBuildCommand(toks []oldToken) (oldCommand, bool) {
	var c oldCommand
	for _, t := range toks {
		if t.opaque {
			c.opaque = true
		}
		switch t.kind {
		case oldTokWord:
			c.raw = append(c.raw, t.raw)
			c.words = append(c.words, t.val)
		case oldTokRedir:
			if oldHarmlessRedirect(t) {
				continue
			}
			if strings.Contains(t.op, ">") {
				c.writes = true
			}
			// Kept in both lists so that raw and words stay aligned.
			c.raw = append(c.raw, t.raw)
			c.words = append(c.words, t.raw)
		}
	}
	// Strip reserved words in front: `then rm -rf x` runs `rm -rf x`.
	for len(c.words) > 0 && oldShellReserved[c.words[0]] && c.raw[0] == c.words[0] {
		c.words, c.raw = c.words[1:], c.raw[1:]
	}
	if len(c.raw) == 0 {
		return c, false
	}
	if len(c.words) > 0 {
		first := c.words[0]
		if oldShellOpaqueStart[first] || strings.HasPrefix(c.raw[0], "$") || strings.HasPrefix(first, "((") {
			c.opaque = true
		}
		if oldShellInterpreters[path.Base(oldUnwrapFirst(c.words))] {
			c.opaque = true
		}
		// `f() { ...; }` defines a function whose body runs later.
		if strings.HasSuffix(first, "()") {
			c.opaque = true
		}
	}
	return c, true
}

// oldUnwrapFirst is the command name after assignments and oldWrappers.
func oldUnwrapFirst(words []string) string {
	w := oldUnwrap(words)
	if len(w) == 0 {
		return ""
	}
	return w[0]
}

// oldHarmlessRedirect reports redirections that neither read nor write a file
// of interest: fd duplication (2>&1, >&2, <&-) and /dev/null.
func oldHarmlessRedirect(t oldToken) bool {
	if t.opaque {
		return false
	}
	switch {
	case strings.HasSuffix(t.op, ">&"), strings.HasSuffix(t.op, "<&"):
		return t.val == "-" || isDigits(t.val)
	case strings.HasPrefix(t.op, "<<"):
		return false
	}
	switch t.val {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin":
		return true
	}
	return false
}

func oldIsSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\r' }

// oldIsMeta reports bytes that end an unquoted word.
func oldIsMeta(b byte) bool {
	switch b {
	case ' ', '\t', '\r', '\n', ';', '&', '|', '<', '>', '(', ')':
		return true
	}
	return false
}

func (lx *oldLexer) run() {
	s := lx.s
	for lx.i < len(s) {
		b := s[lx.i]
		switch {
		case oldIsSpace(b):
			lx.i++
		case b == '\\' && lx.i+1 < len(s) && s[lx.i+1] == '\n':
			lx.i += 2
		case b == '\n':
			lx.sep("\n", 1)
			lx.readHeredocs()
		case b == '#' && lx.atWordStart():
			for lx.i < len(s) && s[lx.i] != '\n' {
				lx.i++
			}
		case b == ';':
			if strings.HasPrefix(s[lx.i:], ";;") {
				lx.opaque = true
				lx.sep(";;", 2)
			} else {
				lx.sep(";", 1)
			}
		case b == '&':
			switch {
			case strings.HasPrefix(s[lx.i:], "&&"):
				lx.sep("&&", 2)
			case strings.HasPrefix(s[lx.i:], "&>>"):
				lx.redirect("&>>", lx.i, 3)
			case strings.HasPrefix(s[lx.i:], "&>"):
				lx.redirect("&>", lx.i, 2)
			default:
				lx.sep("&", 1)
			}
		case b == '|':
			switch {
			case strings.HasPrefix(s[lx.i:], "||"):
				lx.sep("||", 2)
			case strings.HasPrefix(s[lx.i:], "|&"):
				lx.sep("|&", 2)
			default:
				lx.sep("|", 1)
			}
		case b == '<' || b == '>':
			lx.redirOp()
		case b == '(':
			// A subshell, or something this oldLexer does not model.
			start := lx.i
			inner, end := oldScanParens(s, lx.i+1)
			lx.nested = append(lx.nested, inner)
			lx.toks = append(lx.toks, oldToken{kind: oldTokWord, raw: s[start:end], val: s[start:end], opaque: true, start: start})
			lx.opaque = true
			lx.i = end
		case b == ')':
			// Unbalanced: the line is not what it seems.
			lx.opaque = true
			lx.i++
		default:
			lx.toks = append(lx.toks, lx.word())
		}
	}
	if len(lx.heredocs) > 0 {
		// A oldHeredoc that never got its body.
		lx.opaque = true
	}
}

// atWordStart reports whether a '#' here starts a comment.
func (lx *oldLexer) atWordStart() bool {
	return lx.i == 0 || oldIsMeta(lx.s[lx.i-1])
}

func (lx *oldLexer) sep(op string, n int) {
	lx.toks = append(lx.toks, oldToken{kind: oldTokSep, raw: op, op: op, start: lx.i})
	lx.i += n
}

// redirOp reads a redirection starting at '<' or '>', taking a file
// descriptor number written right before it (2>file).
func (lx *oldLexer) redirOp() {
	s := lx.s
	start := lx.i
	if n := len(lx.toks); n > 0 {
		last := lx.toks[n-1]
		if last.kind == oldTokWord && isDigits(last.raw) && last.start+len(last.raw) == lx.i {
			lx.toks = lx.toks[:n-1]
			start = last.start
		}
	}
	rest := s[lx.i:]
	switch {
	case strings.HasPrefix(rest, "<("), strings.HasPrefix(rest, ">("):
		// Process substitution: a word of its own that runs code.
		inner, end := oldScanParens(s, lx.i+2)
		lx.nested = append(lx.nested, inner)
		lx.toks = append(lx.toks, oldToken{kind: oldTokWord, raw: s[start:end], val: s[start:end], opaque: true, start: start})
		lx.i = end
		return
	case strings.HasPrefix(rest, "<<<"):
		lx.redirect("<<<", start, 3)
	case strings.HasPrefix(rest, "<<-"):
		lx.redirect("<<-", start, 3)
	case strings.HasPrefix(rest, "<<"):
		lx.redirect("<<", start, 2)
	case strings.HasPrefix(rest, "<>"), strings.HasPrefix(rest, "<&"),
		strings.HasPrefix(rest, ">>"), strings.HasPrefix(rest, ">|"), strings.HasPrefix(rest, ">&"):
		lx.redirect(rest[:2], start, 2)
	default:
		lx.redirect(rest[:1], start, 1)
	}
}

// redirect reads the operator op (n bytes at lx.i) and its target word.
func (lx *oldLexer) redirect(op string, start, n int) {
	lx.i += n
	for lx.i < len(lx.s) && oldIsSpace(lx.s[lx.i]) {
		lx.i++
	}
	if lx.i >= len(lx.s) || oldIsMeta(lx.s[lx.i]) {
		// A redirection without a target is a syntax error in sh.
		lx.opaque = true
		lx.toks = append(lx.toks, oldToken{kind: oldTokRedir, raw: lx.s[start:lx.i], op: op, start: start})
		return
	}
	w := lx.word()
	t := oldToken{kind: oldTokRedir, raw: lx.s[start:lx.i], op: op, val: w.val, opaque: w.opaque, start: start}
	if op == "<<" || op == "<<-" {
		lx.heredocs = append(lx.heredocs, oldHeredoc{
			delim:  w.val,
			quoted: strings.ContainsAny(w.raw, `'"\`),
			strip:  op == "<<-",
			at:     len(lx.toks),
		})
	}
	lx.toks = append(lx.toks, t)
}

// readHeredocs consumes the bodies of pending heredocs, which start on the
// line after their operator. A body is data for the oldCommand, but a shell
// reading it (bash <<EOF) runs it, so bodies are checked against deny rules;
// an unquoted body can also hold substitutions, which make it opaque.
func (lx *oldLexer) readHeredocs() {
	for _, h := range lx.heredocs {
		var body strings.Builder
		found := false
		for lx.i < len(lx.s) {
			end := strings.IndexByte(lx.s[lx.i:], '\n')
			var line string
			if end < 0 {
				line, lx.i = lx.s[lx.i:], len(lx.s)
			} else {
				line, lx.i = lx.s[lx.i:lx.i+end], lx.i+end+1
			}
			cmp := line
			if h.strip {
				cmp = strings.TrimLeft(cmp, "\t")
			}
			if cmp == h.delim {
				found = true
				break
			}
			body.WriteString(line)
			body.WriteByte('\n')
		}
		if !found {
			lx.opaque = true
		}
		text := body.String()
		lx.nested = append(lx.nested, text)
		if !h.quoted && strings.ContainsAny(text, "$`") && (strings.Contains(text, "$(") || strings.Contains(text, "`") || strings.Contains(text, "${")) {
			lx.toks[h.at].opaque = true
		}
	}
	lx.heredocs = lx.heredocs[:0]
}

// word reads one word at lx.i, handling quotes, escapes and substitutions.
func (lx *oldLexer) word() oldToken {
	s := lx.s
	start := lx.i
	var val strings.Builder
	opaque := false
	for lx.i < len(s) && !oldIsMeta(s[lx.i]) {
		b := s[lx.i]
		switch {
		case b == '\\':
			if lx.i+1 < len(s) {
				if s[lx.i+1] != '\n' {
					val.WriteByte(s[lx.i+1])
				}
				lx.i += 2
			} else {
				lx.i++
			}
		case b == '\'':
			end := strings.IndexByte(s[lx.i+1:], '\'')
			if end < 0 {
				lx.opaque = true
				val.WriteString(s[lx.i+1:])
				lx.i = len(s)
			} else {
				val.WriteString(s[lx.i+1 : lx.i+1+end])
				lx.i += end + 2
			}
		case b == '$' && strings.HasPrefix(s[lx.i:], "$'"):
			// ANSI-C quoting: escapes can spell anything, keep it simple.
			j := lx.i + 2
			for j < len(s) && s[j] != '\'' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(s) {
				lx.opaque = true
				val.WriteString(s[lx.i+2:])
				lx.i = len(s)
			} else {
				val.WriteString(s[lx.i+2 : j])
				lx.i = j + 1
			}
		case b == '"':
			lx.i++
			for lx.i < len(s) && s[lx.i] != '"' {
				c := s[lx.i]
				switch {
				case c == '\\' && lx.i+1 < len(s):
					val.WriteByte(s[lx.i+1])
					lx.i += 2
				case c == '$' || c == '`':
					if lx.subst(&val) {
						opaque = true
					}
				default:
					val.WriteByte(c)
					lx.i++
				}
			}
			if lx.i >= len(s) {
				lx.opaque = true
			} else {
				lx.i++
			}
		case b == '$' || b == '`':
			if lx.subst(&val) {
				opaque = true
			}
		default:
			val.WriteByte(b)
			lx.i++
		}
	}
	if lx.i == start {
		// Defensive: never loop without progress.
		lx.i++
		return oldToken{kind: oldTokWord, raw: s[start:lx.i], val: s[start:lx.i], opaque: true, start: start}
	}
	return oldToken{kind: oldTokWord, raw: s[start:lx.i], val: val.String(), opaque: opaque, start: start}
}

// subst reads a '$' or '`' construct at lx.i into val and reports whether it
// runs code ($(...), $((...)), `...`, or ${...} holding either).
func (lx *oldLexer) subst(val *strings.Builder) bool {
	s := lx.s
	start := lx.i
	switch {
	case s[lx.i] == '`':
		j := lx.i + 1
		for j < len(s) && s[j] != '`' {
			if s[j] == '\\' {
				j++
			}
			j++
		}
		inner := s[lx.i+1 : min(j, len(s))]
		lx.nested = append(lx.nested, inner)
		if j >= len(s) {
			lx.opaque = true
			lx.i = len(s)
		} else {
			lx.i = j + 1
		}
	case strings.HasPrefix(s[lx.i:], "$("):
		inner, end := oldScanParens(s, lx.i+2)
		lx.nested = append(lx.nested, strings.TrimSuffix(strings.TrimPrefix(inner, "("), ")"))
		lx.i = end
	case strings.HasPrefix(s[lx.i:], "${"):
		depth, j := 0, lx.i+1
		for ; j < len(s); j++ {
			if s[j] == '{' {
				depth++
			} else if s[j] == '}' {
				depth--
				if depth == 0 {
					break
				}
			}
		}
		end := min(j+1, len(s))
		text := s[lx.i:end]
		val.WriteString(text)
		lx.i = end
		if j >= len(s) {
			lx.opaque = true
		}
		return strings.ContainsAny(text, "`(")
	default:
		val.WriteByte('$')
		lx.i++
		return false
	}
	val.WriteString(s[start:lx.i])
	return true
}

// oldScanParens finds the ')' closing a '(' whose content starts at i, skipping
// quoted text and nested parentheses. It returns the content and the offset
// after the ')'. An unclosed group runs to the end of s.
func oldScanParens(s string, i int) (inner string, end int) {
	depth := 1
	j := i
	for j < len(s) {
		switch s[j] {
		case '\\':
			j++
		case '\'':
			k := strings.IndexByte(s[j+1:], '\'')
			if k < 0 {
				return s[i:], len(s)
			}
			j += k + 1
		case '"':
			k := j + 1
			for k < len(s) && s[k] != '"' {
				if s[k] == '\\' {
					k++
				}
				k++
			}
			j = k
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return s[i:j], j + 1
			}
		}
		j++
	}
	return s[min(i, len(s)):], len(s)
}

// oldWrappers run the command given in their arguments; they are stripped
// before matching (timeout 60 go test ./... is matched as go test ./...).
var oldWrappers = map[string]bool{
	"timeout": true, "time": true, "nice": true, "nohup": true, "stdbuf": true,
	"ionice": true, "command": true, "builtin": true, "exec": true,
}

// oldSafeEnv are variables that only tune the tool being run; a oldCommand
// prefixed with them still matches allow rules written without them.
// Anything else (LD_PRELOAD=..., PATH=...) changes what runs.
var oldSafeEnv = map[string]bool{
	"CGO_ENABLED": true, "GOOS": true, "GOARCH": true, "GOFLAGS": true, "GOEXPERIMENT": true,
	"GOMAXPROCS": true, "GOTOOLCHAIN": true, "GO111MODULE": true, "GOTRACEBACK": true,
	"RUST_BACKTRACE": true, "RUST_LOG": true, "NODE_ENV": true, "CI": true, "TZ": true,
	"LANG": true, "LC_ALL": true, "NO_COLOR": true, "FORCE_COLOR": true, "TERM": true,
	"PYTHONUNBUFFERED": true, "PYTHONDONTWRITEBYTECODE": true, "DEBUG": true,
}

// oldUnwrap drops leading VAR=value assignments and wrapper commands with their
// options from a simple oldCommand's words.
func oldUnwrap(words []string) []string {
	n, _ := oldUnwrapN(words)
	return words[n:]
}

// oldUnwrapN counts the leading words that are assignments or oldWrappers (with
// their options), and reports whether an assignment outside oldSafeEnv was
// among them.
func oldUnwrapN(words []string) (n int, unsafeEnv bool) {
	for n < len(words) {
		w := words[n]
		switch {
		case oldIsAssignment(w):
			if !oldSafeEnv[w[:strings.IndexByte(w, '=')]] {
				unsafeEnv = true
			}
			n++
		case oldWrappers[w]:
			n++
			for n < len(words) && strings.HasPrefix(words[n], "-") {
				opt := words[n]
				n++
				// Options that take a separate value.
				if (w == "nice" && opt == "-n") || (w == "timeout" && (opt == "-s" || opt == "-k" || opt == "--signal" || opt == "--kill-after")) ||
					(w == "ionice" && (opt == "-c" || opt == "-n" || opt == "-p")) || (w == "stdbuf" && len(opt) == 2) {
					n = min(n+1, len(words))
				}
			}
			if w == "timeout" && n < len(words) {
				n++ // the duration
			}
		default:
			return n, unsafeEnv
		}
	}
	return n, unsafeEnv
}

// oldIsAssignment reports a NAME=value word.
func oldIsAssignment(w string) bool {
	eq := strings.IndexByte(w, '=')
	if eq <= 0 {
		return false
	}
	for i := 0; i < eq; i++ {
		c := w[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// oldDecideBash applies the rules to a shell oldCommand.
func (p *Policy) oldDecideBash(cmdline string) Decision {
	parsed := oldParseShell(cmdline, 0)
	for i := range p.deny {
		r := &p.deny[i]
		if !r.appliesTo("Bash") {
			continue
		}
		if r.kind != kindBash {
			return p.denied(r.text, fmt.Sprintf("Bash calls match deny rule %q", r.text))
		}
		if part, ok := oldDenyMatch(&r.bash, parsed, 0); ok {
			return p.denied(r.text, fmt.Sprintf("%q matches deny rule %q", clip(part), r.text))
		}
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
	if parsed.opaque {
		return p.byDefault("the command runs code that rules cannot inspect (subshell, substitution or unparsable text); only a bare Bash rule allows it")
	}
	if len(parsed.cmds) == 0 {
		return p.byDefault("the command is empty")
	}
	var used []string
	for _, c := range parsed.cmds {
		if c.opaque {
			return p.byDefault(fmt.Sprintf("%q runs code that rules cannot inspect (substitution, subshell, shell, eval, loop); only a bare Bash rule allows it", clip(c.text())))
		}
		if oldNeutral(c) {
			continue
		}
		r := oldAllowMatch(bashRules, c)
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

// oldNeutral reports parts of a compound oldCommand that need no allow rule of
// their own because they change nothing but the shell's directory:
// cd [dir], pwd, true, false and ":". The model writes `cd dir && go test`
// all the time; rules are textual, so the directory does not widen them.
func oldNeutral(c oldCommand) bool {
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

// oldAllowMatch finds an allow rule for one simple oldCommand.
func oldAllowMatch(rules []*rule, c oldCommand) *rule {
	cands := []string{c.text()}
	if n, unsafeEnv := oldUnwrapN(c.words); n > 0 && n < len(c.raw) && !unsafeEnv {
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

// oldRunners run their arguments as a oldCommand; deny rules look at every tail
// of their arguments.
var oldRunners = map[string]bool{
	"xargs": true, "env": true, "sudo": true, "doas": true, "su": true, "runuser": true,
	"watch": true, "parallel": true, "nohup": true, "timeout": true, "nice": true,
	"ionice": true, "stdbuf": true, "time": true, "command": true, "builtin": true,
	"exec": true, "strace": true, "ltrace": true, "flock": true, "chroot": true,
	"unshare": true, "setsid": true, "fakeroot": true, "taskset": true, "chrt": true,
	"busybox": true, "npx": true, "bunx": true,
}

// oldMaxTails bounds the tails tried per oldCommand so that a huge oldCommand line
// cannot make a decision quadratic.
const oldMaxTails = 64

// oldDenyCandidates lists the ways a deny rule may see one simple oldCommand.
func oldDenyCandidates(c oldCommand) []string {
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
	n, _ := oldUnwrapN(c.words)
	add(c.raw[n:])
	add(c.words[n:])
	w := c.words[n:]
	if len(w) > 0 && oldRunners[path.Base(w[0])] {
		for i := 1; i < len(w) && i <= oldMaxTails; i++ {
			add(w[i:])
		}
	}
	for i := 0; i < len(w) && i <= oldMaxTails; i++ {
		switch w[i] {
		case "-exec", "-execdir", "-ok", "-okdir":
			add(w[i+1:])
		}
	}
	return out
}

// oldDenyMatch reports the first part of a parsed oldCommand line, nested code
// included, that the pattern matches.
func oldDenyMatch(b *bashPattern, p oldParsedShell, depth int) (string, bool) {
	for _, c := range p.cmds {
		for _, s := range oldDenyCandidates(c) {
			if b.match(s) {
				return s, true
			}
		}
	}
	if depth >= oldMaxNesting {
		return "", false
	}
	for _, n := range p.nested {
		if part, ok := oldDenyMatch(b, oldParseShell(n, depth+1), depth+1); ok {
			return part, true
		}
	}
	return "", false
}
