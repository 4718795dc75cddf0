// Package redact hides secrets (API keys, tokens, passwords, private keys)
// in text before pneuma writes it to an audit log, a report or an export.
//
// It is built for large inputs: `pneuma history show` passes multi-MB tool
// outputs through String, so every pattern is guarded by a literal hint that
// is searched with vectorised byte scans, and the regular expressions run
// only on small windows around each hint (Go's regexp runs at a few MB/s on
// patterns without a literal prefix). Only private keys, whose pattern has
// one, are matched on the whole text.
package redact

import (
	"regexp"
	"strings"
)

// Marker replaces every redacted secret.
const Marker = "[REDACTED]"

// secretWord in a variable, key or flag name marks its value as a secret;
// secretName is such a name, except one that ends in "tokens", which counts
// them (max_tokens, input_tokens). Letters are matched in ASCII case only
// (not with (?i), which also folds the Kelvin sign into k), so that the
// hints below find every match.
var (
	secretWord = `(?:` + ci("key") + `|` + ci("token") + `|` + ci("secret") + `|` + ci("password") + `|` + ci("passwd") + `)`
	nameChars  = `[A-Za-z0-9_.-]*`
	secretName = nameChars + `(?:` +
		`(?:` + ci("key") + `|` + ci("secret") + `|` + ci("password") + `|` + ci("passwd") + `)` + nameChars + `|` +
		ci("token") + `(?:[A-RT-Za-rt-z0-9_.-]` + nameChars + `|[Ss][A-Za-z0-9_.-]+)?)`
)

