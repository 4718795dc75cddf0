package policy

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// permission ranks a decision from strictest to widest: a denial, an allow
// by default (left to the CLI's permission mode or a client: an ask), an
// allow by a rule.
func permission(d Decision) int {
	switch {
	case !d.Allow:
		return 0
	case d.Rule == DefaultRule:
		return 1
	}
	return 2
}

var permissionNames = []string{"deny", "ask", "allow"}

// Policies the shell tests decide under: a bare Bash allow with deny rules,
// textual allow rules under default deny, and allow rules under default
// allow (so an unmatched command is an ask).
var shellSpecs = map[string]Spec{
	"bare": {Allow: []string{"Bash"}, Deny: []string{"Bash(rm -rf *)", "Bash(git push*)", "Bash(curl:*)"}},
	"rules": {Allow: []string{"Bash(go test *)", "Bash(echo *)", "Bash(cat *)", "Bash(git status)", "Bash(ls *)",
		"Bash(* install)", "Bash(go test * > cover.txt)"}},
	"ask": {Allow: []string{"Bash(go test *)", "Bash(echo *)", "Bash(git:*)"}, Deny: []string{"Bash(rm -rf *)", "Bash(git push*)"}, Default: "allow"},
}

// TestShellOldLexerWrong lists commands the hand-written lexer decided
// wrongly (every one more permissively than bash's grammar allows); the
// old decision is asserted too, so that each case is shown to be a fix.
func TestShellOldLexerWrong(t *testing.T) {
	nest := "rm -rf /"
	for range 10 {
		nest = "$(" + nest + ")"
	}
	tests := []struct {
		spec, cmd string
		old, want string
	}{
		// ANSI-C quoting spells the command name with escapes.
		{"bare", `$'\x72m' -rf /`, "allow", "deny"},
		// Brace expansion makes the words: {rm,-rf,/} runs rm -rf /.
		{"bare", "{rm,-rf,/}", "allow", "deny"},
		// A here-string is a shell's script.
		{"bare", "bash <<< 'rm -rf /'", "allow", "deny"},
		// Substitutions nested deeper than the lexer's recursion limit.
		{"bare", "echo " + nest, "allow", "deny"},
		// Backticks inside backticks.
		{"bare", "echo `echo \\`rm -rf /\\``", "allow", "deny"},
		// A quote inside ${...} inside double quotes ended the lexer's
		// quoting early, hiding the next command.
		{"bare", `echo "${x:-"}"}" ; rm -rf /`, "allow", "deny"},
		// coproc, case and function bodies are code.
		{"bare", "coproc rm -rf /", "allow", "deny"},
		{"bare", "case x in x) rm -rf /;; esac", "allow", "deny"},
		{"bare", "f() { rm -rf /; }; f", "allow", "deny"},
		// An array subscript is arithmetic, which runs $(...).
		{"bare", "echo ${a[$(rm -rf /)]}", "allow", "deny"},
		// ${x@P} is prompt expansion, which runs $(...) in x's value;
		// ${!x} reads a variable named at run time.
		{"rules", "echo ${x@P}", "allow", "deny"},
		{"rules", "echo ${!x}", "allow", "deny"},
		{"ask", "echo ${x@P}", "allow", "ask"},
		// A glob as the command name runs whatever it matches.
		{"bare", "/bin/r? -rf /", "allow", "deny"},
		{"bare", "sudo /usr/bin/[r]m -rf /", "allow", "deny"},
		{"bare", "g*t push", "allow", "deny"},
		// A quoted variable is still a command name unknown until run.
		{"rules", `"$CMD" install`, "allow", "deny"},
		{"ask", `"$CMD" install`, "ask", "ask"},
	}
	for _, tt := range tests {
		t.Run(tt.spec+" "+tt.cmd, func(t *testing.T) {
			p := mustCompile(t, shellSpecs[tt.spec])
			if got := permissionNames[permission(p.oldDecideBash(tt.cmd))]; got != tt.old {
				t.Errorf("old lexer: %s, want %s (the case no longer shows a fix)", got, tt.old)
			}
			d := p.Decide(bashCall(tt.cmd))
			if got := permissionNames[permission(d)]; got != tt.want {
				t.Fatalf("Decide(%q) = %+v (%s), want %s", tt.cmd, d, got, tt.want)
			}
		})
	}
}

