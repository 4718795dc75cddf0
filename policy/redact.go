package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Marker replaces every redacted secret.
const Marker = "[REDACTED]"

// secretWord in a variable, key or flag name marks its value as a secret.
const (
	secretWord = `(?:key|token|secret|password|passwd)`
	nameChars  = `[A-Za-z0-9_.-]*`
	secretName = nameChars + secretWord + nameChars
)

// redactions run in order. Each keeps only text of its input plus Marker, so
// the output never grows by more than the markers it contains, and each
// leaves text the others do not match again, so Redact is idempotent.
var redactions = []struct {
	re   *regexp.Regexp
	repl string
}{
	// PEM private keys, also when cut off before their END line.
	{regexp.MustCompile(`(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\z)`), Marker},
	// Anthropic, OpenAI and similar API keys.
	{regexp.MustCompile(`\bsk-ant-[A-Za-z0-9_-]{8,}`), Marker},
	{regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{16,}`), Marker},
	// GitHub tokens.
	{regexp.MustCompile(`\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{16,}`), Marker},
	{regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{16,}`), Marker},
	// AWS access key ids.
	{regexp.MustCompile(`\b(?:AKIA|ASIA)[A-Z0-9]{16}\b`), Marker},
	// Slack tokens.
	{regexp.MustCompile(`\bxox[abposre]-[A-Za-z0-9-]{8,}`), Marker},
	// HTTP bearer credentials.
	{regexp.MustCompile(`(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]{8,}`), "${1} " + Marker},
	// Passwords in URLs: scheme://user:password@host.
	{regexp.MustCompile(`(://[^/\s:@]+:)[^/\s@]+@`), "${1}" + Marker + "@"},
	// "api_key": "value" in JSON.
	{regexp.MustCompile(`(?i)("` + secretName + `"\s*:\s*)"(?:[^"\\]|\\.)*"`), `${1}"` + Marker + `"`},
	// The same inside a JSON string: {\"api_key\": \"value\"}.
	{regexp.MustCompile(`(?i)(\\"` + secretName + `\\"\s*:\s*)\\"(?:[^"\\]|\\[^"])*\\"`), `${1}\"` + Marker + `\"`},
	// API_KEY=value, --token=value.
	{regexp.MustCompile(`(?i)\b(` + secretName + `=)(?:\[REDACTED\]|"(?:[^"\\]|\\.)*"|'[^']*'|[^\s"'&;|,)}\]]+)`), "${1}" + Marker},
	// api_key: value (YAML, HTTP headers).
	// Only names that cannot be a plain word (api_key, X-Api-Key) or are
	// exactly password, so that prose like "the secret: go" survives.
	{regexp.MustCompile(`(?i)\b((?:[A-Za-z0-9.]*[_-]` + secretName + `|` + nameChars + secretWord + `[_-]` + nameChars + `|password|passwd):[ \t]*)(?:\[REDACTED\]|[^\s"',;)}\]]+)`), "${1}" + Marker},
	// --token value.
	{regexp.MustCompile(`(?i)(\s--?` + secretName + `[ \t]+)(?:\[REDACTED\]|[^\s\-"'][^\s"']*|"(?:[^"\\]|\\.)*"|'[^']*')`), "${1}" + Marker},
}

// Redact replaces secrets in s with Marker: API keys (sk-ant-…, sk-…),
// GitHub tokens (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_), AWS access key
// ids (AKIA…, ASIA…), Slack tokens (xox…), bearer credentials, passwords in
// URLs, PEM private key blocks, and the values of NAME=value, name: value,
// "name": "value" and --name value where the name contains key, token,
// secret or password (in any case). It is meant for audit logs: it errs on
// the side of hiding too much.
func Redact(s string) string {
	// Passes can expose a match for an earlier one; repeat until stable so
	// that Redact(Redact(s)) == Redact(s).
	for i := 0; i < 4; i++ {
		prev := s
		for _, r := range redactions {
			s = r.re.ReplaceAllString(s, r.repl)
		}
		if s == prev {
			break
		}
	}
	return s
}

// summaryWindow bounds the text Summarize redacts, so that a call with a
// huge command costs little; it is cut at whitespace, where no token-like
// secret can be split.
const summaryWindow = 64 << 10

// Summarize describes a tool call on one short line for the audit log, with
// secrets redacted and at most max runes (no limit when max <= 0), for
// example "Bash: go test ./..." or "Write: src/a.go (1.2 KB)".
func Summarize(tool string, input json.RawMessage, max int) string {
	var in struct {
		Command      string            `json:"command"`
		FilePath     string            `json:"file_path"`
		NotebookPath string            `json:"notebook_path"`
		Path         string            `json:"path"`
		Pattern      string            `json:"pattern"`
		URL          string            `json:"url"`
		Query        string            `json:"query"`
		Description  string            `json:"description"`
		SubagentType string            `json:"subagent_type"`
		Content      *string           `json:"content"`
		NewSource    *string           `json:"new_source"`
		Edits        []json.RawMessage `json:"edits"`
	}
	isObject := json.Unmarshal(input, &in) == nil || bytes.HasPrefix(bytes.TrimSpace(input), []byte("{"))
	var d string
	switch {
	case !isObject:
		d = rawText(input)
	case tool == "Bash":
		d = in.Command
	case tool == "Write":
		d = in.FilePath
		if in.Content != nil {
			d += " (" + size(len(*in.Content)) + ")"
		}
	case tool == "MultiEdit":
		d = fmt.Sprintf("%s (%d edits)", in.FilePath, len(in.Edits))
	case tool == "Edit" || tool == "Read":
		d = in.FilePath
	case tool == "NotebookEdit":
		d = in.NotebookPath
		if in.NewSource != nil {
			d += " (" + size(len(*in.NewSource)) + ")"
		}
	case tool == "Glob" || tool == "Grep":
		d = in.Pattern
		if in.Path != "" {
			d += " in " + in.Path
		}
	case tool == "LS":
		d = in.Path
	case tool == "WebFetch":
		d = in.URL
	case tool == "WebSearch":
		d = in.Query
	case tool == "Agent" || tool == "Task":
		d = in.Description
		if in.SubagentType != "" {
			d += " (" + in.SubagentType + ")"
		}
	default:
		d = rawText(input)
	}
	s := tool + ": " + d
	if d == "" {
		s = tool
	}
	if len(s) > summaryWindow && max > 0 && max < summaryWindow/4 {
		cut := strings.LastIndexAny(s[:summaryWindow], " \t\n")
		if cut <= 0 {
			cut = summaryWindow
		}
		s = s[:cut]
	}
	return truncate(oneLine(Redact(s)), max)
}

// rawText is a JSON value on one line, or the bytes as text when invalid.
func rawText(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) == nil {
		return b.String()
	}
	return string(raw)
}

// size formats a byte count ("512 B", "1.2 KB", "3.4 MB").
func size(n int) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d B", n)
	case n < 1024*1024:
		return fmt.Sprintf("%.1f KB", float64(n)/1024)
	default:
		return fmt.Sprintf("%.1f MB", float64(n)/(1024*1024))
	}
}

// oneLine makes s printable on one line: newlines become a visible "\n",
// other control characters and invalid UTF-8 a space or U+FFFD.
func oneLine(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
		case r < 0x20 || r == 0x7f:
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// truncate cuts s to at most max runes, marking the cut with "…".
func truncate(s string, max int) string {
	if max <= 0 || utf8.RuneCountInString(s) <= max {
		return s
	}
	n := 0
	for i := range s {
		if n == max-1 {
			return strings.TrimRight(s[:i], " ") + "…"
		}
		n++
	}
	return s
}
