package policy

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// A shell command is matched part by part. It is parsed with mvdan.cc/sh,
// the Go ecosystem's bash parser (shfmt's), and its syntax tree walked for
// the simple commands it runs. Simple commands at the top of the line, in
// pipelines, lists, { } blocks and the bodies of if, while and until are
// matched by allow rules; everything else that runs code (command and
// process substitution, subshells, for and case bodies, functions, [[ ]],
// arithmetic, coproc, here-documents fed to a shell, bash -c and eval
// strings parsed again) makes the command opaque, which only a bare Bash
// rule may allow, and is still searched by deny rules. A command word that
// is not known before the shell runs ($X, "$X", $(...), globs, brace
// expansion) makes its command opaque too, and deny rules also see what it
// may run (see unknownName). Deny rules also read the whole line loosely,
// as the hand-written lexer before this parser did: split at every operator
// and parenthesis, quotes dropped, past reserved words in front and into
// what eval or a shell's -c is given (looseCommands), so that a spelling bash
// runs as no command (inside arithmetic, a comment, a quoted string) but
// that reads as a denied one stays denied. Text that does not parse is an
// error: the decision fails closed.

// maxNesting bounds the bash -c, sh -c and eval strings parsed again inside
// each other, so that adversarial input cannot loop or exhaust the stack;
// deeper code is an error.
const maxNesting = 8

// maxDepth bounds how deeply statements may nest within one parse (each
// $(...), ( ), { } or if is a level); deeper input is an error.
const maxDepth = 200

// maxShellLen bounds the command length parsed; a longer command is an
// error. The Bash tool's input is far smaller in practice.
const maxShellLen = 1 << 20

// maxBraceWords bounds the words a brace expansion in a command name may
// produce for deny rules.
const maxBraceWords = 64

// command is one simple command of a shell command line.
type command struct {
	raw    []string // the words as written (quotes kept), redirections to harmless targets dropped
	words  []string // the words with quotes and escapes removed
	writes bool     // has an output redirection to a file
	opaque bool     // runs code that cannot be matched textually
	// alt lists other spellings of the command for deny rules only: its
	// command name brace-expanded, or its words with every quote and
	// backslash dropped.
	alt [][]string
}

// text is the command as matched by Bash rules: its words as written, joined
// by single spaces.
func (c command) text() string { return strings.Join(c.raw, " ") }

// parsedShell is the result of parsing a command line.
type parsedShell struct {
	// cmds are the simple commands the line runs itself; allow rules must
	// match every one.
	cmds []command
	// nested are the simple commands in code run indirectly: substitutions,
	// subshells, loop and function bodies, here-documents, bash -c strings
	// and eval arguments. Only deny rules look at them.
	nested []command
	opaque bool  // something runs hidden code
	err    error // the line (or code in it) does not parse: fail closed
}

// shellOpaqueStart are words that begin constructs whose body is not a plain
// simple command; as a command name they make it opaque.
var shellOpaqueStart = map[string]bool{
	"for": true, "case": true, "esac": true, "select": true, "function": true,
	"[[": true, "]]": true, "coproc": true,
}

// shellInterpreters run code given as an argument, on stdin or from a file.
var shellInterpreters = map[string]bool{
	"bash": true, "sh": true, "zsh": true, "dash": true, "ksh": true, "mksh": true,
	"fish": true, "ash": true, "busybox": true, "eval": true, "source": true, ".": true,
}

// parseShell parses the command line s. It never panics: a parser or walker
// panic is reported as an error, which fails closed.
func parseShell(s string) (p parsedShell) {
	defer func() {
		if r := recover(); r != nil {
			p = parsedShell{opaque: true, err: fmt.Errorf("parse shell: %v", r)}
		}
	}()
	w := &walker{out: &p}
	w.parse(s, 0, true)
	// Deny rules also read the whole line loosely, as the lexer before
	// this parser did. Where bash's grammar sees no command (arithmetic,
	// a comment, a quoted string, a case pattern), a spelling that reads
	// as a denied command stays denied. Code parsed again (eval, bash -c)
	// is in the line already: read once, so that nesting costs no more.
	if p.err == nil {
		p.nested = append(p.nested, looseCommands(s)...)
	}
	return p
}

// walker collects the commands of a syntax tree into out.
type walker struct {
	out   *parsedShell
	src   string // the text whose tree is walked, for words as written
	depth int    // how many times code was parsed again to get here
	level int    // statements nested within this parse
	// scanning is set while data is searched for commands: data within
	// it is not searched again, which would cost exponential time.
	scanning bool
}

// fail records the first error and makes the line opaque.
func (w *walker) fail(err error) {
	w.out.opaque = true
	if w.out.err == nil {
		w.out.err = err
	}
}