// TestShellConstructs decides bash constructs the parser must read as bash
// does: quoting, continuations, comments, here-documents, operators.
func TestShellConstructs(t *testing.T) {
	tests := []struct {
		spec, cmd, want string
	}{
		// Operators inside quotes, comments and here-document bodies are text.
		{"rules", `echo "a; rm -rf /" 'b && c' d\;e`, "allow"},
		{"rules", "echo ok # ; rm -rf /", "allow"},
		{"rules", "cat <<'EOF'\nrm -rf /; git push\nEOF", "allow"},
		{"bare", "cat <<'EOF'\nrm -rf /\nEOF", "deny"}, // data, but searched in case something runs it
		// A data line that does not parse is read loosely, without its quotes.
		{"bare", "<<'EOF'\n\"git push\nEOF", "deny"},
		{"bare", "cat <<'EOF'\n'rm' -rf \\/ \"x\nEOF", "deny"},
		{"bare", "cat <<'EOF'\n\"git pull\nEOF", "allow"},
		// Deny rules also read the whole line loosely, split at every
		// operator: where bash sees arithmetic or a comment, a spelling
		// that reads as a denied command stays denied, as it was before
		// the parser.
		{"bare", "*$[ (rm -rf )]0", "deny"},
		{"bare", "echo $(( x | rm -rf ))", "deny"},
		{"bare", "go test ./... # ; git push", "deny"},
		{"bare", "go test ./... # then git push", "allow"},
		{"bare", "echo $((1+2))", "allow"},
		// ... past reserved words in front, into what eval or a shell's
		// -c is given, with a line continuation joined and $'...' as a
		// quote.
		{"bare", "cat <<E\nthen rm -rf /\nE", "deny"},
		{"bare", "echo @(eval then rm -rf /)", "deny"},
		{"bare", "select x in bash -c 'sudo rm -rf /'; do :; done", "deny"},
		{"bare", "cat <<E\n(( r\\\nm -rf / ))\nE", "deny"},
		{"bare", "a=($'rm' -rf /)", "deny"},
		{"bare", "((curl>0))", "deny"}, // a redirection ends the word before it
		// An unquoted body whose text holds $( or a backquote is not data
		// to allow rules, even where bash expands none; a quoted one is.
		{"rules", "cat <<E\n$$(\nE", "deny"},
		{"rules", "cat <<'E'\n$(x) `y`\nE", "allow"},
		// A carriage return inside quotes or a literal is text to both.
		{"rules", "echo 'a\rb' \"c\rd\"", "allow"},
		{"rules", "cat <<'E'\na\r\nE", "allow"},
		{"bare", `git commit -m "then git pull"`, "allow"},
		{"rules", "cat <<EOF\nhello $USER\nEOF", "allow"},
		{"rules", "cat <<EOF\n$(git push)\nEOF", "deny"},
		{"rules", "cat <<EOF\nx\nEOF\nrm -rf /", "deny"},
		{"rules", "cat <<-EOF\n\tx\n\tEOF\necho done", "allow"},
		// Line continuations join words and lines.
		{"rules", "go test \\\n  ./...", "allow"},
		{"bare", "r\\\nm -rf /", "deny"},  // bash reads "rm", and so do deny rules ...
		{"rules", "r\\\nm -rf /", "deny"}, // ... while allow rules see the line as written
		// ANSI-C quoting: a quote escaped inside $'...' does not end it.
		{"rules", `echo $'it\'s; rm -rf /'`, "allow"},
		{"bare", `echo $'\''; rm -rf /`, "deny"},
		// |&, &>, >|, here-strings.
		{"bare", "go test |& rm -rf /", "deny"},
		{"rules", "go test ./... &> /dev/null", "allow"},
		{"rules", "go test ./... &> log", "deny"},
		{"rules", "go test ./... >| cover.txt", "deny"},
		{"rules", "go test ./... > cover.txt", "allow"},
		{"rules", "cat <<< hello", "allow"},
		// Arithmetic and brace expansion.
		{"rules", "echo $((1+2))", "deny"},
		{"ask", "echo $((1+2))", "ask"},
		{"rules", "echo {a,b}.txt", "allow"},
		{"rules", "echo @(a|b).txt", "deny"}, // an extended glob: parentheses count as code
		{"rules", "$'npm' install", "deny"},
		{"rules", "a=(x y) echo hi", "deny"},
		{"bare", "a=(rm -rf /)", "deny"},
		{"bare", "rm\r -rf /", "deny"},
		{"bare", "while read l; do echo $l; done <<EOF\nrm -rf /\nEOF", "deny"},
		{"bare", "git push{,}", "deny"},
		{"rules", "{echo,hi}", "deny"},
		// time, !, exec, command, nohup and assignments in front.
		{"rules", "time go test ./...", "allow"},
		{"rules", "time -p go test ./...", "allow"},
		{"rules", "! go test ./...", "allow"},
		{"rules", "exec go test ./...", "allow"},
		{"rules", "nohup go test ./...", "allow"},
		{"bare", "time rm -rf /", "deny"},
		{"bare", "! rm -rf /", "deny"},
		{"bare", "exec rm -rf /", "deny"},
		{"bare", "command rm -rf /", "deny"},
		{"bare", "FOO=1 BAR=2 rm -rf /", "deny"},
		{"bare", "env X=1 rm -rf /", "deny"},
		{"bare", "xargs -0 rm -rf", "deny"},
		{"bare", "nohup timeout 5 rm -rf /", "deny"},
		// Compound commands.
		{"rules", "if go test ./...; then echo ok; else echo no; fi", "allow"},
		{"rules", "while go test ./...; do echo again; done", "allow"},
		{"rules", "{ go test ./...; echo ok; } 2>&1", "allow"},
		{"rules", "{ go test ./...; } > out.txt", "deny"},
		{"rules", "(go test ./...)", "deny"},
		{"rules", "for p in a b; do go test $p; done", "deny"},
		{"bare", "while true; do rm -rf /; done", "deny"},
		{"bare", "until false; do :; done && git push", "deny"},
		{"bare", "select x in a; do rm -rf /; done", "deny"},
		{"bare", "[[ -n $(git push) ]]", "deny"},
		{"bare", "diff <(curl a) b", "deny"},
		{"bare", "tee >(rm -rf /)", "deny"},
		// Shells and eval, parsed again.
		{"bare", `bash -c 'sh -c "eval \"rm -rf /\""'`, "deny"},
		{"bare", `zsh -c 'git push'`, "deny"},
		{"bare", `eval "git" "push"`, "deny"},
		{"rules", `bash -c 'go test ./...'`, "deny"},
		// Unknown command names: never allowed by a rule.
		{"rules", "$GO test ./...", "deny"},
		{"rules", "$(which go) test ./...", "deny"},
		{"rules", "`which go` test ./...", "deny"},
		{"rules", "${!x} test", "deny"},
		{"rules", "l? -la", "deny"},
		{"bare", "/bin/l? -la", "allow"}, // matches no deny rule's name
		{"bare", "sudo ls *", "allow"},   // a bare * is taken as arguments, not as curl
		{"rules", "timeout 5 $CMD", "deny"},
		{"ask", "$GO test ./...", "ask"},
		{"ask", "eval \"$v\"", "ask"},
		{"bare", "$GO test ./...", "allow"}, // a bare Bash rule allows anything no deny rule catches
	}
	for _, tt := range tests {
		t.Run(tt.spec+" "+tt.cmd, func(t *testing.T) {
			d := mustCompile(t, shellSpecs[tt.spec]).Decide(bashCall(tt.cmd))
			if got := permissionNames[permission(d)]; got != tt.want {
				t.Fatalf("Decide(%q) under %s = %+v (%s), want %s", tt.cmd, tt.spec, d, got, tt.want)
			}
		})
	}
}

