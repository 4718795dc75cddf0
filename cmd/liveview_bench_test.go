//go:build linux

package cmd

import (
	"io"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/term"

	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/runner"
)

// ptyView is a live view drawing to a pseudo-terminal of cols×rows whose
// other end is read and thrown away (the terminal's side).
func ptyView(b *testing.B, cols, rows int) *liveView {
	b.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		b.Fatalf("open a pseudo-terminal: %v", err)
	}
	if err := pty.Setsize(ptmx, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)}); err != nil {
		b.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, ptmx) }()
	b.Cleanup(func() { tty.Close(); ptmx.Close() })
	size := func() (int, int, error) { return term.GetSize(int(tty.Fd())) }
	// A throttle of an hour: the benchmark draws the frames itself.
	return newLiveView(tty, size, true, 10, time.Hour)
}

// cpuTime is the process's user and system CPU so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// jobEvents are the events of one job as the engine sends them: a start,
// an attempt with three turns of two tool calls and some text each, and
// the finish.
func jobEvents(name string, t time.Time) []runner.Event {
	evs := []runner.Event{{Type: runner.EventJobStarted, Job: name, Time: t, Worktree: "/repo/.pneuma/worktrees/r/" + name},
		{Type: runner.EventAttemptStarted, Job: name, Time: t}}
	for turn := 1; turn <= 3; turn++ {
		evs = append(evs, runner.Event{Type: runner.EventTurnStarted, Job: name, Turn: turn, Time: t})
		for c := range 2 {
			id := name + strconv.Itoa(turn*10+c)
			call := &runner.ToolCall{Name: "Bash", ToolUseID: id, Input: "Bash: go test -run TestSomething ./runner/..."}
			evs = append(evs, runner.Event{Type: runner.EventToolStarted, Job: name, Tool: call, Time: t},
				runner.Event{Type: runner.EventToolCall, Job: name, Tool: call, Time: t})
		}
		evs = append(evs, runner.Event{Type: runner.EventWriting, Job: name, Time: t},
			runner.Event{Type: runner.EventTurnFinished, Job: name, Turn: turn, CostUSD: 0.01 * float64(turn), Time: t})
	}
	return append(evs, runner.Event{Type: runner.EventAttemptFinished, Job: name, CostUSD: 0.03, Time: t},
		runner.Event{Type: runner.EventJobFinished, Job: name, Time: t, SpentUSD: 1,
			Result: &report.Job{Name: name, Status: report.StatusSucceeded, CostUSD: 0.03, NumTurns: 3, DurationMS: 61000, FilesChanged: 2, Insertions: 12, Deletions: 3}})
}

// BenchmarkLiveViewRun drives the live view on a pseudo-terminal of
// 160×40 through a run of 200 jobs, 16 at a time, each sending the events
// of jobEvents (21), with a frame drawn after every 16 events (more often
// than the 10 a second the view allows while 16 jobs are this busy).
// cpu-ms/job is the process's CPU (user and system, the pty's reader
// included) divided by the jobs: the budget is 0.2.
func BenchmarkLiveViewRun(b *testing.B) {
	const jobs, conc = 200, 16
	names := make([]string, jobs)
	for i := range names {
		names[i] = "job-" + strconv.Itoa(i) + "-refactor-the-runner"
	}
	var cpu time.Duration
	for b.Loop() {
		v := ptyView(b, 160, 40)
		var waves [][][]runner.Event
		for w := 0; w < jobs; w += conc {
			var queues [][]runner.Event
			for _, name := range names[w:min(w+conc, jobs)] {
				queues = append(queues, jobEvents(name, time.Now()))
			}
			waves = append(waves, queues)
		}
		start := cpuTime()
		v.Event(runner.Event{Type: runner.EventRunStarted, RunID: "r", Jobs: jobs, Time: time.Now()})
		n := 0
		for _, queues := range waves {
			for more := true; more; {
				more = false
				for i, q := range queues {
					if len(q) == 0 {
						continue
					}
					more = true
					v.Event(q[0])
					queues[i] = q[1:]
					if n++; n%16 == 0 {
						v.mu.Lock()
						v.draw()
						v.mu.Unlock()
					}
				}
			}
		}
		v.Close()
		cpu += cpuTime() - start
	}
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N*jobs), "cpu-ms/job")
}

// BenchmarkLiveViewFrame is one frame of 30 running jobs at 160×40 after
// one event of each: cpu-ms/job is a job's share of a frame.
func BenchmarkLiveViewFrame(b *testing.B) {
	const jobs = 30
	v := ptyView(b, 160, 40)
	v.Event(runner.Event{Type: runner.EventRunStarted, RunID: "r", Jobs: jobs, Time: time.Now()})
	for i := range jobs {
		v.Event(runner.Event{Type: runner.EventJobStarted, Job: "job-" + strconv.Itoa(i), Time: time.Now()})
	}
	call := &runner.ToolCall{Name: "Edit", ToolUseID: "x", Input: "Edit: /repo/.pneuma/worktrees/r/job/runner/run.go"}
	start := cpuTime()
	for b.Loop() {
		for i := range jobs {
			v.Event(runner.Event{Type: runner.EventToolStarted, Job: "job-" + strconv.Itoa(i), Tool: call, Time: time.Now()})
		}
		v.mu.Lock()
		v.draw()
		v.mu.Unlock()
	}
	cpu := cpuTime() - start
	v.Close()
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N*jobs), "cpu-ms/job")
}