// ci is a regular expression matching the ASCII word w in any case.
func ci(w string) string {
	var b strings.Builder
	for _, c := range w {
		if 'a' <= c && c <= 'z' {
			b.WriteString("[" + string(c-'a'+'A') + string(c) + "]")
		} else {
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	return b.String()
}

// hint is a literal that occurs in every match of a group's patterns. It is
// found by scanning for one of its bytes, word[at], chosen to be rare in
// ordinary text, and comparing around each occurrence.
type hint struct {
	word string // lower case when fold is set
	at   int
	fold bool // ASCII case-insensitive
}

// rule is one regular expression and its replacement. A replacement keeps
// only text of its input plus Marker, so the output never grows by more than
// the markers it contains.
type rule struct {
	re   *regexp.Regexp
	repl string
	need string // every match contains this, when set
	// check, when set, is what Secrets asks of a match: group 1 holds the
	// name (or prefix), group 2 the value; the match is kept unless the
	// value looks like a secret. String ignores it.
	check func(name, value string) bool
}

// group is a set of rules sharing hints. The rules run on windows around
// each hint occurrence, computed by near (lineWindow or nameWindow), which
// reach at most maxBack bytes before and maxAhead bytes after the hint;
// overlapping windows are merged. A secret longer than that may survive.
// A whole group (private keys, whose blocks span many lines) runs on the
// whole text instead, once one of its hints occurs.
type group struct {
	hints []hint
	whole bool
	near  func(s string, i, j int) (lo, hi int, ok bool) // lineWindow when nil
	rules []rule
	ps    []probe // set by init
}

const (
	maxBack  = 1 << 10
	maxAhead = 8 << 10
)

func mustRule(expr, repl string) rule { return rule{re: regexp.MustCompile(expr), repl: repl} }

// needs returns r, which only runs on text that contains need.
func (r rule) needs(need string) rule {
	r.need = need
	return r
}

// checked returns r, which in Secrets replaces only values that pass check.
func (r rule) checked(check func(name, value string) bool) rule {
	r.check = check
	return r
}

// groups run in order.
var groups = []group{
	// PEM private keys, also when cut off before their END line.
	{
		hints: []hint{{"PRIVATE KEY", 8, false}},
		whole: true,
		rules: []rule{mustRule(`(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\z)`, Marker)},
	},
	// Anthropic, OpenAI and similar API keys.
	{
		hints: []hint{{"sk-", 1, false}},
		rules: []rule{mustRule(`\bsk-(?:ant-[A-Za-z0-9_-]{8,}|[A-Za-z0-9_-]{16,})`, Marker)},
	},
	// GitHub tokens.
	{
		hints: []hint{{"ghp_", 3, false}, {"gho_", 3, false}, {"ghu_", 3, false}, {"ghs_", 3, false}, {"ghr_", 3, false}, {"github_pat_", 6, false}},
		rules: []rule{mustRule(`\b(?:gh[pousr]_[A-Za-z0-9]{16,}|github_pat_[A-Za-z0-9_]{16,})`, Marker)},
	},
	// AWS access key ids.
	{
		hints: []hint{{"AKIA", 1, false}, {"ASIA", 1, false}},
		rules: []rule{mustRule(`\b(?:AKIA|ASIA)[A-Z0-9]{16}\b`, Marker)},
	},
	// Slack tokens.
	{
		hints: []hint{{"xox", 0, false}},
		rules: []rule{mustRule(`\bxox[abposre]-[A-Za-z0-9-]{8,}`, Marker)},
	},
	// HTTP bearer credentials; a trailing dot ends a sentence, not the token.
	{
		hints: []hint{{"bearer", 0, true}},
		rules: []rule{mustRule(`(\b`+ci("bearer")+`\s+)([A-Za-z0-9._~+/=-]{7,}[A-Za-z0-9_~+/=-])`, "${1}"+Marker).checked(randomValue)},
	},
	// Passwords in URLs: scheme://user:password@host.
	{
		hints: []hint{{"://", 0, false}},
		rules: []rule{mustRule(`(://[^/\s:@]+:)([^/\s@]+)@`, "${1}"+Marker+"@").checked(passwordValue)},
	},
	// Values of names that contain key, token, secret or password.
	{
		hints: []hint{{"key", 0, true}, {"token", 2, true}, {"secret", 2, true}, {"passw", 4, true}},
		near:  nameWindow,
		rules: []rule{
			// "api_key": "value" in JSON.
			mustRule(`("`+secretName+`"\s*:\s*)("(?:[^"\\]|\\.)*")`, `${1}"`+Marker+`"`).needs(`"`).checked(namedValue),
			// The same inside a JSON string: {\"api_key\": \"value\"}.
			mustRule(`(\\"`+secretName+`\\"\s*:\s*)(\\"(?:[^"\\]|\\[^"])*\\")`, `${1}\"`+Marker+`\"`).needs(`\"`).checked(namedValue),
			// API_KEY=value, --token=value.
			mustRule(`\b(`+secretName+`=)(\[REDACTED\]|"(?:[^"\\]|\\.)*"|'[^']*'|[^\s"'&;|,)}\]]+)`, "${1}"+Marker).needs("=").checked(namedValue),
			// API_KEY = value, DB_PASSWORD="p w": shell and dotenv
			// assignments, spaces allowed around = when the name is
			// unmistakable.
			mustRule(`(\b[A-Za-z0-9_]*(?:_KEY|_TOKEN|_SECRET|_PASSWORD|_PASSWD|`+ci("password")+`|`+ci("passwd")+`|`+ci("secret")+`)\s*=\s*)("[^"\n]*"|'[^'\n]*'|[^\s"'&;`+"`"+`]+)`, "${1}"+Marker).needs("=").checked(namedValue),
			// api_key: value (YAML, HTTP headers). Only names that cannot
			// be a plain word (api_key, X-Api-Key) or are exactly password,
			// so that prose like "the secret: go" survives.
			mustRule(`\b((?:[A-Za-z0-9.]*[_-]`+secretName+`|`+nameChars+secretWord+`[_-]`+nameChars+`|`+ci("password")+`|`+ci("passwd")+`):[ \t]*)(\[REDACTED\]|[^\s"',;)}\]]+)`, "${1}"+Marker).needs(":").checked(namedValue),
			// --token value.
			mustRule(`(\s--?`+secretName+`[ \t]+)(\[REDACTED\]|[^\s\-"'][^\s"']*|"(?:[^"\\]|\\.)*"|'[^']*')`, "${1}"+Marker).needs("-").checked(namedValue),
		},
	},
}

// maxPasses bounds the passes String makes; in practice a second pass finds
// nothing new.
const maxPasses = 8

// String replaces secrets in s with Marker: API keys (sk-ant-…, sk-…),
// GitHub tokens (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_), AWS access key
// ids (AKIA…, ASIA…), Slack tokens (xox…), bearer credentials, passwords in
// URLs, PEM private key blocks, and the values of NAME=value, NAME = value,
// name: value, "name": "value" and --name value where the name contains key,
// token, secret or password (in any case). It errs on the side of hiding too
// much. String is idempotent, and its output is never longer than its input
// plus the markers it added.
func String(s string) string { return run(s, false) }

// Secrets replaces with Marker only what looks like a secret, so that
// ordinary code (key=lambda x: x.name, STORAGE_KEY = 'todos',
// primary_key: false) passes unchanged: tokens of known shapes (sk-ant-,
// ghp_, github_pat_, AKIA, xoxb-…), PEM private key blocks, and values of
// the names String looks at only when the value looks random (long, mixed,
// high entropy; for passwords: not a word, a literal, a variable or an
// expression). It is what exports use; String, which hides more, is what
// reports and audit logs use. Secrets is idempotent too.
func Secrets(s string) string { return run(s, true) }

func run(s string, precise bool) string {
	// A pass can expose a match for an earlier rule; repeat until stable so
	// that String(String(s)) == String(s).
	for range maxPasses {
		prev := s
		for i := range groups {
			s = groups[i].apply(s, precise)
		}
		if s == prev {
			break
		}
	}
	return s
}

// apply runs g's rules on the parts of s near its hints.
func (g *group) apply(s string, precise bool) string {
	if g.whole {
		if !g.found(s) {
			return s
		}
		return g.replace(s, precise)
	}
	var b strings.Builder
	last := 0 // s[:last] is written to b, or is unchanged when b is empty
	start, end := -1, -1
	flush := func() {
		w := s[start:end]
		r := g.replace(w, precise)
		if r == w {
			return
		}
		if b.Len() == 0 {
			b.Grow(len(s))
		}
		b.WriteString(s[last:start])
		b.WriteString(r)
		last = end
	}
	near := g.near
	if near == nil {
		near = lineWindow
	}
	g.each(s, func(i, j int) {
		lo, hi, ok := near(s, i, j)
		if !ok {
			return
		}
		// Windows start in the order of their hints.
		if start >= 0 && lo <= end {
			end = max(end, hi)
			return
		}
		if start >= 0 {
			flush()
		}
		start, end = lo, hi
	})
	if start < 0 {
		return s
	}
	flush()
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

func (g *group) replace(s string, precise bool) string {
	for _, r := range g.rules {
		if r.need != "" && !strings.Contains(s, r.need) {
			continue
		}
		if precise && r.check != nil {
			s = r.replaceChecked(s)
		} else {
			s = r.re.ReplaceAllString(s, r.repl)
		}
	}
	return s
}

// replaceChecked replaces the matches whose value passes r.check.
func (r rule) replaceChecked(s string) string {
	ms := r.re.FindAllStringSubmatchIndex(s, -1)
	if ms == nil {
		return s
	}
	var b []byte
	last := 0
	for _, m := range ms {
		if m[4] < 0 || !r.check(s[m[2]:m[3]], s[m[4]:m[5]]) {
			continue
		}
		if b == nil {
			b = make([]byte, 0, len(s))
		}
		b = append(b, s[last:m[0]]...)
		b = r.re.ExpandString(b, r.repl, s, m)
		last = m[1]
	}
	if b == nil {
		return s
	}
	return string(append(b, s[last:]...))
}

// lineWindow is the part of s around the hint at s[i:j] that a group's
// rules see by default: the hint's line, from the newline before it, through
// the end of the next line, cut at maxBack and maxAhead bytes.
func lineWindow(s string, i, j int) (lo, hi int, ok bool) {
	floor := max(0, i-maxBack)
	lo = strings.LastIndexByte(s[floor:i], '\n')
	if lo < 0 {
		lo = floor
	} else {
		lo += floor
	}
	ceil := min(len(s), j+maxAhead)
	hi = ceil
	if k := strings.IndexByte(s[j:ceil], '\n'); k >= 0 {
		hi = j + k + 1
		if k := strings.IndexByte(s[hi:ceil], '\n'); k >= 0 {
			hi += k + 1
		} else {
			hi = ceil
		}
	}
	return lo, hi, true
}

// nameWindow is the part of s that can hold a match of the secret-name
// rules around the secret word at s[i:j]: the name that contains it with
// two bytes before (a quote, \" or the space before --), the separator
// (= or : after optional spaces and a closing quote, or the spaces after a
// --flag) and the value, which ends at the first space or, when quoted, at
// the closing quote. When no separator follows the name there is no match
// and ok is false; this is what keeps source code, which names keys and
// tokens on every other line, cheap.
func nameWindow(s string, i, j int) (lo, hi int, ok bool) {
	lo, hi = i, j
	for lo > 0 && lo > i-maxBack && isNameChar(s[lo-1]) {
		lo--
	}
	for hi < len(s) && hi < j+maxBack && isNameChar(s[hi]) {
		hi++
	}
	k := hi
	if strings.HasPrefix(s[k:], `\"`) {
		k += 2
	} else if strings.HasPrefix(s[k:], `"`) {
		k++
	}
	k = skipSpace(s, k, " \t\n\r\f")
	switch {
	case k < len(s) && (s[k] == '=' || s[k] == ':'):
		k = skipSpace(s, k+1, " \t\n\r\f")
	case s[lo] == '-' && hi < len(s) && (s[hi] == ' ' || s[hi] == '\t'):
		k = skipSpace(s, hi, " \t")
	default:
		return 0, 0, false
	}
	return max(0, lo-2), valueEnd(s, k), true
}

// valueEnd is the end of the value that starts at s[k]: after its closing
// quote when quoted, else at the first space, within maxAhead bytes.
func valueEnd(s string, k int) int {
	limit := min(len(s), k+maxAhead)
	rest := s[k:limit]
	n := -1
	switch {
	case strings.HasPrefix(rest, `\"`):
		if m := strings.IndexByte(rest[2:], '"'); m >= 0 {
			n = m + 3
		}
	case strings.HasPrefix(rest, `"`):
		for m := 1; m < len(rest); m++ {
			if rest[m] == '\\' {
				m++
			} else if rest[m] == '"' {
				n = m + 1
				break
			}
		}
	case strings.HasPrefix(rest, "'"):
		if m := strings.IndexByte(rest[1:], '\''); m >= 0 {
			n = m + 2
		}
	default:
		n = strings.IndexAny(rest, " \t\n\r\f")
	}
	if n < 0 {
		return limit
	}
	return k + n
}

// skipSpace returns the index of the first byte at or after k that is not
// one of space.
func skipSpace(s string, k int, space string) int {
	for k < len(s) && strings.IndexByte(space, s[k]) >= 0 {
		k++
	}
	return k
}

// isNameChar reports whether c may be part of a name ([A-Za-z0-9_.-]).
func isNameChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-'
}

// probe looks for a hint by one case of its rare byte.
type probe struct {
	hint
	c byte
}

// probes are g's hints, one probe per case of the rare byte of a fold hint.
func (g *group) probes() []probe {
	var ps []probe
	for _, h := range g.hints {
		c := h.word[h.at]
		ps = append(ps, probe{h, c})
		if h.fold && 'a' <= c && c <= 'z' {
			ps = append(ps, probe{h, c - 'a' + 'A'})
		}
	}
	return ps
}

func init() {
	for i := range groups {
		groups[i].ps = groups[i].probes()
	}
}

// found reports whether any of g's hints occurs in s.
func (g *group) found(s string) bool {
	for _, p := range g.ps {
		if p.next(s, 0) >= 0 {
			return true
		}
	}
	return false
}

// each calls f with the bounds of every occurrence of g's hints in s, in
// increasing order of start (an occurrence may be reported twice).
func (g *group) each(s string, f func(i, j int)) {
	next := make([]int, len(g.ps)) // next occurrence per probe, -1 when none is left
	for k, p := range g.ps {
		next[k] = p.next(s, 0)
	}
	for {
		k := -1
		for h, i := range next {
			if i >= 0 && (k < 0 || i < next[k]) {
				k = h
			}
		}
		if k < 0 {
			return
		}
		i := next[k]
		f(i, i+len(g.ps[k].word))
		next[k] = g.ps[k].next(s, i+1)
	}
}

// next returns the index of the first occurrence of p's hint at or after
// from whose rare byte is p.c, or -1. It looks for p.c with IndexByte, which
// is vectorised, and compares the rest around each candidate.
func (p probe) next(s string, from int) int {
	n := len(p.word)
	for i := from + p.at; i < len(s); i++ {
		k := strings.IndexByte(s[i:], p.c)
		if k < 0 {
			return -1
		}
		i += k
		at := i - p.at
		if at+n > len(s) {
			return -1
		}
		if w := s[at : at+n]; w == p.word || (p.fold && equalFold(w, p.word)) {
			return at
		}
	}
	return -1
}

// equalFold reports whether s equals the lower-case ASCII word w, ignoring
// ASCII case only.
func equalFold(s, w string) bool {
	for i := range len(w) {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != w[i] {
			return false
		}
	}
	return true
}