// TestShellUnparsable checks that text bash would reject fails closed:
// denied when deny rules apply to Bash (they cannot be checked), otherwise
// allowed only by a bare Bash rule.
func TestShellUnparsable(t *testing.T) {
	// A carriage return between words or after a backslash: bash reads
	// it as part of a word, the parser as a space or a line
	// continuation, hiding the rm bash runs.
	misread := []string{"echo x\r#; rm -rf ~", "go test x\\\r\nrm -rf ~", "go test \\\r\nrm -rf ~", "cat <<E\n$(echo x\r#; rm -rf ~\n)\nE"}
	// A here-document body the parser ends at its delimiter written after
	// an expansion, or reads past a line that is its delimiter (U+FFFD),
	// where bash reads on or ends it.
	misread = append(misread, "cat<<E\n$0E", "cat <<-E\n\tx${y}E\nrm -rf ~", "cat<<\uFFFD\n\uFFFD\n\uFFFD")
	for _, cmd := range append([]string{"go test ./...\x00; rm -rf /", `echo "unterminated`, "echo $(", "if true; then", "go test )", "cat <<EOF\nno end", "a |", "bash -c 'echo \"'"}, misread...) {
		t.Run(cmd, func(t *testing.T) {
			d := mustCompile(t, shellSpecs["bare"]).Decide(bashCall(cmd))
			if d.Allow || d.Rule != UnparsableRule || !strings.Contains(d.Message, "does not parse") {
				t.Errorf("with deny rules: %+v, want denied as unparsable", d)
			}
			d = mustCompile(t, shellSpecs["rules"]).Decide(bashCall(cmd))
			if d.Allow || d.Rule != DefaultRule || !strings.Contains(d.Message, "does not parse") {
				t.Errorf("with allow rules: %+v, want denied by default, saying it does not parse", d)
			}
			if d := mustCompile(t, Spec{Allow: []string{"Bash"}}).Decide(bashCall(cmd)); !d.Allow {
				t.Errorf("bare Bash without deny rules: %+v, want allowed", d)
			}
		})
	}
}

