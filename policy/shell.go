package policy

import (
	"path"
	"strings"
)

// A shell command is matched part by part. The lexer below understands just
// enough of POSIX sh/bash to find where one simple command ends and the next
// begins (;, &, &&, ||, |, |&, newline), which words are quoted, and which
// constructs run code that no rule can see (command and process substitution,
// subshells, heredocs, eval, shells started with -c). It never executes
// anything and never fails: text it does not understand makes the command
// opaque, which only a bare Bash rule may allow.

// maxNesting bounds the recursion into $(...), backticks and bash -c strings
// so that adversarial input cannot exhaust the stack.
const maxNesting = 8

// command is one simple command of a shell command line.
type command struct {
	raw    []string // the words as written (quotes kept), redirections to harmless targets dropped
	words  []string // the words with quotes and escapes removed
	writes bool     // has an output redirection to a file
	opaque bool     // runs code that cannot be matched textually
}

// text is the command as matched by Bash rules: its words as written, joined
// by single spaces.
func (c command) text() string { return strings.Join(c.raw, " ") }

// parsedShell is the result of lexing a command line.
type parsedShell struct {
	cmds []command
	// nested holds code run indirectly: the bodies of $(...), backticks,
	// <(...), subshells, heredocs, bash -c strings and eval arguments. Deny
	// rules are checked against it too.
	nested []string
	opaque bool // something could not be understood or runs hidden code
}

// shellReserved are words that start or end compound commands; they are
// stripped from the front of a simple command so that `if rm -rf /; then`
// is matched as `rm -rf /`.
var shellReserved = map[string]bool{
	"if": true, "then": true, "else": true, "elif": true, "fi": true,
	"do": true, "done": true, "while": true, "until": true,
	"{": true, "}": true, "!": true,
}

// shellOpaqueStart are words that begin constructs whose body is not a plain
// simple command.
var shellOpaqueStart = map[string]bool{
	"for": true, "case": true, "esac": true, "select": true, "function": true,
	"[[": true, "]]": true, "coproc": true,
}

// shellInterpreters run code given as an argument, on stdin or from a file.
var shellInterpreters = map[string]bool{
	"bash": true, "sh": true, "zsh": true, "dash": true, "ksh": true, "mksh": true,
	"fish": true, "ash": true, "busybox": true, "eval": true, "source": true, ".": true,
}

// tokKind tells words, operators and redirections apart.
type tokKind int

const (
	tokWord tokKind = iota
	tokSep
	tokRedir
)

type token struct {
	kind   tokKind
	raw    string // as written
	val    string // word value without quotes (words and redirection targets)
	op     string // redirection operator or separator
	opaque bool   // contains a substitution or other hidden code
	start  int    // byte offset where the token begins
}

// lexer turns a command line into tokens and collects nested code.
type lexer struct {
	s        string
	i        int
	toks     []token
	nested   []string
	opaque   bool
	heredocs []heredoc
}

type heredoc struct {
	delim  string
	quoted bool
	strip  bool // <<- strips leading tabs
	at     int  // index of the redirection token
}