// parse parses s, code found at re-parse depth depth, and walks it. direct
// says whether its commands are run by the line itself.
func (w *walker) parse(s string, depth int, direct bool) {
	switch {
	case depth > maxNesting:
		w.fail(fmt.Errorf("shell code nested more than %d levels deep (bash -c, eval)", maxNesting))
		return
	case len(s) > maxShellLen:
		w.fail(fmt.Errorf("command longer than %d bytes", maxShellLen))
		return
	case strings.IndexByte(s, 0) >= 0:
		// The parser stops reading at a NUL byte; what follows would go
		// unseen.
		w.fail(fmt.Errorf("command contains a NUL byte"))
		return
	case parenDepth(s) > maxDepth:
		// The parser takes long on thousands of nested parentheses.
		w.fail(fmt.Errorf("parentheses or braces nested more than %d levels deep", maxDepth))
		return
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(s), "")
	if err != nil {
		w.fail(err)
		return
	}
	if err := hdocMisread(f, s); err != nil {
		w.fail(err)
		return
	}
	if err := commentContinued(f, s); err != nil {
		w.fail(err)
		return
	}
	if err := carriageReturns(f, s); err != nil {
		w.fail(err)
		return
	}
	sub := &walker{out: w.out, src: s, depth: depth, scanning: w.scanning}
	sub.stmts(f.Stmts, direct)
}

// hdocMisread refuses a here-document whose delimiter word is followed at
// once by "#": the parser ends the word there and takes the rest of the
// line for a comment, where bash reads on (<<'EOF'#x& git push runs git
// push), so the line's commands cannot be known. It also refuses a body the
// parser ended elsewhere than bash would: in the middle of a line, or past
// a line that is its delimiter.
func hdocMisread(f *syntax.File, src string) error {
	var err error
	syntax.Walk(f, func(n syntax.Node) bool {
		r, ok := n.(*syntax.Redirect)
		if !ok || err != nil || r.Word == nil || (r.Op != syntax.Hdoc && r.Op != syntax.DashHdoc) {
			return err == nil
		}
		if end := r.Word.End().Offset(); end < uint(len(src)) && src[end] == '#' {
			err = fmt.Errorf("here-document delimiter %q is followed by \"#\", which bash reads as part of it", src[r.Word.Pos().Offset():end])
		}
		// The parser may end a body at the delimiter written after an
		// expansion ($0EOF), where bash reads on, or read past a line
		// that is a U+FFFD delimiter, where bash ends it.
		if b := r.Hdoc; err == nil && b != nil && b.Pos().Offset() <= b.End().Offset() && b.End().Offset() <= uint(len(src)) {
			body, delim := src[b.Pos().Offset():b.End().Offset()], src[r.Word.Pos().Offset():r.Word.End().Offset()]
			if !hdocEndsOnItsLine(body, unquote(delim), r.Op == syntax.DashHdoc) {
				err = fmt.Errorf("here-document %q does not end at a line of its own", delim)
			}
		}
		return true
	})
	return err
}

// hdocEndsOnItsLine reports whether body, a here-document's text up to
// where the parser ended it, ends with its delimiter on a line of its own
// (after tabs, for <<-), and no line before is the delimiter, where bash
// would have ended it.
func hdocEndsOnItsLine(body, delim string, dash bool) bool {
	rest, ok := strings.CutSuffix(body, delim)
	if dash {
		rest = strings.TrimRight(rest, "\t")
	}
	if !ok || rest == "" {
		return ok
	}
	if !strings.HasSuffix(rest, "\n") {
		return false
	}
	for line := range strings.SplitSeq(strings.TrimSuffix(rest, "\n"), "\n") {
		if dash {
			line = strings.TrimLeft(line, "\t")
		}
		if line == delim {
			return false
		}
	}
	return true
}

// unquote is a word with its quotes and backslashes dropped.
func unquote(word string) string {
	return strings.Map(func(r rune) rune {
		if r == '\'' || r == '"' || r == '\\' {
			return -1
		}
		return r
	}, word)
}

// carriageReturns refuses a carriage return the parser reads differently
// from bash. Bash reads it as part of a word; the parser takes it for a
// space between words (echo x\r#; rm -rf ~ runs rm in bash, where the parser
// sees a comment) and a backslash, carriage return and newline for a line
// continuation (go test x\<CR><LF>rm -rf ~ runs rm in bash, where the
// parser sees one command). So a carriage return outside a literal or a
// single-quoted string, or after a backslash outside a single-quoted
// string, leaves the line's commands unknown.
func carriageReturns(f *syntax.File, src string) error {
	if !strings.Contains(src, "\r") {
		return nil
	}
	lit, single := make([]bool, len(src)), make([]bool, len(src))
	syntax.Walk(f, func(n syntax.Node) bool {
		mark := lit
		switch n.(type) {
		case *syntax.SglQuoted:
			mark = single
		case *syntax.Lit:
		default:
			return true
		}
		for i := n.Pos().Offset(); i < n.End().Offset() && i < uint(len(src)); i++ {
			mark[i] = true
		}
		return true
	})
	for i := range len(src) {
		if src[i] != '\r' {
			continue
		}
		if !lit[i] && !single[i] || i > 0 && src[i-1] == '\\' && !single[i] {
			return fmt.Errorf("a carriage return at byte %d, which bash reads as part of a word and the parser as a space or a line continuation", i)
		}
	}
	return nil
}