// TestShellLimits feeds nesting past every bound: it must fail closed, not
// crash.
func TestShellLimits(t *testing.T) {
	p := mustCompile(t, shellSpecs["bare"])
	deep := strings.Repeat("$(", 5000) + "true" + strings.Repeat(")", 5000)
	shells := "rm -rf /"
	for range maxNesting + 2 {
		shells = "sh -c " + strconv.Quote(shells)
	}
	for _, cmd := range []string{deep, strings.Repeat("(", 100000), strings.Repeat("${a:-", 50000), shells, strings.Repeat("x", maxShellLen+1)} {
		if d := p.Decide(bashCall(cmd)); d.Allow {
			t.Errorf("Decide(%.40q...) = %+v, want denied", cmd, d)
		}
	}
	// Within the bounds, nesting must cost linear time, not double per
	// level (each of these would take 2^150 steps if it did).
	for _, unit := range []string{"a[0]=$(", "echo ${a:-$(", "x=(a $("} {
		cmd := strings.Repeat(unit, 150) + "rm -rf /" + strings.Repeat(")", 150)
		if strings.Contains(unit, "{") {
			cmd = strings.Repeat(unit, 90) + "rm -rf /" + strings.Repeat(")}", 90)
		}
		if unit == "x=(a $(" {
			cmd = strings.Repeat(unit, 90) + "rm -rf /" + strings.Repeat("))", 90)
		}
		if d := p.Decide(bashCall(cmd)); d.Allow || d.Rule != "Bash(rm -rf *)" {
			t.Errorf("Decide(%.40q...) = %+v, want denied by the rm rule", cmd, d)
		}
	}
}

// TestShellLongChains checks that long lists and pipelines, which the
// parser nests in its tree, are not taken for deep nesting.
func TestShellLongChains(t *testing.T) {
	p := mustCompile(t, shellSpecs["rules"])
	for _, op := range []string{" && ", " || ", " | ", "; ", "\n"} {
		cmd := strings.Repeat("go test ./..."+op, 2000) + "echo done"
		if d := p.Decide(bashCall(cmd)); !d.Allow {
			t.Errorf("2000 commands joined by %q: %+v, want allowed", op, d)
		}
	}
}

