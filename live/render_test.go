package live

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/runner"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestMain(m *testing.M) {
	time.Local = time.UTC // held-until clocks print in local time
	os.Exit(m.Run())
}

// t0 is the fake clock's start; at(s) is s seconds later.
var t0 = time.Date(2026, 11, 27, 14, 0, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func started(job string, s int) runner.Event {
	return runner.Event{Type: runner.EventJobStarted, Job: job, Time: at(s), Worktree: "/repo/.pneuma/worktrees/r1/" + job}
}

func ev(typ, job string, s int) runner.Event { return runner.Event{Type: typ, Job: job, Time: at(s)} }

func tool(typ, job string, s int, id, name, input string) runner.Event {
	e := ev(typ, job, s)
	e.Tool = &runner.ToolCall{Name: name, ToolUseID: id, Input: input}
	return e
}

func finished(job string, s int, r report.Job) runner.Event {
	r.Name = job
	e := ev(runner.EventJobFinished, job, s)
	e.Result = &r
	return e
}

func run(n int) runner.Event {
	return runner.Event{Type: runner.EventRunStarted, RunID: "r1", Jobs: n, Time: at(0)}
}

// TestGolden draws every state a job can be in at a fake time and
// compares the lines with testdata/<name>.golden (go test -update rewrites).
func TestGolden(t *testing.T) {
	retry := ev(runner.EventAPIRetry, "flaky", 20)
	retry.Attempt, retry.MaxRetries, retry.DelayMS = 2, 3, 12000
	resume := at(65 * 60)
	held := ev(runner.EventUsageLimitWait, "held", 30)
	held.ResumeAt, held.Message = &resume, "usage limit reached; waiting until 15:05 (1h4m30s) to resume 1 job"
	turn := ev(runner.EventTurnFinished, "writer", 15)
	turn.CostUSD = 0.0421
	spent := ev(runner.EventJobRetry, "again", 25)
	spent.Attempt, spent.Reason, spent.DelayMS, spent.SpentUSD = 2, "api_error", 8000, 1.25
	cases := []struct {
		name   string
		events []runner.Event
		now    int
		st     Style
		rows   int
		budget float64
	}{
		{name: "starting", events: []runner.Event{run(1), started("lint", 0)}, now: 1},
		{name: "thinking", events: []runner.Event{run(1), started("lint", 0), ev(runner.EventAttemptStarted, "lint", 1), ev(runner.EventTurnStarted, "lint", 1)}, now: 5},
		{name: "tool", events: []runner.Event{run(2), started("lint", 0), started("docs", 3), ev(runner.EventTurnStarted, "lint", 1),
			tool(runner.EventToolStarted, "lint", 2, "t1", "Bash", "Bash: go test ./..."), ev(runner.EventTurnStarted, "docs", 4),
			tool(runner.EventToolStarted, "docs", 5, "t2", "Edit", "Edit: /repo/.pneuma/worktrees/r1/docs/runner/run.go")}, now: 62},
		{name: "tool-ended", events: []runner.Event{run(1), started("lint", 0), tool(runner.EventToolStarted, "lint", 2, "t1", "Bash", "Bash: make"),
			tool(runner.EventToolCall, "lint", 9, "t1", "Bash", "Bash: make")}, now: 10},
		{name: "writing", events: []runner.Event{run(1), started("writer", 0), ev(runner.EventTurnStarted, "writer", 1), turn, ev(runner.EventTurnStarted, "writer", 16), ev(runner.EventWriting, "writer", 17)}, now: 18},
		{name: "permission", events: []runner.Event{run(1), started("ask", 0), ev("permission_request", "ask", 3)}, now: 4},
		{name: "held", events: []runner.Event{run(1), started("held", 0), held}, now: 35},
		{name: "retry", events: []runner.Event{run(1), started("flaky", 0), retry}, now: 24},
		{name: "job-retry", events: []runner.Event{run(1), started("again", 0), spent}, now: 26, budget: 5},
		{name: "stopping", events: []runner.Event{run(1), started("slow", 0), runner.Event{Type: runner.EventStopping, Job: "slow", Time: at(600), Reason: "timeout"}}, now: 601},
		{name: "finished", events: []runner.Event{run(4), started("ok", 0), started("bad", 0), started("skip", 0),
			finished("ok", 12, report.Job{Status: report.StatusSucceeded, CostUSD: 0.0123, NumTurns: 3, DurationMS: 12300, FilesChanged: 2, Insertions: 10, Deletions: 1}),
			finished("bad", 20, report.Job{Status: report.StatusFailed, Reason: report.ReasonTimeout, CostUSD: 0.5, NumTurns: 1, DurationMS: 20000, Error: "job timed out after 20s\nmore detail"}),
			finished("skip", 20, report.Job{Status: report.StatusSkipped, Reason: report.ReasonBudget})}, now: 21},
		{name: "failed-color", st: Style{Width: 80, Color: true}, events: []runner.Event{run(2), started("bad", 0),
			finished("bad", 20, report.Job{Status: report.StatusFailed, Reason: report.ReasonAPIError, CostUSD: 0.5, NumTurns: 1, DurationMS: 20000, Error: "API Error: 500 overloaded"})}, now: 21},
		{name: "more", rows: 3, events: []runner.Event{run(5), started("e", 4), started("d", 3), started("c", 2), started("b", 1), started("a", 0)}, now: 100},
		{name: "narrow", st: Style{Width: 40}, events: []runner.Event{run(1), started("a-very-long-job-name-indeed", 0),
			tool(runner.EventToolStarted, "a-very-long-job-name-indeed", 2, "t1", "Bash", "Bash: go test -race -run TestSomethingLong ./...")}, now: 3},
		{name: "wide-chars", st: Style{Width: 30}, events: []runner.Event{run(1), started("日本語のジョブ名", 0),
			tool(runner.EventToolStarted, "日本語のジョブ名", 2, "t1", "Bash", "Bash: echo 'ünïcødé\nnewline'")}, now: 3},
		{name: "ended", events: []runner.Event{run(1), started("ok", 0),
			finished("ok", 12, report.Job{Status: report.StatusSucceeded, CostUSD: 0.01, NumTurns: 1, DurationMS: 12000}),
			{Type: runner.EventRunFinished, Time: at(13), Report: &report.Report{Status: report.RunSucceeded}}}, now: 100},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := NewState()
			s.BudgetUSD = c.budget
			for _, e := range c.events {
				s.Apply(e)
			}
			st := c.st
			if st.Width == 0 {
				st.Width = 80
			}
			rows := c.rows
			if rows == 0 {
				rows = 10
			}
			var lines []string
			for _, j := range s.Done {
				lines = append(lines, FinishedLine(j, st))
			}
			lines = append(lines, s.RunningLines(at(c.now), rows, st)...)
			lines = append(lines, s.Footer(at(c.now), st))
			lines = append(lines, s.Notes...)
			got := strings.Join(lines, "\n") + "\n"
			for _, l := range lines {
				if w := visibleWidth(l); w > st.Width {
					t.Errorf("line is %d columns, over %d: %q", w, st.Width, l)
				}
			}
			path := filepath.Join("testdata", c.name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test -update writes it)", err)
			}
			if got != string(want) {
				t.Errorf("lines differ from %s:\ngot:\n%s\nwant:\n%s", path, got, want)
			}
		})
	}
}