// commentContinued refuses a comment whose line ends in a backslash: bash
// ends a comment at the newline, where the parser takes the backslash for a
// line continuation and reads the next line into the command before the
// comment (go test #\<newline>rm -rf ~ runs rm in bash, and the parser sees
// go test with more arguments), so the line's commands cannot be known.
// A "#" in a word, a quoted string, a parameter or arithmetic expansion or
// a here-document's body starts no comment and is not looked at.
func commentContinued(f *syntax.File, src string) error {
	hashes := candidateHashes(src)
	if len(hashes) == 0 {
		return nil
	}
	inWord := make([]bool, len(src))
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n.(type) {
		case *syntax.Lit, *syntax.SglQuoted, *syntax.ParamExp, *syntax.ArithmExp:
			for i := n.Pos().Offset(); i < n.End().Offset() && i < uint(len(src)); i++ {
				inWord[i] = true
			}
		}
		return true
	})
	for _, h := range hashes {
		if !inWord[h] {
			return fmt.Errorf("a comment ends in a backslash (%q): bash ends it at the newline, the parser reads the next line into the command", src[h:min(len(src), h+40)])
		}
	}
	return nil
}

// candidateHashes are the offsets of the "#"s in src whose line ends in a
// backslash before a newline.
func candidateHashes(src string) []int {
	var out []int
	for start := 0; start < len(src); {
		end := strings.IndexByte(src[start:], '\n')
		if end < 0 {
			break
		}
		end += start
		if end > start && src[end-1] == '\\' {
			for i := start; i < end-1; i++ {
				if src[i] == '#' {
					out = append(out, i)
				}
			}
		}
		start = end + 1
	}
	return out
}

// parenDepth is how deeply parentheses or braces nest in s, quotes
// ignored: an upper bound of the nesting the parser sees.
func parenDepth(s string) int {
	parens, braces, deepest := 0, 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			parens++
			deepest = max(deepest, parens)
		case ')':
			parens = max(parens-1, 0)
		case '{':
			braces++
			deepest = max(deepest, braces)
		case '}':
			braces = max(braces-1, 0)
		}
	}
	return deepest
}

// text is the source of a node as written.
func (w *walker) text(n syntax.Node) string {
	start, end := n.Pos().Offset(), n.End().Offset()
	if start > end || end > uint(len(w.src)) {
		return ""
	}
	return w.src[start:end]
}

func (w *walker) stmts(ss []*syntax.Stmt, direct bool) {
	for _, s := range ss {
		w.stmt(s, direct)
	}
}

// stmt walks one statement; direct says whether its simple commands are
// run by the line itself (and so matched by allow rules).
func (w *walker) stmt(s *syntax.Stmt, direct bool) {
	if s == nil {
		return
	}
	if _, chain := s.Cmd.(*syntax.BinaryCmd); !chain {
		// a && b && ... nests in the tree but not in the text: only
		// other nesting counts.
		if w.level >= maxDepth {
			w.fail(fmt.Errorf("shell statements nested more than %d levels deep", maxDepth))
			return
		}
		w.level++
		defer func() { w.level-- }()
	}
	switch c := s.Cmd.(type) {
	case nil:
		w.simple(s, nil, nil, nil, direct)
	case *syntax.CallExpr:
		w.simple(s, nil, c.Assigns, c.Args, direct)
	case *syntax.DeclClause:
		// export X=1, local y: a simple command to the rules.
		w.simple(s, []string{c.Variant.Value}, c.Args, nil, direct)
	case *syntax.TimeClause:
		w.timed(s, c, direct)
	case *syntax.BinaryCmd:
		w.compoundRedirs(s)
		w.stmt(c.X, direct)
		w.stmt(c.Y, direct)
	case *syntax.Block:
		w.compoundRedirs(s)
		w.stmts(c.Stmts, direct)
	case *syntax.IfClause:
		w.compoundRedirs(s)
		for ic := c; ic != nil; ic = ic.Else {
			w.stmts(ic.Cond, direct)
			w.stmts(ic.Then, direct)
		}
	case *syntax.WhileClause:
		w.compoundRedirs(s)
		w.stmts(c.Cond, direct)
		w.stmts(c.Do, direct)
	default:
		// Subshells, for, case, functions, [[ ]], (( )), let, coproc:
		// hidden from allow rules, searched by deny rules.
		w.out.opaque = true
		w.compoundRedirs(s)
		w.hiddenNode(c)
	}
}

// hiddenNode walks a compound command whose commands are not run directly.
func (w *walker) hiddenNode(n syntax.Node) {
	syntax.Walk(n, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Stmt:
			w.stmt(n, false)
			return false
		case *syntax.Word:
			w.word(n, false)
			return false
		}
		return true
	})
}