// FuzzShellParserNotMorePermissive decides generated commands with the
// parser and with the old hand-written lexer (oldshell_test.go) under
// several policies: the parser's decision may be stricter, never wider
// (an allow by rule where the lexer asked or denied, or an ask where it
// denied).
func FuzzShellParserNotMorePermissive(f *testing.F) {
	for _, s := range shellFuzzSeeds(f) {
		f.Add(s)
	}
	var names []string
	var pols []*Policy
	for name, spec := range shellSpecs {
		p, errs := Compile(spec)
		if len(errs) > 0 {
			f.Fatal(errs)
		}
		names, pols = append(names, name), append(pols, p)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// The command as it reaches Decide, through JSON: invalid UTF-8
		// becomes U+FFFD there, and the old lexer must see the same text.
		s = strings.ToValidUTF8(s, "\uFFFD")
		for i, p := range pols {
			d, old := p.Decide(bashCall(s)), p.oldDecideBash(s)
			if permission(d) > permission(old) {
				t.Fatalf("under %s, %q: parser %s (%+v), old lexer %s (%+v)", names[i], s,
					permissionNames[permission(d)], d, permissionNames[permission(old)], old)
			}
		}
	})
}

// shellFuzzSeeds are the Bash commands of FuzzDecide's corpus and seeds,
// and constructs the old lexer and the parser may read differently.
func shellFuzzSeeds(f *testing.F) []string {
	seeds := []string{"go test ./... && rm -rf /", "echo $(a `b` (c)) <<EOF\nx\nEOF", `bash -c "eval 'x'"`, "a 2>&1 | b >f", "((", "'", `"$(`, "cat <<-'E'\n\tE", "f() { x; }", "${a:-$(b)}",
		`$'\x72m' -rf /`, "{rm,-rf,/}", "bash <<< 'rm -rf /'", "echo `echo \\`rm -rf /\\``", `echo "${x:-"}"}" ; rm -rf /`,
		"coproc rm -rf /", "case x in x) rm -rf /;; esac", "echo ${a[$(rm -rf /)]}", "echo ${x@P}", `"$CMD" install`,
		"cat <<'EOF'\nrm -rf /; git push\nEOF", "go test \\\n ./... # x", "time -p go test ./... |& tee x &> y", "! exec go test $((1)) {a,b}",
		"if go test; then echo; elif ls; then :; else git status; fi", "while read l; do echo $l; done < f", "FOO=1 env X=2 nohup command timeout 5 go test ./...",
		"xargs sh -c 'git push'", "find . -exec bash -c 'rm -rf x' \\;", "echo \"a\\\"b\" 'c\\' d", "cd x; pwd; true; :", "go test ./... > cover.txt",
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "fuzz", "*", "*"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "string("); ok {
				if s, err := strconv.Unquote(strings.TrimSuffix(v, ")")); err == nil && s != "Bash" {
					seeds = append(seeds, s)
				}
			}
		}
	}
	return seeds
}

// A command whose name is not known before it runs may run its arguments
// (the name expands to nothing) or its name's literal beginning or end:
// deny rules see those spellings (the fuzz target found "${0#"}"}&"rm -rf",
// whose name ends in rm, allowed where the old lexer denied it).
func TestShellUnknownNameDenied(t *testing.T) {
	p := mustCompile(t, shellSpecs["bare"])
	for _, cmd := range []string{`${X}rm -rf /`, `rm${X} -rf /`, `"$X"rm -rf /`, `$X rm -rf /`, `"$(true)" rm -rf /`,
		`"${0#"}"}&"rm -rf`, `"${0#"}"}&rm -r"f`, `${0#"}"} "&rm -r"f`, `${0#"}"}"(rm -r"f`, "${0#\"}\"}'`rm -r'f", `"rm -rf /;$X"`, `${X}/bin/rm -rf /`, `$'\x72'm -rf /`} {
		if d := p.Decide(bashCall(cmd)); d.Allow || d.Rule != "Bash(rm -rf *)" {
			t.Errorf("Decide(%q) = %+v, want denied by the rm rule", cmd, d)
		}
	}
	for _, cmd := range []string{`$GO test ./...`, `"$CMD" install`, `${X}ls -la`} {
		if d := p.Decide(bashCall(cmd)); !d.Allow {
			t.Errorf("Decide(%q) = %+v, want allowed by the bare Bash rule", cmd, d)
		}
	}
}

