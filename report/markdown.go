package report

import (
	"fmt"
	"html"
	"io"
	"os"
	"strconv"
	"strings"
)

// GitHubSummaryLimit is the most GitHub Actions accepts in one step's
// $GITHUB_STEP_SUMMARY file. When appending to a file that already holds
// something, pass the room left as MarkdownOptions.MaxBytes.
const GitHubSummaryLimit = 1 << 20

// markdownErrorMax bounds the error text quoted for one failed job.
const markdownErrorMax = 2000

// MarkdownOptions tunes WriteMarkdown.
type MarkdownOptions struct {
	// MaxBytes caps the size of the output; 0 means no cap. When the summary
	// would be larger, rows and failure details are left out and a note
	// says so. The header, the table head and the totals always appear.
	MaxBytes int
}

// WriteMarkdown writes r as a Markdown summary for a CI job page: a headline,
// a table with a row per job that did not succeed (status, cost, tokens,
// turns, time, branch, files changed) and the totals, the errors of the
// jobs that failed, then the succeeded jobs' rows folded in a <details>
// block that counts them.
func WriteMarkdown(w io.Writer, r *Report, opts MarkdownOptions) error {
	doc := renderMarkdown(r, opts.MaxBytes)
	if _, err := io.WriteString(w, doc); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	return nil
}

// mdSection is one table of a summary: its rows, all or as many as fit.
type mdSection struct{ rows []string }

// write writes the section's rows to b while they fit in budget (none
// when budget < 0 means no cap), then a row counting those left out;
// it returns how many it wrote.
func (sec mdSection) write(b *strings.Builder, budget int) int {
	shown := 0
	for _, row := range sec.rows {
		more := mdMoreRow(len(sec.rows) - shown - 1)
		if budget >= 0 && b.Len()+len(row)+len(more) > budget {
			break
		}
		b.WriteString(row)
		shown++
	}
	b.WriteString(mdMoreRow(len(sec.rows) - shown))
	return shown
}