func visibleWidth(s string) int {
	for _, c := range []string{red, green, dim, reset} {
		s = strings.ReplaceAll(s, c, "")
	}
	return uniWidth(s)
}

// TestFinishedLineTasksLeft: a job that left background tasks running at
// its result says so on its line.
func TestFinishedLineTasksLeft(t *testing.T) {
	j := &Job{Name: "x", Result: &report.Job{Name: "x", Status: report.StatusSucceeded, NumTurns: 1,
		TasksRunning: []report.Task{{ID: "b1"}, {ID: "b2"}}}}
	if got := FinishedLine(j, Style{}); !strings.Contains(got, "✓ x  succeeded") || !strings.Contains(got, "2 background tasks still running") {
		t.Errorf("finished line %q", got)
	}
}

// TestAuditDecision: an audit line becomes the decision logs shows beside
// a tool's result; other lines are none.
func TestAuditDecision(t *testing.T) {
	for line, want := range map[string]string{
		`{"tool_use_id":"t1","decision":"deny","rule":"Bash(git push*)"}`: "deny: Bash(git push*)",
		`{"tool_use_id":"t2","decision":"allow","edited":true}`:           "allow, input edited",
		`{"tool_use_id":"t3","decision":"allow","rule":"link"}`:           "allow: link",
		`{"tool_use_id":"","decision":"allow"}`:                           "",
		`not json`:                                                        "",
	} {
		_, got, ok := AuditDecision([]byte(line))
		if got != want || ok != (want != "") {
			t.Errorf("AuditDecision(%s) = %q, %v; want %q", line, got, ok, want)
		}
	}
	decided := func(id string) string { return map[string]string{"t1": "deny: Bash(git push*)"}[id] }
	got := StreamLines([]byte(`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":"refused"}]}}`), "", decided)
	if len(got) != 1 || got[0] != "  ← [deny: Bash(git push*)] error: refused" {
		t.Errorf("result line %q", got)
	}
}