// A brace beside a parameter expansion ($${, ${0#{}) is read by bash's
// grammar, not by rules written against text: only a bare Bash rule
// allows it, as the lexer before the parser decided (found by
// FuzzShellParserNotMorePermissive).
func TestShellBraceBesideExpansion(t *testing.T) {
	p := mustCompile(t, shellSpecs["rules"])
	for _, cmd := range []string{`echo $${`, `go test ${0#{}`, `echo ${X}}`} {
		if d := p.Decide(bashCall(cmd)); d.Allow {
			t.Errorf("Decide(%q) = %+v, want left to the default (deny)", cmd, d)
		}
	}
	for _, cmd := range []string{`echo ${HOME}`, `go test ./... ${X}`, `echo "$HOME" {a,b}`} {
		if d := p.Decide(bashCall(cmd)); !d.Allow {
			t.Errorf("Decide(%q) = %+v, want allowed", cmd, d)
		}
	}
}

// The parser ends a here-document's delimiter word at "#" and takes the
// rest of the line for a comment, where bash reads on: such a line fails
// closed (found by FuzzShellParserNotMorePermissive).
func TestShellHeredocDelimiterHash(t *testing.T) {
	p := mustCompile(t, shellSpecs["bare"])
	cmd := "cat <<'EOF'#x& git push\nEOF"
	if d := p.Decide(bashCall(cmd)); d.Allow {
		t.Fatalf("Decide(%q) = %+v, want denied", cmd, d)
	}
}

// A comment whose line ends in a backslash ends at the newline in bash,
// while the parser reads the next line into the command before it: such a
// line fails closed, at the top and in a substitution (found by
// FuzzShellParserNotMorePermissive). A "#" that starts no comment (in a
// word, quotes, an expansion or a here-document) before a continued line
// changes nothing.
func TestShellCommentContinued(t *testing.T) {
	rules, bare := mustCompile(t, shellSpecs["rules"]), mustCompile(t, shellSpecs["bare"])
	for _, c := range []struct {
		p   *Policy
		cmd string
	}{
		{rules, "go test #\\\nrm -rf ~"},
		{rules, "go test ./... # run them all \\\nrm -rf ~"},
		{bare, "echo $(true #\\\nrm -rf /)"},
		{bare, "echo x;#\\\nrm -rf /"},
	} {
		if d := c.p.Decide(bashCall(c.cmd)); d.Allow {
			t.Errorf("Decide(%q) = %+v, want it refused", c.cmd, d)
		}
	}
	for _, c := range []struct {
		p   *Policy
		cmd string
	}{
		{rules, "go test \\\n ./... # x"},
		{rules, "echo a#b \\\n c"},
		{rules, "echo \"a #b\" 'c #d' \\\n e"},
		{rules, "cat <<'EOF'\n# x \\\nEOF"},
		{bare, "echo ${x#y} $((2#101)) $# \\\n e"}, // expansions: only a bare rule allows them
	} {
		if d := c.p.Decide(bashCall(c.cmd)); !d.Allow {
			t.Errorf("Decide(%q) = %+v, want allowed", c.cmd, d)
		}
	}
}