// renderMarkdown lays a summary out for a run of any size: the jobs that
// did not succeed first (their rows above the totals, then their
// errors), the succeeded ones folded in a <details> block that counts
// them, so that a run of ten thousand jobs reads as its failures.
func renderMarkdown(r *Report, maxBytes int) string {
	head := mdHead(r)
	tableHead := "| Job | Status | Cost | Tokens (in/out) | Turns | Tools (denied) | Time | Branch | Files changed |\n" +
		"| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: |\n"
	var others, succeeded mdSection
	var failures []string
	var sum Job // the changes and tool calls of every job
	// A job's row and failure are text, not the job: a streamed report's
	// jobs are read one at a time. A source that fails leaves out the rest.
	_ = r.EachJob(func(j *Job) error {
		if j.Status == StatusSucceeded {
			succeeded.rows = append(succeeded.rows, mdRow(*j))
		} else {
			others.rows = append(others.rows, mdRow(*j))
		}
		if j.Status == StatusFailed || j.Status == StatusInterrupted {
			failures = append(failures, mdFailure(*j))
		}
		sum.FilesChanged += j.FilesChanged
		sum.Insertions += j.Insertions
		sum.Deletions += j.Deletions
		sum.ToolCalls += j.ToolCalls
		sum.ToolDenials += j.ToolDenials
		return nil
	})
	total := mdTotal(r, sum)
	const failHead = "\n#### Jobs that did not succeed\n\n"
	foldHead := fmt.Sprintf("\n<details><summary>%d succeeded %s</summary>\n\n", len(succeeded.rows), plural(len(succeeded.rows), "job", "jobs"))
	const foldTail = "\n</details>\n"

	var b strings.Builder
	unbounded := maxBytes <= 0
	const noteRoom = 400
	budget := -1
	if !unbounded {
		budget = maxBytes - noteRoom - len(total)
	}
	b.WriteString(head)
	b.WriteString(tableHead)
	shown := others.write(&b, budget)
	b.WriteString(total)
	detailed := 0
	if len(failures) > 0 && (unbounded || b.Len()+len(failHead)+noteRoom <= maxBytes) {
		b.WriteString(failHead)
		for _, f := range failures {
			if !unbounded && b.Len()+len(f)+noteRoom > maxBytes {
				break
			}
			b.WriteString(f)
			detailed++
		}
	}
	if len(succeeded.rows) > 0 && (unbounded || b.Len()+len(foldHead)+len(tableHead)+len(foldTail)+noteRoom <= maxBytes) {
		if strings.HasSuffix(b.String(), "\n\n") { // after the errors' blank line
			b.WriteString(foldHead[1:])
		} else {
			b.WriteString(foldHead)
		}
		b.WriteString(tableHead)
		fb := -1
		if !unbounded {
			fb = maxBytes - noteRoom - len(foldTail)
		}
		shown += succeeded.write(&b, fb)
		b.WriteString(foldTail)
	}
	rows := len(others.rows) + len(succeeded.rows)
	if unbounded || (shown == rows && detailed == len(failures) && b.Len() <= maxBytes) {
		return b.String()
	}
	note := fmt.Sprintf("\n> [!NOTE]\n> This summary was cut to stay under %d bytes: %d of %d jobs are in the tables and %d of %d failures are detailed. report.json has everything.\n",
		maxBytes, shown, rows, detailed, len(failures))
	out := b.String() + note
	if len(out) > maxBytes {
		// Even the head and totals do not fit: cut hard and keep the note.
		out = truncate(b.String(), maxBytes-len(note), "") + note
		out = truncate(out, maxBytes, "")
	}
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func mdHead(r *Report) string {
	icon := map[string]string{RunSucceeded: "✅", RunFailed: "❌", RunInterrupted: "⏹️"}[r.Status]
	if icon == "" {
		icon = "❔"
	}
	title := "pneuma run"
	if r.RunID != "" {
		title += " " + mdCode(r.RunID)
	}
	facts := []string{mdEscape(countsText(r.Totals))}
	if r.Shard != nil {
		facts = append(facts, fmt.Sprintf("shard %d/%d", r.Shard.Index, r.Shard.Total))
	}
	if len(r.Merged) > 0 {
		facts = append(facts, fmt.Sprintf("merged from %d reports", len(r.Merged)))
	}
	facts = append(facts, mdEscape(formatUSD(r.Totals.CostUSD)), totalTokens(r.Totals)+" tokens (in/out)",
		formatDuration(runDuration(r))+" wall time")
	if r.Budget != nil {
		facts = append(facts, fmt.Sprintf("budget %s of %s spent", mdEscape(formatUSD(r.Budget.SpentUSD)), mdEscape(formatUSD(r.Budget.CapUSD))))
	}
	s := fmt.Sprintf("### %s %s: %s\n\n%s\n\n", icon, title, r.Status, strings.Join(facts, " · "))
	if missing := r.MissingShards(); len(missing) > 0 {
		s += fmt.Sprintf("> [!WARNING]\n> No report from %s: their jobs are not in this summary.\n\n", shardList(missing))
	}
	return s
}

func mdRow(j Job) string {
	branch := "-"
	if j.Branch != "" {
		branch = mdCode(j.Branch)
	}
	files := "-"
	if j.FilesChanged > 0 || j.Insertions > 0 || j.Deletions > 0 {
		files = fmt.Sprintf("%d (+%d/−%d)", j.FilesChanged, j.Insertions, j.Deletions)
	}
	return mdCells(mdEscape(j.Name), statusIcon(j.Status)+" "+mdEscape(statusText(j)), mdEscape(jobCost(j)),
		tokens(j.Usage), strconv.Itoa(j.NumTurns), toolCounts(j.ToolCalls, j.ToolDenials), jobDuration(j), branch, files)
}

// toolCounts is "12 (1)": tool calls, and how many were refused.
func toolCounts(calls, denied int) string {
	return fmt.Sprintf("%d (%d)", calls, denied)
}

func mdTotal(r *Report, sum Job) string {
	files, ins, del := sum.FilesChanged, sum.Insertions, sum.Deletions
	calls, denied := sum.ToolCalls, sum.ToolDenials
	t := r.Totals
	return mdCells("**Total**", "**"+r.Status+"**", "**"+mdEscape(formatUSD(t.CostUSD))+"**", "**"+totalTokens(t)+"**",
		"**"+strconv.Itoa(t.NumTurns)+"**", "**"+toolCounts(calls, denied)+"**", "**"+formatDuration(runDuration(r))+"**", "",
		fmt.Sprintf("**%d (+%d/−%d)**", files, ins, del))
}

func mdMoreRow(n int) string {
	if n <= 0 {
		return ""
	}
	return mdCells(fmt.Sprintf("… %d more", n), "", "", "", "", "", "", "", "")
}

func mdCells(cells ...string) string {
	return "| " + strings.Join(cells, " | ") + " |\n"
}

// mdFailure details one job that did not succeed, folded so a long list of
// failures does not bury the table.
func mdFailure(j Job) string {
	text := j.Error
	if strings.TrimSpace(text) == "" {
		text = j.Result
	}
	text = truncate(strings.TrimSpace(CleanText(text)), markdownErrorMax, "\n… (truncated; see report.json)")
	var b strings.Builder
	fmt.Fprintf(&b, "<details><summary><code>%s</code>: %s</summary>\n\n", html.EscapeString(CleanText(j.Name)), html.EscapeString(statusText(j)))
	if text != "" {
		fence := strings.Repeat("`", max(3, longestRun(text, '`')+1))
		fmt.Fprintf(&b, "%stext\n%s\n%s\n\n", fence, text, fence)
	}
	var facts []string
	if j.SessionID != "" {
		facts = append(facts, "session "+mdCode(j.SessionID))
	}
	if j.Branch != "" {
		facts = append(facts, "branch "+mdCode(j.Branch))
	}
	if j.Transcript != "" {
		facts = append(facts, "transcript "+mdCode(j.Transcript))
	}
	if len(facts) > 0 {
		b.WriteString(strings.Join(facts, " · ") + "\n\n")
	}
	b.WriteString("</details>\n\n")
	return b.String()
}

func statusIcon(status string) string {
	switch status {
	case StatusSucceeded:
		return "✅"
	case StatusFailed:
		return "❌"
	case StatusSkipped:
		return "⏭️"
	case StatusInterrupted:
		return "⏹️"
	}
	return "❔"
}

// mdEscape makes s literal text in a Markdown table cell: punctuation that
// Markdown or HTML would interpret is backslash-escaped, | cannot end the
// cell and a line break becomes <br>.
func mdEscape(s string) string {
	s = CleanText(s)
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\', '`', '*', '_', '[', ']', '<', '>', '|', '~', '&', '#', '!', '$':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\r':
			if i+1 < len(s) && s[i+1] == '\n' {
				continue
			}
			b.WriteString("<br>")
		case '\n':
			b.WriteString("<br>")
		case '\t':
			b.WriteByte(' ')
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// mdCode shows s as inline code that fits in a table cell.
func mdCode(s string) string {
	s = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "|", `\|`).Replace(CleanText(s))
	ticks := strings.Repeat("`", longestRun(s, '`')+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return ticks + " " + s + " " + ticks
	}
	return ticks + s + ticks
}

