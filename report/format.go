package report

import (
	"fmt"
	"strconv"
	"time"
)

// formatUSD shows a cost with cents from a dollar up and with four decimals
// below, where a single job's cost usually is.
func formatUSD(v float64) string {
	if v >= 1 {
		return fmt.Sprintf("$%.2f", v)
	}
	return fmt.Sprintf("$%.4f", v)
}

// jobCost is a job's cost, marked with ~ when it is an estimate.
func jobCost(j Job) string {
	if j.CostEstimated {
		return "~" + formatUSD(j.CostUSD)
	}
	return formatUSD(j.CostUSD)
}

// formatCount shows a token count compactly: 950, 12.3k, 4.56M.
func formatCount(n int64) string {
	switch {
	case n < 1000:
		return strconv.FormatInt(n, 10)
	case n < 100_000:
		return trimZero(fmt.Sprintf("%.1f", float64(n)/1e3)) + "k"
	case n < 1_000_000:
		return strconv.FormatInt((n+500)/1000, 10) + "k"
	case n < 100_000_000:
		return trimZero(fmt.Sprintf("%.2f", float64(n)/1e6)) + "M"
	default:
		return strconv.FormatInt((n+500_000)/1_000_000, 10) + "M"
	}
}

func trimZero(s string) string {
	for len(s) > 1 && s[len(s)-1] == '0' {
		s = s[:len(s)-1]
	}
	if s[len(s)-1] == '.' {
		s = s[:len(s)-1]
	}
	return s
}

// tokens is a job's input and output tokens; input counts cache reads and
// writes too, since they are what the model read.
func tokens(u Usage) string {
	in := u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
	return formatCount(in) + "/" + formatCount(u.OutputTokens)
}

func totalTokens(t Totals) string {
	return tokens(Usage{
		InputTokens:              t.InputTokens,
		OutputTokens:             t.OutputTokens,
		CacheReadInputTokens:     t.CacheReadInputTokens,
		CacheCreationInputTokens: t.CacheCreationInputTokens,
	})
}

// formatDuration shows a duration to the tenth of a second under a minute and
// to the second above: 850ms, 12.4s, 3m07s, 1h02m.
func formatDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		d = d.Round(time.Second)
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	default:
		d = d.Round(time.Minute)
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
}

func jobDuration(j Job) string {
	return formatDuration(time.Duration(j.DurationMS) * time.Millisecond)
}

// statusText is a job's status with its reason: "failed (max_turns)".
func statusText(j Job) string {
	if j.Reason == "" || j.Reason == j.Status {
		return j.Status
	}
	return j.Status + " (" + j.Reason + ")"
}

// changes is what a job changed: "3 files +10/-2", or "-".
func changes(j Job) string {
	if j.FilesChanged == 0 && j.Insertions == 0 && j.Deletions == 0 {
		return "-"
	}
	files := "files"
	if j.FilesChanged == 1 {
		files = "file"
	}
	return fmt.Sprintf("%d %s +%d/-%d", j.FilesChanged, files, j.Insertions, j.Deletions)
}

// countsText summarises a report's job counts: "5 jobs: 3 succeeded, 1
// failed, 1 skipped".
func countsText(t Totals) string {
	s := fmt.Sprintf("%d jobs", t.Jobs)
	if t.Jobs == 1 {
		s = "1 job"
	}
	sep := ": "
	for _, c := range []struct {
		n    int
		name string
	}{
		{t.Succeeded, "succeeded"}, {t.Failed, "failed"}, {t.Interrupted, "interrupted"}, {t.Skipped, "skipped"},
	} {
		if c.n > 0 {
			s += fmt.Sprintf("%s%d %s", sep, c.n, c.name)
			sep = ", "
		}
	}
	return s
}
