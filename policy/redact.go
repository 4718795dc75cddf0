package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pneuma-cli/pneuma/internal/redact"
	"github.com/pneuma-cli/pneuma/internal/text"
)

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
	return text.Truncate(printable(redact.String(s)), max)
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

// printable makes s printable on one line: newlines become a visible "\n",
// other control characters and invalid UTF-8 a space or U+FFFD.
func printable(s string) string {
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
