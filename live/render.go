package live

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rivo/uniseg"

	"github.com/pneuma-cli/pneuma/internal/text"
	"github.com/pneuma-cli/pneuma/report"
)

// Style is how lines are drawn: cut to Width display columns (never
// wrapped; 0: not cut), coloured with ANSI codes when Color.
type Style struct {
	Width int
	Color bool
}

const (
	red   = "\x1b[31m"
	green = "\x1b[32m"
	dim   = "\x1b[2m"
	reset = "\x1b[0m"
)

// nameMax is the widest a job name is padded to in a column.
const nameMax = 24

// FinishedLine is one finished job: its status and reason, cost, turns,
// time and changes, and for a failure the first line of its error.
func FinishedLine(j *Job, st Style) string {
	r := j.Result
	if r == nil {
		return st.paint(dim, fit("? "+j.Name+" finished", st.Width))
	}
	mark, colour := "✓", green
	switch r.Status {
	case report.StatusFailed:
		mark, colour = "✗", red
	case report.StatusSkipped:
		mark, colour = "-", dim
	case report.StatusInterrupted:
		mark, colour = "!", red
	}
	status := r.Status
	if r.Reason != "" {
		status += " (" + r.Reason + ")"
	}
	if r.Status == report.StatusSkipped {
		return st.paint(colour, fit(mark+" "+r.Name+"  "+status, st.Width))
	}
	line := fmt.Sprintf("%s %s  %s · $%.4f · %s · %s · %s", mark, r.Name, status, r.CostUSD,
		plural(r.NumTurns, "turn"), Duration(time.Duration(r.DurationMS)*time.Millisecond), changes(r))
	if r.Status != report.StatusSucceeded && r.Error != "" {
		first, _, _ := strings.Cut(strings.TrimSpace(r.Error), "\n")
		line += " — " + text.Fold(first)
	}
	return st.paint(colour, fit(line, st.Width))
}

// changes says what a job changed: "+12 -3 in 2 files", "no changes".
func changes(r *report.Job) string {
	if r.FilesChanged == 0 {
		return "no changes"
	}
	return fmt.Sprintf("+%d -%d in %s", r.Insertions, r.Deletions, plural(r.FilesChanged, "file"))
}

// RunningLines are the running jobs, the longest-running first, one line
// each: name, elapsed, turns and cost so far, what it is doing now. When
// there are more than rows, the last line says how many more there are.
func (s *State) RunningLines(now time.Time, rows int, st Style) []string {
	jobs := s.RunningJobs()
	if rows < 1 {
		rows = 1
	}
	shown := jobs
	if len(jobs) > rows {
		shown = jobs[:rows-1]
	}
	width := 0
	for _, j := range shown {
		width = max(width, min(Width(j.Name), nameMax))
	}
	lines := make([]string, 0, rows)
	for _, j := range shown {
		lines = append(lines, j.line(now, width, st.Width))
	}
	if n := len(jobs) - len(shown); n > 0 {
		lines = append(lines, st.paint(dim, fit(fmt.Sprintf("  +%d more", n), st.Width)))
	}
	return lines
}

// RunningJobs are the running jobs, the longest-running first (then by name).
func (s *State) RunningJobs() []*Job {
	jobs := make([]*Job, 0, len(s.Running))
	for _, j := range s.Running {
		jobs = append(jobs, j)
	}
	sort.Slice(jobs, func(a, b int) bool {
		if !jobs[a].Started.Equal(jobs[b].Started) {
			return jobs[a].Started.Before(jobs[b].Started)
		}
		return jobs[a].Name < jobs[b].Name
	})
	return jobs
}

// lineKey is what a running job's line is drawn from; the line is kept
// until it changes (at 10 frames a second, most frames redraw most jobs
// unchanged).
type lineKey struct {
	doing             Activity
	elapsed, left     string
	turns             int
	cost              float64
	nameWidth, maxCol int
}

// line is the job's running line cut to cols.
func (j *Job) line(now time.Time, nameWidth, cols int) string {
	k := lineKey{doing: j.Doing, elapsed: Duration(now.Sub(j.Started)), turns: j.Turns, cost: j.CostUSD, nameWidth: nameWidth, maxCol: cols}
	if !j.Doing.Until.IsZero() {
		k.left = Duration(j.Doing.Until.Sub(now))
	}
	if j.cached != "" && k == j.key {
		return j.cached
	}
	j.key, j.cached = k, fit(runningLine(j, now, nameWidth), cols)
	return j.cached
}

