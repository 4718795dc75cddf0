package report

import (
	"crypto/rand"
	"fmt"
	"io"
	"slices"
	"strings"
)

// maxAnnotations is how many error annotations GitHub shows for one step.
const maxAnnotations = 10

// GitHubAnnotations writes an `::error` workflow command for each job that
// failed or was interrupted, most useful first: jobs that failed on their own
// before jobs stopped by the budget, by --fail-fast or by a signal, then in
// plan order. GitHub shows only ten per step, so it writes at most ten and a
// `::notice` saying how many more there are.
func GitHubAnnotations(w io.Writer, r *Report) error {
	// Only the first maxAnnotations of each rank can be shown: a streamed
	// report of thousands of failures keeps no more than that.
	var ranks [3][]Job
	count := 0
	_ = r.EachJob(func(j *Job) error { // a source that fails leaves out the rest
		if j.Status == StatusFailed || j.Status == StatusInterrupted {
			count++
			if u := usefulness(*j); len(ranks[u]) < maxAnnotations {
				ranks[u] = append(ranks[u], *j)
			}
		}
		return nil
	})
	failed := slices.Concat(ranks[0], ranks[1], ranks[2])
	var b strings.Builder
	for _, j := range failed[:min(len(failed), maxAnnotations)] {
		title := fmt.Sprintf("pneuma: job %s %s", CleanText(j.Name), statusText(j))
		fmt.Fprintf(&b, "::error title=%s::%s\n", escapeProperty(title), escapeData(annotationMessage(j)))
	}
	if n := count - maxAnnotations; n > 0 {
		msg := fmt.Sprintf("%d more jobs did not succeed; see the job summary or report.json", n)
		fmt.Fprintf(&b, "::notice title=%s::%s\n", escapeProperty("pneuma"), escapeData(msg))
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write annotations: %w", err)
	}
	return nil
}

// usefulness ranks a job for annotation: lower is shown first.
func usefulness(j Job) int {
	switch {
	case j.Status == StatusInterrupted || j.Reason == ReasonInterrupted:
		return 2
	case j.Reason == ReasonBudget || j.Reason == ReasonFailFast || j.Reason == ReasonNotRun:
		return 1
	}
	return 0
}

// annotationMessage is the body of a job's annotation: the error, then where
// to look further.
func annotationMessage(j Job) string {
	msg := strings.TrimSpace(j.Error)
	if msg == "" {
		msg = "job " + statusText(j)
	}
	msg = truncate(CleanText(msg), 4000, " … (truncated; see report.json)")
	var facts []string
	if j.SessionID != "" {
		facts = append(facts, "session "+j.SessionID)
	}
	if j.Branch != "" {
		facts = append(facts, "branch "+j.Branch)
	}
	facts = append(facts, fmt.Sprintf("cost %s, %d turns, %s", jobCost(j), j.NumTurns, jobDuration(j)))
	return msg + "\n" + CleanText(strings.Join(facts, "; "))
}

// escapeData escapes a workflow command's message as the Actions runner
// expects (toolkit/packages/core/src/command.ts).
func escapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// escapeProperty escapes a workflow command's property value.
func escapeProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// NewStopToken returns a random token for StopCommands (over 128 bits), so text
// that is being echoed cannot guess it and end the pause early.
func NewStopToken() string {
	return "pneuma-" + rand.Text()
}

// StopCommands runs f with w between `::stop-commands::token` and `::token::`,
// so GitHub Actions does not act on workflow commands (a line starting with
// `::`) in the text f writes: agent or CLI output echoed into the log. The
// end marker is written on a line of its own even if f fails or leaves a line
// unfinished; f's error is returned.
func StopCommands(w io.Writer, token string, f func(io.Writer) error) error {
	if _, err := fmt.Fprintf(w, "::stop-commands::%s\n", token); err != nil {
		return fmt.Errorf("pause workflow commands: %w", err)
	}
	lw := &lastByteWriter{w: w, last: '\n'}
	ferr := f(lw)
	end := fmt.Sprintf("::%s::\n", token)
	if lw.last != '\n' {
		end = "\n" + end
	}
	if _, err := io.WriteString(w, end); err != nil && ferr == nil {
		return fmt.Errorf("resume workflow commands: %w", err)
	}
	return ferr
}

// lastByteWriter remembers the last byte written through it.
type lastByteWriter struct {
	w    io.Writer
	last byte
}

func (l *lastByteWriter) Write(p []byte) (int, error) {
	n, err := l.w.Write(p)
	if n > 0 {
		l.last = p[n-1]
	}
	return n, err
}