// timed walks `time [-p] cmd`, matched as the command with "time" in front
// (a wrapper that allow rules see through).
func (w *walker) timed(s *syntax.Stmt, c *syntax.TimeClause, direct bool) {
	prefix := []string{"time"}
	if c.PosixFormat {
		prefix = append(prefix, "-p")
	}
	in := c.Stmt
	if in == nil {
		w.simple(s, prefix, nil, nil, direct)
		return
	}
	call, ok := in.Cmd.(*syntax.CallExpr)
	if !ok && in.Cmd != nil || in.Negated || in.Background {
		w.out.opaque = true
		w.compoundRedirs(s)
		w.stmt(in, false)
		return
	}
	merged := *in
	merged.Redirs = append(slices.Clone(in.Redirs), s.Redirs...)
	var assigns []*syntax.Assign
	var args []*syntax.Word
	if call != nil {
		assigns, args = call.Assigns, call.Args
	}
	w.simple(&merged, prefix, assigns, args, direct)
}

// compoundRedirs handles the redirections of a compound command: harmless
// ones are ignored, others make the line opaque (no rule names them), and
// here-document bodies are searched.
func (w *walker) compoundRedirs(s *syntax.Stmt) {
	for _, r := range s.Redirs {
		var c command
		if !w.redirect(r, &c) {
			w.out.opaque = true
		}
		w.stdin(r, false)
	}
}

// item is one word, assignment or redirection of a simple command, in
// source order.
type item struct {
	at       uint
	raw, val string
}

// simple builds one simple command from its parts: prefix words (a
// declaration's keyword, "time"), assignments, arguments and redirections.
func (w *walker) simple(s *syntax.Stmt, prefix []string, assigns []*syntax.Assign, args []*syntax.Word, direct bool) {
	var c command
	var items []item
	for _, a := range assigns {
		val, code := w.assign(a)
		c.opaque = c.opaque || code
		items = append(items, item{a.Pos().Offset(), w.text(a), val})
	}
	var name wordInfo
	for i, a := range args {
		wi := w.word(a, false)
		if i == 0 {
			name = wi
		}
		c.opaque = c.opaque || wi.code
		items = append(items, item{a.Pos().Offset(), w.text(a), wi.val})
	}
	for _, p := range prefix {
		c.raw, c.words = append(c.raw, p), append(c.words, p)
	}
	// Redirections are kept where they were written: cat < in.txt.
	for _, r := range s.Redirs {
		if !w.redirect(r, &c) {
			items = append(items, item{r.Pos().Offset(), w.redirText(r), w.redirText(r)})
		}
	}
	slices.SortStableFunc(items, func(a, b item) int { return int(a.at) - int(b.at) })
	for _, it := range items {
		c.raw, c.words = append(c.raw, it.raw), append(c.words, it.val)
	}
	if len(c.raw) == 0 {
		return
	}
	w.classify(&c, name, args)
	// Here-documents and here-strings go to the command's stdin: code
	// when the command is a shell.
	interp := len(c.words) > 0 && shellInterpreters[path.Base(unwrapFirst(c.words))]
	for _, r := range s.Redirs {
		w.stdin(r, interp)
	}
	w.hidden(c)
	if direct {
		w.out.cmds = append(w.out.cmds, c)
	} else {
		w.out.nested = append(w.out.nested, c)
	}
}

// classify marks a command opaque when its name is not known before it
// runs, or it starts a construct or a shell, and lists the other spellings
// deny rules see.
func (w *walker) classify(c *command, name wordInfo, args []*syntax.Word) {
	first := c.words[0]
	if shellOpaqueStart[first] || strings.HasPrefix(c.raw[0], "$") || strings.HasPrefix(first, "((") ||
		strings.HasSuffix(first, "()") || shellInterpreters[path.Base(unwrapFirst(c.words))] {
		c.opaque = true
	}
	if len(args) > 0 && !name.static() {
		c.opaque = true
		c.alt = append(c.alt, w.unknownName(args)...)
	}
	// The name after assignments and wrappers (timeout 5 $CMD) must be
	// known as well.
	if n, _ := unwrapN(c.words); n < len(c.words) && n > 0 {
		if strings.ContainsAny(c.raw[n], "$`*?[{") {
			c.opaque = true
		}
	}
	if len(args) > 0 && name.brace && !name.param && !name.code {
		if exp := braceWords(args[0]); len(exp) > 0 {
			var ws []string
			for _, a := range args[1:] {
				ws = append(ws, w.word(a, true).val)
			}
			c.alt = append(c.alt, append(exp, ws...))
		}
	}
	if !slices.ContainsFunc(c.raw, func(r string) bool { return strings.ContainsAny(r, "'\"\\\r") }) {
		return
	}
	// The words as the lexer policy used before this parser read them, so
	// that no deny rule it applied is lost; and, as it could, the commands
	// its control operators would separate there (x "&rm -r"f as rm -rf).
	loose := looseSpelling(strings.Join(c.raw, " "))
	if ws := strings.Fields(loose); len(ws) > 0 {
		c.alt = append(c.alt, ws)
	}
	c.alt = append(c.alt, operatorSplits(loose, nil)...)
}