// parseShell lexes s into simple commands.
func parseShell(s string, depth int) parsedShell {
	var p parsedShell
	if depth > maxNesting {
		p.opaque = true
		return p
	}
	lx := &lexer{s: s}
	lx.run()
	p.opaque = lx.opaque
	p.nested = lx.nested

	var cur []token
	flush := func() {
		if c, ok := buildCommand(cur); ok {
			p.cmds = append(p.cmds, c)
		}
		cur = cur[:0]
	}
	for _, t := range lx.toks {
		if t.kind == tokSep {
			flush()
			continue
		}
		cur = append(cur, t)
	}
	flush()

	// Code hidden in eval and shell -c strings is looked at for deny rules,
	// also where another command starts the shell (xargs sh -c, find -exec
	// bash -c, sudo bash -c).
	for _, c := range p.cmds {
		w := unwrap(c.words)
		if len(w) > 0 && w[0] == "eval" {
			p.nested = append(p.nested, strings.Join(w[1:], " "))
		}
		for i := 0; i < len(w) && i <= maxTails; i++ {
			if name := path.Base(w[i]); !shellInterpreters[name] || name == "." || name == "source" || name == "eval" {
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

// buildCommand turns the tokens of one simple command into a command.
func buildCommand(toks []token) (command, bool) {
	var c command
	for _, t := range toks {
		if t.opaque {
			c.opaque = true
		}
		switch t.kind {
		case tokWord:
			c.raw = append(c.raw, t.raw)
			c.words = append(c.words, t.val)
		case tokRedir:
			if harmlessRedirect(t) {
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
	for len(c.words) > 0 && shellReserved[c.words[0]] && c.raw[0] == c.words[0] {
		c.words, c.raw = c.words[1:], c.raw[1:]
	}
	if len(c.raw) == 0 {
		return c, false
	}
	if len(c.words) > 0 {
		first := c.words[0]
		if shellOpaqueStart[first] || strings.HasPrefix(c.raw[0], "$") || strings.HasPrefix(first, "((") {
			c.opaque = true
		}
		if shellInterpreters[path.Base(unwrapFirst(c.words))] {
			c.opaque = true
		}
		// `f() { ...; }` defines a function whose body runs later.
		if strings.HasSuffix(first, "()") {
			c.opaque = true
		}
	}
	return c, true
}

// unwrapFirst is the command name after assignments and wrappers.
func unwrapFirst(words []string) string {
	w := unwrap(words)
	if len(w) == 0 {
		return ""
	}
	return w[0]
}

// harmlessRedirect reports redirections that neither read nor write a file
// of interest: fd duplication (2>&1, >&2, <&-) and /dev/null.
func harmlessRedirect(t token) bool {
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

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\r' }

// isMeta reports bytes that end an unquoted word.
func isMeta(b byte) bool {
	switch b {
	case ' ', '\t', '\r', '\n', ';', '&', '|', '<', '>', '(', ')':
		return true
	}
	return false
}

func (lx *lexer) run() {
	s := lx.s
	for lx.i < len(s) {
		b := s[lx.i]
		switch {
		case isSpace(b):
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
			// A subshell, or something this lexer does not model.
			start := lx.i
			inner, end := scanParens(s, lx.i+1)
			lx.nested = append(lx.nested, inner)
			lx.toks = append(lx.toks, token{kind: tokWord, raw: s[start:end], val: s[start:end], opaque: true, start: start})
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
		// A heredoc that never got its body.
		lx.opaque = true
	}
}

// atWordStart reports whether a '#' here starts a comment.
func (lx *lexer) atWordStart() bool {
	return lx.i == 0 || isMeta(lx.s[lx.i-1])
}

func (lx *lexer) sep(op string, n int) {
	lx.toks = append(lx.toks, token{kind: tokSep, raw: op, op: op, start: lx.i})
	lx.i += n
}

// redirOp reads a redirection starting at '<' or '>', taking a file
// descriptor number written right before it (2>file).
func (lx *lexer) redirOp() {
	s := lx.s
	start := lx.i
	if n := len(lx.toks); n > 0 {
		last := lx.toks[n-1]
		if last.kind == tokWord && isDigits(last.raw) && last.start+len(last.raw) == lx.i {
			lx.toks = lx.toks[:n-1]
			start = last.start
		}
	}
	rest := s[lx.i:]
	switch {
	case strings.HasPrefix(rest, "<("), strings.HasPrefix(rest, ">("):
		// Process substitution: a word of its own that runs code.
		inner, end := scanParens(s, lx.i+2)
		lx.nested = append(lx.nested, inner)
		lx.toks = append(lx.toks, token{kind: tokWord, raw: s[start:end], val: s[start:end], opaque: true, start: start})
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
func (lx *lexer) redirect(op string, start, n int) {
	lx.i += n
	for lx.i < len(lx.s) && isSpace(lx.s[lx.i]) {
		lx.i++
	}
	if lx.i >= len(lx.s) || isMeta(lx.s[lx.i]) {
		// A redirection without a target is a syntax error in sh.
		lx.opaque = true
		lx.toks = append(lx.toks, token{kind: tokRedir, raw: lx.s[start:lx.i], op: op, start: start})
		return
	}
	w := lx.word()
	t := token{kind: tokRedir, raw: lx.s[start:lx.i], op: op, val: w.val, opaque: w.opaque, start: start}
	if op == "<<" || op == "<<-" {
		lx.heredocs = append(lx.heredocs, heredoc{
			delim:  w.val,
			quoted: strings.ContainsAny(w.raw, `'"\`),
			strip:  op == "<<-",
			at:     len(lx.toks),
		})
	}
	lx.toks = append(lx.toks, t)
}

// readHeredocs consumes the bodies of pending heredocs, which start on the
// line after their operator. A body is data for the command, but a shell
// reading it (bash <<EOF) runs it, so bodies are checked against deny rules;
// an unquoted body can also hold substitutions, which make it opaque.
func (lx *lexer) readHeredocs() {
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
func (lx *lexer) word() token {
	s := lx.s
	start := lx.i
	var val strings.Builder
	opaque := false
	for lx.i < len(s) && !isMeta(s[lx.i]) {
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
		return token{kind: tokWord, raw: s[start:lx.i], val: s[start:lx.i], opaque: true, start: start}
	}
	return token{kind: tokWord, raw: s[start:lx.i], val: val.String(), opaque: opaque, start: start}
}

// subst reads a '$' or '`' construct at lx.i into val and reports whether it
// runs code ($(...), $((...)), `...`, or ${...} holding either).
func (lx *lexer) subst(val *strings.Builder) bool {
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
		inner, end := scanParens(s, lx.i+2)
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

// scanParens finds the ')' closing a '(' whose content starts at i, skipping
// quoted text and nested parentheses. It returns the content and the offset
// after the ')'. An unclosed group runs to the end of s.
func scanParens(s string, i int) (inner string, end int) {
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

// wrappers run the command given in their arguments; they are stripped
// before matching (timeout 60 go test ./... is matched as go test ./...).
var wrappers = map[string]bool{
	"timeout": true, "time": true, "nice": true, "nohup": true, "stdbuf": true,
	"ionice": true, "command": true, "builtin": true, "exec": true,
}

// safeEnv are variables that only tune the tool being run; a command
// prefixed with them still matches allow rules written without them.
// Anything else (LD_PRELOAD=..., PATH=...) changes what runs.
var safeEnv = map[string]bool{
	"CGO_ENABLED": true, "GOOS": true, "GOARCH": true, "GOFLAGS": true, "GOEXPERIMENT": true,
	"GOMAXPROCS": true, "GOTOOLCHAIN": true, "GO111MODULE": true, "GOTRACEBACK": true,
	"RUST_BACKTRACE": true, "RUST_LOG": true, "NODE_ENV": true, "CI": true, "TZ": true,
	"LANG": true, "LC_ALL": true, "NO_COLOR": true, "FORCE_COLOR": true, "TERM": true,
	"PYTHONUNBUFFERED": true, "PYTHONDONTWRITEBYTECODE": true, "DEBUG": true,
}

// unwrap drops leading VAR=value assignments and wrapper commands with their
// options from a simple command's words.
func unwrap(words []string) []string {
	n, _ := unwrapN(words)
	return words[n:]
}

// unwrapN counts the leading words that are assignments or wrappers (with
// their options), and reports whether an assignment outside safeEnv was
// among them.
func unwrapN(words []string) (n int, unsafeEnv bool) {
	for n < len(words) {
		w := words[n]
		switch {
		case isAssignment(w):
			if !safeEnv[w[:strings.IndexByte(w, '=')]] {
				unsafeEnv = true
			}
			n++
		case wrappers[w]:
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

// isAssignment reports a NAME=value word.
func isAssignment(w string) bool {
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