// TestShellHidingPlaces puts commands the old lexer denied into every
// place where bash's grammar sees no command or code run later
// (arithmetic, comments, here-document data, patterns, arrays, quotes,
// select lists, substitutions), alone and nested once inside the places
// that hide the most, and checks that the parser's decision is never more
// permissive than the old lexer's: the fuzz property, over the constructs
// it took CI's fuzzer several runs to find one by one.
func TestShellHidingPlaces(t *testing.T) {
	cmds := hidingCommands()
	for _, name := range slices.Sorted(maps.Keys(shellSpecs)) {
		p := mustCompile(t, shellSpecs[name])
		failed := 0
		for _, s := range cmds {
			d, old := p.Decide(bashCall(s)), p.oldDecideBash(s)
			if permission(d) > permission(old) {
				t.Errorf("under %s, %q: parser %s (%+v), old lexer %s (%+v)", name, s,
					permissionNames[permission(d)], d, permissionNames[permission(old)], old)
				if failed++; failed == 20 {
					t.FailNow()
				}
			}
		}
	}
}

// hidingCommands builds TestShellHidingPlaces' commands: each payload in
// each place, and a few nested once more in the places that hide best.
func hidingCommands() []string {
	places := []string{"echo $(( X ))", "*$[ X ]0", "(( X ))", "echo ${a[X]}", "echo ${a:X}", `let "X"`, "for ((X;;)); do :; done",
		"case x in X) ;; esac", "[[ x =~ X ]]", "go test # X", "a[X]=1", "echo X", `echo "X"`, "echo 'X'", "$X", "${X}", "x$(X)",
		"cat <<E\nX\nE", "cat <<'E'\nX\nE", "f() { X; }", "echo @(X)", "a=(X)", "X", "{ X; }", "if X; then :; fi", "time X", "! X",
		"echo $'X'", "echo ${x:-X}", "echo ${x/X/y}", "echo ${x//X/}", "x=X y", `x="X" cmd`, "X &", "X | cat", "cat <(X)", "echo >(X)",
		"x=$(X)", "echo `X`", "exec X", "command X", "eval X", "bash -c 'X'", "declare -a x=(X)", "echo ${!X}", "[ X ]", "echo X >f",
		"X 2>&1", "while X; do :; done", "coproc X", "select x in X; do :; done", `echo "$(X)"`, `echo \X`, `git commit -m "X"`}
	// The places that hide a command from the parser best, to nest others in.
	outer := []string{"echo $(( X ))", "go test # X", "cat <<E\nX\nE", "echo @(X)", "a=(X)", "select x in X; do :; done"}
	payloads := []string{"(rm -rf )", "x | rm -rf", "1;rm -rf /", "then rm -rf /", "! rm -rf", "1 && git push", "`rm -rf`",
		"{ rm -rf; }", "x<rm -rf", "1)rm -rf (", "do rm -rf", "sudo rm -rf /", "timeout 5 git push", "x>&rm -rf", `x\;rm -rf /`,
		"x\nrm -rf /", "x\r\nrm -rf /", "x #\nrm -rf", "r\\\nm -rf /", "/bin/rm -rf /", `"rm" -rf /`, "x||rm -rf", "x|&git push",
		`\rm -rf /`, "curl:x", "x;curl x", "1;eval 'git push'", `1;sh -c "git push"`, "1;env -i git push", "1;xargs rm -rf",
		"1;$'rm' -rf /", `1;r""m -rf /`, "1;{rm,-rf,/}", "1;'git' push", "1;git\tpush", "1;r? -rf /", "1;nice -n 5 rm -rf /",
		"1;timeout -s 9 5 git push", "a;$X rm -rf /", "a;${X}rm -rf /", "1;case x in x) git push;; esac", "1;builtin eval git push", "1;curl>x"}
	nested := []string{"1;rm -rf /", "then rm -rf /", "r\\\nm -rf /", "1;$'rm' -rf /", "1;sudo rm -rf /", "1;bash -c 'nohup git push'"}
	var cmds []string
	for _, place := range places {
		for _, p := range payloads {
			cmds = append(cmds, strings.ReplaceAll(place, "X", p))
		}
		for _, o := range outer {
			for _, p := range nested {
				cmds = append(cmds, strings.ReplaceAll(o, "X", strings.ReplaceAll(place, "X", p)))
			}
		}
	}
	return cmds
}