// unknownName lists, for deny rules, what a command whose name is not
// known before it runs may run: its arguments alone (the name expands to
// nothing: $X rm -rf /), and its name's literal beginning or end (the rest
// expands to nothing: ${X}rm -rf /, rm$X -rf /, "$X"rm). A literal end
// that holds a control operator, a parenthesis or a backquote is also read
// as the commands it would separate unquoted ("${0#"}"}&rm -r"f and
// ${0#"}"}"(rm -r"f as rm -rf): bash runs none of them,
// but a spelling that reads as a denied command stays denied, as it was
// before the parser (deny rules only ever grow stricter here).
func (w *walker) unknownName(args []*syntax.Word) [][]string {
	var rest []string
	for _, a := range args[1:] {
		rest = append(rest, w.word(a, true).val)
	}
	var out [][]string
	if len(rest) > 0 {
		out = append(out, rest)
	}
	lead, trail := literalEnds(args[0])
	for _, end := range []string{lead, trail} {
		out = append(out, operatorSplits(end, rest)...)
	}
	// What bash would look up is the end that reads as a command name.
	if i := strings.LastIndexFunc(trail, func(r rune) bool { return !nameRune(r) }); i >= 0 {
		trail = trail[i+1:]
	}
	for _, name := range []string{lead, trail} {
		if name != "" {
			out = append(out, append([]string{name}, rest...))
		}
	}
	return out
}

// operatorSplits reads s, a name's literal text, as if its control
// operators (; & | and newlines) and what opens or closes a subshell or a
// command substitution (( ) and `) were unquoted: the words of each
// command they separate, the last one followed by rest. Nil when s has
// none.
func operatorSplits(s string, rest []string) [][]string {
	const ops = ";&|()`\n"
	if !strings.ContainsAny(s, ops) {
		return nil
	}
	segs := strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(ops, r) })
	var out [][]string
	for i, seg := range segs {
		words := strings.Fields(seg)
		if len(words) == 0 {
			continue
		}
		if i == len(segs)-1 {
			words = append(words, rest...)
		}
		out = append(out, words)
	}
	return out
}

// literalEnds returns the literal text a word begins with and ends with,
// before its first and after its last part whose value is not known (the
// quoted literal end of that part included).
func literalEnds(word *syntax.Word) (lead, trail string) {
	first, last := -1, -1
	for i, part := range word.Parts {
		if _, ok := literalPart(part); !ok {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return "", "" // all literal: the name is known
	}
	for _, part := range word.Parts[:first] {
		v, _ := literalPart(part)
		lead += v
	}
	if dq, ok := word.Parts[last].(*syntax.DblQuoted); ok {
		// "$X&r"m: the quoted literal end belongs to the name's end too.
		for i := len(dq.Parts) - 1; i >= 0; i-- {
			l, ok := dq.Parts[i].(*syntax.Lit)
			if !ok {
				break
			}
			trail = l.Value + trail
		}
	}
	for _, part := range word.Parts[last+1:] {
		v, _ := literalPart(part)
		trail += v
	}
	return lead, trail
}

// nameRune reports a rune that may be part of a command's path.
func nameRune(r rune) bool {
	return r == '/' || r == '.' || r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
}

// literalPart returns the value of a word part that is plain text: a
// literal, a single-quoted string, or a double-quoted one of literals.
func literalPart(part syntax.WordPart) (string, bool) {
	switch x := part.(type) {
	case *syntax.Lit:
		return x.Value, true
	case *syntax.SglQuoted:
		return x.Value, !x.Dollar
	case *syntax.DblQuoted:
		var b strings.Builder
		for _, p := range x.Parts {
			l, ok := p.(*syntax.Lit)
			if !ok {
				return "", false
			}
			b.WriteString(l.Value)
		}
		return b.String(), !x.Dollar
	}
	return "", false
}

// braceWords brace-expands a command name ({rm,-rf,/} runs rm -rf /) into
// at most maxBraceWords literal words; nil when it cannot.
func braceWords(word *syntax.Word) []string {
	cp := &syntax.Word{Parts: slices.Clone(word.Parts)}
	if !syntax.SplitBraces(cp) {
		return nil
	}
	var out []string
	for ew, err := range expand.BracesSeq(nil, cp) {
		if err != nil || len(out) >= maxBraceWords {
			return nil
		}
		s, err := expand.Literal(nil, ew)
		if err != nil {
			return nil
		}
		out = append(out, s)
	}
	return out
}

// redirText is a redirection as written, without a here-document's body.
func (w *walker) redirText(r *syntax.Redirect) string {
	if r.Word == nil || len(r.Word.Parts) == 0 {
		return r.Op.String()
	}
	start, end := r.Pos().Offset(), r.Word.End().Offset()
	if start > end || end > uint(len(w.src)) {
		return r.Op.String()
	}
	return w.src[start:end]
}

// redirect inspects one redirection: it reports whether it is harmless (fd
// duplication, /dev/null), sets c.writes for an output to a file, and walks
// code in its target.
func (w *walker) redirect(r *syntax.Redirect, c *command) bool {
	var target wordInfo
	if r.Word != nil {
		target = w.word(r.Word, false)
	}
	if r.Hdoc != nil && (hdocCode(r.Hdoc) || r.Word != nil && hdocLooksLikeCode(w.text(r.Word), w.text(r.Hdoc))) {
		// An unquoted body expands $(...), `...` and ${...}.
		c.opaque = true
		w.out.opaque = true
		w.word(r.Hdoc, false)
	}
	if target.code {
		c.opaque = true
		return false
	}
	switch r.Op {
	case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
		return false
	case syntax.DplIn, syntax.DplOut:
		if target.val == "-" || isDigits(target.val) {
			return true
		}
	}
	switch target.val {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin":
		return true
	}
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrInOut, syntax.DplOut, syntax.RdrClob,
		syntax.AppClob, syntax.RdrAll, syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob:
		c.writes = true
	}
	return false
}