func runningLine(j *Job, now time.Time, width int) string {
	name := fit(j.Name, width)
	pad := strings.Repeat(" ", max(0, width-Width(name)))
	doing := j.Doing.What
	if !j.Doing.Until.IsZero() && j.Doing.Kind == KindRetry {
		if left := j.Doing.Until.Sub(now); left > 0 {
			doing += " in " + Duration(left)
		}
	}
	return fmt.Sprintf("  %s%s  %6s  %-8s  $%.2f  %s", name, pad, Duration(now.Sub(j.Started)), plural(j.Turns, "turn"), j.CostUSD, doing)
}

// Summary is the footer's description: the jobs running, the spend (of
// the budget), a usage limit's hold.
func (s *State) Summary(now time.Time) string {
	parts := []string{fmt.Sprintf("%d running", len(s.Running))}
	spend := fmt.Sprintf("$%.2f", s.SpentUSD)
	if s.BudgetUSD > 0 {
		spend += fmt.Sprintf(" of $%.2f", s.BudgetUSD)
	}
	parts = append(parts, spend)
	if s.HeldUntil.After(now) {
		parts = append(parts, "held until "+s.HeldUntil.Local().Format("15:04"))
	}
	if s.Ended && s.Status != "" {
		parts = append(parts, s.Status)
	}
	if left, ok := s.Left(now); ok {
		parts = append(parts, "about "+Duration(left)+" left")
	}
	return strings.Join(parts, " · ")
}

// Left estimates the time the run still needs from its pace so far.
func (s *State) Left(now time.Time) (time.Duration, bool) {
	n := len(s.Done)
	if n == 0 || n >= s.Total || s.Ended || s.Start.IsZero() {
		return 0, false
	}
	return now.Sub(s.Start) / time.Duration(n) * time.Duration(s.Total-n), true
}

// Footer is a plain footer (no progress bar): done/total, the summary,
// elapsed and an estimate of the rest from the pace so far.
func (s *State) Footer(now time.Time, st Style) string {
	end := now
	if s.Ended && !s.EndTime.IsZero() {
		end = s.EndTime
	}
	elapsed := end.Sub(s.Start)
	return fit(fmt.Sprintf("%d/%d done · %s · %s", len(s.Done), s.Total, s.Summary(now), Duration(elapsed)), st.Width)
}

// Duration is a short, steady clock: 7s, 1m02s, 1h03m.
func Duration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + "s"
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	}
	return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

func itoa(n int) string { return strconv.Itoa(n) }

func (st Style) paint(colour, s string) string {
	if !st.Color || s == "" {
		return s
	}
	return colour + s + reset
}

func fit(s string, width int) string { return Fit(s, width) }

// Fit cuts s to width display columns, the last one "…" when anything was
// cut; control characters become spaces so that a line stays one line.
func Fit(s string, width int) string {
	plain, control := scan(s)
	if control {
		s = strings.Map(func(r rune) rune {
			if isControl(r) {
				return ' '
			}
			return r
		}, s)
	}
	if plain && (width <= 0 || len(s) <= width) {
		return s
	}
	if width <= 0 || Width(s) <= width {
		return s
	}
	if plain {
		return strings.TrimRight(s[:width-1], " ") + "…"
	}
	var b strings.Builder
	w := 0
	g := uniseg.NewGraphemes(s)
	for g.Next() {
		cw := g.Width()
		if w+cw > width-1 {
			break
		}
		b.WriteString(g.Str())
		w += cw
	}
	return strings.TrimRight(b.String(), " ") + "…"
}

// Width is the display width of s in columns (ASCII counted without
// uniseg: the view measures every line of every frame).
func Width(s string) int {
	if ascii(s) {
		return len(s)
	}
	n := 0
	for _, r := range s {
		if !narrow(r) {
			return uniseg.StringWidth(s)
		}
		n++
	}
	return n
}

// narrow is true of the runes the view itself draws and of Latin text
// before the combining marks: one column each.
func narrow(r rune) bool {
	if r >= 0x20 && r < 0x300 {
		return true
	}
	switch r {
	case '·', '…', '✓', '✗', '█', '░', '→', '←', '↻', '─', '—', '|':
		return true
	}
	return false
}

func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// scan says whether s is all ASCII and whether it holds a control
// character (C0 or DEL; C1 ones are not ASCII and are mapped by Fit too).
func scan(s string) (ascii, control bool) {
	ascii = true
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 0x80:
			ascii = false
			control = control || (c == 0xc2 && i+1 < len(s) && s[i+1] < 0xa0)
		case c < 0x20 || c == 0x7f:
			control = true
		}
	}
	return ascii, control
}

func isControl(r rune) bool { return r < 0x20 || r >= 0x7f && r < 0xa0 }

func uniWidth(s string) int { return Width(s) }