func longestRun(s string, c byte) int {
	longest, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
			longest = max(longest, n)
		} else {
			n = 0
		}
	}
	return longest
}

func shardList(shards []Shard) string {
	parts := make([]string, len(shards))
	for i, s := range shards {
		parts[i] = fmt.Sprintf("%d/%d", s.Index, s.Total)
	}
	if len(parts) == 1 {
		return "shard " + parts[0]
	}
	return "shards " + strings.Join(parts, ", ")
}

// AppendSummary appends r's Markdown summary to the file at path, creating
// it if needed, within GitHub's step summary limit: the summary is cut to the
// room the file has left. It is how $GITHUB_STEP_SUMMARY is written, where
// earlier writers in the same step may already have used some of the room.
func AppendSummary(path string, r *Report) (err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("append summary: %w", err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("append summary %s: %w", path, cerr)
		}
	}()
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("append summary: %w", err)
	}
	room := GitHubSummaryLimit - int(info.Size())
	// Below this, not even the headline and totals fit.
	const minRoom = 1 << 10
	if room < minRoom {
		return fmt.Errorf("append summary %s: it already holds %d bytes, too close to GitHub's %d byte limit", path, info.Size(), GitHubSummaryLimit)
	}
	if info.Size() > 0 {
		room-- // the separating newline
		if _, err := f.WriteString("\n"); err != nil {
			return fmt.Errorf("append summary %s: %w", path, err)
		}
	}
	if err := WriteMarkdown(f, r, MarkdownOptions{MaxBytes: room}); err != nil {
		return fmt.Errorf("append summary %s: %w", path, err)
	}
	return nil
}