// hdocCode reports a here-document body that runs code: $(...), `...`,
// $((...)) or ${...} (a plain $NAME only reads a variable).
func hdocCode(body *syntax.Word) bool {
	for _, p := range body.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
		case *syntax.ParamExp:
			if !p.Short {
				return true
			}
		default:
			return true
		}
	}
	return false
}

// hdocLooksLikeCode reports the body of a here-document with an unquoted
// delimiter whose text holds "$(" or a backquote, as the lexer before this
// parser read it, though bash may expand none ($$( is the shell's pid and a
// parenthesis): allow rules do not take it for data.
func hdocLooksLikeCode(delim, body string) bool {
	return !strings.ContainsAny(delim, `'"\`) && (strings.Contains(body, "$(") || strings.Contains(body, "`"))
}

// hasGlob reports unquoted text that pathname expansion may change: *, ?
// or a [...] bracket expression (a lone "[" is the test command).
func hasGlob(s string) bool {
	if strings.ContainsAny(s, "*?") {
		return true
	}
	i := strings.IndexByte(s, '[')
	return i >= 0 && strings.IndexByte(s[i+1:], ']') >= 0
}

// stdin searches what a here-document or here-string feeds a command: code
// when the command is a shell (a parse error then fails closed), data
// otherwise, searched as far as it parses in case something runs it.
func (w *walker) stdin(r *syntax.Redirect, interp bool) {
	var body string
	switch {
	case r.Hdoc != nil && len(r.Hdoc.Parts) > 0:
		body = w.text(r.Hdoc)
	case r.Op == syntax.WordHdoc && r.Word != nil && interp:
		body = w.word(r.Word, true).val
	default:
		return
	}
	if interp {
		w.parse(body, w.depth+1, false)
		return
	}
	w.scanData(body)
}

// scanData searches text that is data to its command (cat <<EOF) for
// commands deny rules should see: the whole when it parses, else each line
// that does.
func (w *walker) scanData(body string) {
	if w.depth+1 > maxNesting || w.scanning {
		return
	}
	try := func(s string) bool {
		var p parsedShell
		(&walker{out: &p, scanning: true}).parse(s, w.depth+1, false)
		if p.err != nil {
			return false
		}
		w.out.nested = append(append(w.out.nested, p.cmds...), p.nested...)
		return true
	}
	if try(body) {
		return
	}
	for line := range strings.SplitSeq(body, "\n") {
		if !try(line) {
			w.out.nested = append(w.out.nested, looseCommands(line)...)
		}
	}
}

// looseCommands splits shell text (a command line, or a data line that does
// not parse) at every shell operator into commands of whitespace-separated
// words, for deny rules only. Quotes and backslashes are dropped first, so
// an unclosed quote ("git push) does not hide the words behind it; a line
// continuation is read both ways (joined, as bash does outside single
// quotes, and as a line break). Reserved words in front are read past
// (then rm -rf /), and so are eval and a shell's -c in front of the code
// they run (eval then rm -rf /).
func looseCommands(text string) []command {
	var out []command
	texts := []string{text}
	if strings.Contains(text, "\\\n") {
		texts = append(texts, strings.ReplaceAll(text, "\\\n", ""))
	}
	for _, t := range texts {
		for _, part := range strings.FieldsFunc(looseSpelling(t), func(r rune) bool { return strings.ContainsRune(";&|()`{}\n", r) }) {
			ws := pastReserved(strings.Fields(part))
			for n := 0; len(ws) > 0 && n <= maxNesting; ws, n = looseCode(ws), n+1 {
				out = append(out, command{raw: ws, words: ws, opaque: true})
			}
		}
	}
	return out
}

// shellReserved are the reserved words that may stand before a simple
// command; looseCommands reads past them.
var shellReserved = map[string]bool{
	"if": true, "then": true, "else": true, "elif": true, "fi": true,
	"do": true, "done": true, "while": true, "until": true, "!": true,
}

// pastReserved is ws without the reserved words in front.
func pastReserved(ws []string) []string {
	for len(ws) > 0 && shellReserved[ws[0]] {
		ws = ws[1:]
	}
	return ws
}

// looseCode is what the loose command ws hands to eval or to a shell with
// -c (behind wrappers), past reserved words in front: the words after it,
// as its quotes were dropped. Nil when it hands none.
func looseCode(ws []string) []string {
	ws = unwrap(ws)
	if len(ws) > 1 && ws[0] == "eval" {
		return pastReserved(ws[1:])
	}
	if at := shellCode(ws); len(at) > 0 {
		return pastReserved(ws[at[0]:])
	}
	return nil
}

// shellCode lists where in ws the code is that a shell among its first
// words is given with -c (bash -c 'x', xargs sh -c 'x').
func shellCode(ws []string) []int {
	var at []int
	for i := 0; i < len(ws) && i <= maxTails; i++ {
		if name := path.Base(ws[i]); !shellInterpreters[name] || name == "." || name == "source" || name == "eval" {
			continue
		}
		for j := i + 1; j+1 < len(ws) && strings.HasPrefix(ws[j], "-"); j++ {
			if !strings.HasPrefix(ws[j], "--") && strings.Contains(ws[j], "c") {
				at = append(at, j+1)
				break
			}
		}
	}
	return at
}

// looseSpelling is s with its quotes (and the $ of $'...' and $"...") and
// backslashes dropped, carriage returns taken as spaces, and a redirection
// operator set apart from the word before it (curl>0 is curl and >0): shell
// text read loosely, for deny rules only.
func looseSpelling(s string) string {
	s = unquote(dollarQuote.Replace(s))
	var b strings.Builder
	b.Grow(len(s))
	prev := ' '
	for _, r := range s {
		switch r {
		case '\r':
			r = ' '
		case '<', '>':
			if prev != '<' && prev != '>' && prev != ' ' {
				b.WriteByte(' ')
			}
		}
		b.WriteRune(r)
		prev = r
	}
	return b.String()
}

// dollarQuote drops $' and $" with their quote, which looseSpelling drops
// anyway: $'rm' reads as rm.
var dollarQuote = strings.NewReplacer(`$'`, "", `$"`, "")

// hidden parses again the code a command hands to eval or to a shell with
// -c (also behind xargs, sudo, find -exec): its commands are nested.
func (w *walker) hidden(c command) {
	ws := unwrap(c.words)
	if len(ws) > 0 && ws[0] == "eval" {
		w.parse(strings.Join(ws[1:], " "), w.depth+1, false)
	}
	for _, i := range shellCode(ws) {
		w.parse(ws[i], w.depth+1, false)
	}
}

// assign reads one assignment (NAME=value, a declaration's argument) and
// reports its value as NAME=value and whether it runs code.
func (w *walker) assign(a *syntax.Assign) (string, bool) {
	code := false
	if a.Index != nil || a.Array != nil {
		// a[i]=x evaluates i as arithmetic; a=(...) is a list: neither
		// is plain text to a rule.
		code = true
		if a.Index != nil {
			w.hiddenNode(a.Index)
		}
		if a.Array != nil {
			w.hiddenNode(a.Array)
			// The lexer before this parser read (...) as a subshell.
			w.scanData(strings.TrimSuffix(strings.TrimPrefix(w.text(a.Array), "("), ")"))
		}
	}
	var b strings.Builder
	if a.Name != nil {
		b.WriteString(a.Name.Value)
		if !a.Naked {
			if a.Append {
				b.WriteString("+=")
			} else {
				b.WriteString("=")
			}
		}
	}
	if a.Value != nil && len(a.Value.Parts) > 0 {
		wi := w.word(a.Value, false)
		code = code || wi.code
		b.WriteString(wi.val)
	}
	return b.String(), code
}

// wordInfo is what a word is known to be before the shell runs.
type wordInfo struct {
	val   string // quotes and escapes removed; expansions kept as written
	param bool   // holds a parameter expansion ($X)
	glob  bool   // holds an unquoted glob (*, ?, [) or extended glob
	brace bool   // holds an unquoted brace expansion candidate
	code  bool   // runs code: $(...), `...`, <(...), $((...)), ${...} that can
}

// static reports a word whose value is known: only literal text and quotes.
func (wi wordInfo) static() bool { return !wi.param && !wi.glob && !wi.brace && !wi.code }

// word reads one word, walking the code it runs as nested commands (unless
// quiet, for a word read a second time).
func (w *walker) word(word *syntax.Word, quiet bool) wordInfo {
	var wi wordInfo
	var b strings.Builder
	for _, part := range word.Parts {
		w.wordPart(part, &b, &wi, false, quiet)
	}
	wi.val = b.String()
	// A brace beside an expansion ($${, ${0#{}) is read by bash's grammar,
	// not by rules written against text: treated like code, as the lexer
	// before this parser did.
	if wi.param && strings.ContainsAny(w.outsideParams(word), "{}") {
		wi.code = true
	}
	return wi
}

// outsideParams is the text of word without its parameter expansions.
func (w *walker) outsideParams(word *syntax.Word) string {
	text := w.text(word)
	var b strings.Builder
	at := word.Pos().Offset()
	syntax.Walk(word, func(n syntax.Node) bool {
		pe, ok := n.(*syntax.ParamExp)
		if !ok {
			return true
		}
		start, end := pe.Pos().Offset()-at, pe.End().Offset()-at
		if start < uint(len(text)) && end <= uint(len(text)) && start <= end {
			b.WriteString(text[:start])
			text, at = text[end:], pe.End().Offset()
		}
		return false
	})
	b.WriteString(text)
	return b.String()
}

func (w *walker) wordPart(part syntax.WordPart, b *strings.Builder, wi *wordInfo, quoted, quiet bool) {
	switch p := part.(type) {
	case *syntax.Lit:
		if quoted {
			b.WriteString(unescapeDouble(p.Value))
			return
		}
		if hasGlob(p.Value) {
			wi.glob = true
		}
		if strings.Contains(p.Value, "{") {
			wi.brace = true
		}
		b.WriteString(unescape(p.Value))
	case *syntax.SglQuoted:
		if !p.Dollar {
			b.WriteString(p.Value)
			return
		}
		s, _, err := expand.Format(nil, p.Value, nil)
		if err != nil {
			s = p.Value
		}
		s, _, _ = strings.Cut(s, "\x00")
		b.WriteString(s)
	case *syntax.DblQuoted:
		for _, q := range p.Parts {
			w.wordPart(q, b, wi, true, quiet)
		}
	case *syntax.ParamExp:
		wi.param = true
		text := w.text(p)
		b.WriteString(text)
		if riskyParam(p, text) {
			wi.code = true
		}
		w.paramWords(p, wi, quiet)
	case *syntax.CmdSubst, *syntax.ArithmExp, *syntax.ProcSubst:
		wi.code = true
		b.WriteString(w.text(p))
		if !quiet {
			w.hiddenNode(p)
		}
	default:
		// Extended globs @(a|b) and anything else: not plain text, and
		// parentheses the lexer before this parser took for code.
		wi.glob, wi.code = true, true
		b.WriteString(w.text(p))
		if g, ok := p.(*syntax.ExtGlob); ok && g.Pattern != nil && !quiet {
			w.scanData(g.Pattern.Value) // read as a subshell before
		}
	}
}

// paramWords walks the words inside a parameter expansion (${x:-word},
// ${x/a/b}, subscripts and slices), each once, so that nesting costs
// linear time.
func (w *walker) paramWords(p *syntax.ParamExp, wi *wordInfo, quiet bool) {
	var words []*syntax.Word
	if p.Exp != nil {
		words = append(words, p.Exp.Word)
	}
	if p.Repl != nil {
		words = append(words, p.Repl.Orig, p.Repl.With)
	}
	for _, word := range words {
		if word != nil && w.word(word, quiet).code {
			wi.code = true
		}
	}
	if quiet {
		return
	}
	arith := []syntax.ArithmExpr{p.Index}
	if p.Slice != nil {
		arith = append(arith, p.Slice.Offset, p.Slice.Length)
	}
	for _, n := range arith {
		if n != nil {
			w.hiddenNode(n)
		}
	}
}

// riskyParam reports a parameter expansion that can run code or whose
// value rules cannot read: indirection (${!x}), subscripts and slices
// (arithmetic), transformations such as ${x@P} (prompt expansion runs
// $(...)), and anything holding a substitution, parentheses or quotes
// (which the lexer before this parser could not follow).
func riskyParam(p *syntax.ParamExp, text string) bool {
	if p.Excl || p.Index != nil || p.Slice != nil || p.Names != 0 || strings.ContainsAny(text, "(`\"'") {
		return true
	}
	// Braces inside ${...} (a pattern such as ${0#{}) are read by bash's
	// grammar, not by rules written against text: treated like quotes.
	if inner := strings.TrimSuffix(strings.TrimPrefix(text, "${"), "}"); strings.ContainsAny(inner, "{}") {
		return true
	}
	// Substitutions inside are caught by the parentheses and backquotes
	// they are written with.
	return p.Exp != nil && p.Exp.Op == syntax.OtherParamOps
}

// unescape removes the backslashes of unquoted text: \x is x, and a
// backslash-newline is nothing.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			if s[i] != '\n' {
				b.WriteByte(s[i])
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unescapeDouble removes the backslashes that escape inside double quotes:
// before $, `, ", \ and newline; others stay.
func unescapeDouble(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
			i++
			if s[i] != '\n' {
				b.WriteByte(s[i])
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unwrapFirst is the command name after assignments and wrappers.
func unwrapFirst(words []string) string {
	w := unwrap(words)
	if len(w) == 0 {
		return ""
	}
	return w[0]
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
