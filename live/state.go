// Package live turns a run's events into what a person reads while it runs:
// a model of the run (State, fed one runner.Event at a time, from the
// running engine or from a run directory's events.jsonl) and the lines
// drawn from it (render.go). It draws nothing itself: cmd puts the lines on
// a terminal.
package live

import (
	"strings"
	"time"

	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/runner"
)

// The kinds of thing a running job can be doing.
const (
	KindStarting   = "starting"
	KindThinking   = "thinking"
	KindWriting    = "writing"
	KindTool       = "tool"
	KindPermission = "permission"
	KindRetry      = "retry"
	KindHeld       = "held"
	KindStopping   = "stopping"
	KindBetween    = "between"
)

// Activity is what a running job is doing now.
type Activity struct {
	Kind string `json:"kind"`
	// What says it for people: "Bash: go test ./...", "retry 2/3".
	What  string    `json:"what"`
	Since time.Time `json:"since"`
	// Until is when a hold or a retry's wait ends (zero otherwise).
	Until time.Time `json:"until,omitzero"`
}

// Job is one job of the run as the view knows it.
type Job struct {
	Name     string    `json:"name"`
	Started  time.Time `json:"started"`
	Worktree string    `json:"worktree,omitempty"`
	Attempt  int       `json:"attempt"`
	Turns    int       `json:"turns"`
	CostUSD  float64   `json:"cost_usd"`
	Doing    Activity  `json:"doing"`
	// Result is the job's report entry once it finished.
	Result   *report.Job `json:"result,omitempty"`
	Finished time.Time   `json:"finished,omitzero"`

	tools    []runner.ToolCall // calls started and not yet ended, oldest first
	key      lineKey           // what cached was drawn from
	cached   string            // the running line last drawn
	spentPre float64           // the cost of the attempts that ended
}

// State is the model of one run, built from its events in order.
type State struct {
	RunID     string    `json:"run_id"`
	Total     int       `json:"jobs_total"`
	Start     time.Time `json:"started"`
	SpentUSD  float64   `json:"spent_usd"`
	BudgetUSD float64   `json:"budget_usd,omitempty"`
	// HeldUntil is the end of a usage limit's hold (zero when none).
	HeldUntil time.Time `json:"held_until,omitzero"`
	// Ended is set by run_finished; Status is then the run's.
	Ended   bool      `json:"ended"`
	Status  string    `json:"status,omitempty"`
	EndTime time.Time `json:"ended_at,omitzero"`
	// Running are the jobs started and not finished; Done the finished
	// ones in the order they finished.
	Running map[string]*Job `json:"running"`
	Done    []*Job          `json:"done"`
	// Notes are run-wide lines for people (usage limits, concurrency).
	Notes []string `json:"notes,omitempty"`
}

// NewState is the state of a run before its first event.
func NewState() *State { return &State{Running: map[string]*Job{}} }

// Apply folds one event into the state. Unknown types are ignored, so a
// newer log reads with an older view.
func (s *State) Apply(e runner.Event) {
	if e.SpentUSD > s.SpentUSD {
		s.SpentUSD = e.SpentUSD
	}
	switch e.Type {
	case runner.EventRunStarted:
		s.RunID, s.Total = e.RunID, e.Jobs
		if s.Start.IsZero() {
			s.Start = e.Time
		}
	case runner.EventJobStarted:
		s.forget(e.Job) // a resumed run starts again a job that was cut short
		s.Running[e.Job] = &Job{Name: e.Job, Started: e.Time, Worktree: e.Worktree, Doing: Activity{Kind: KindStarting, What: "starting", Since: e.Time}}
	case runner.EventJobFinished:
		s.finish(e)
	case runner.EventRunFinished:
		s.Ended, s.EndTime = true, e.Time
		if e.Report != nil {
			s.Status = string(e.Report.Status)
		}
	case runner.EventUsageLimitWait:
		if e.ResumeAt != nil {
			s.HeldUntil = *e.ResumeAt
			s.do(e, KindHeld, "held: usage limit until "+e.ResumeAt.Local().Format("15:04"), *e.ResumeAt)
		}
		s.note(e.Message)
	case runner.EventConcurrency:
		s.note("concurrency now " + itoa(e.Concurrency) + " (" + e.Reason + ")")
	case runner.EventUsageReserve:
		s.note(e.Message)
	default:
		s.applyJob(e)
	}
}

// applyJob folds the events of one running job.
func (s *State) applyJob(e runner.Event) {
	j := s.Running[e.Job]
	if j == nil {
		return
	}
	switch e.Type {
	case runner.EventAttemptStarted:
		j.Attempt++
		j.tools = nil
		s.HeldUntil = time.Time{}
		s.do(e, KindThinking, "thinking", time.Time{})
	case runner.EventTurnStarted:
		j.Turns++
		s.do(e, KindThinking, "thinking", time.Time{})
	case runner.EventWriting:
		s.do(e, KindWriting, "writing", time.Time{})
	case runner.EventToolStarted:
		if e.Tool != nil {
			j.tools = append(j.tools, *e.Tool)
			s.do(e, KindTool, toolLine(*e.Tool, j.Worktree), time.Time{})
		}
	case runner.EventToolCall:
		j.endTool(e)
	case runner.EventTurnFinished:
		j.CostUSD = j.spentPre + e.CostUSD
		j.tools = nil
		s.do(e, KindBetween, "between turns", time.Time{})
	case runner.EventAttemptFinished:
		j.spentPre += e.CostUSD
		j.CostUSD = j.spentPre
	case runner.EventAPIRetry:
		what := "API retry " + itoa(e.Attempt)
		if e.MaxRetries > 0 {
			what = "retry " + itoa(e.Attempt) + "/" + itoa(e.MaxRetries)
		}
		s.do(e, KindRetry, what, e.Time.Add(time.Duration(e.DelayMS)*time.Millisecond))
	case runner.EventJobRetry:
		s.do(e, KindRetry, "attempt "+itoa(e.Attempt)+" after "+e.Reason, e.Time.Add(time.Duration(e.DelayMS)*time.Millisecond))
	case runner.EventStopping:
		s.do(e, KindStopping, "stopping: "+e.Reason, time.Time{})
	case "permission_request":
		s.do(e, KindPermission, "waiting for permission", time.Time{})
	}
}

// endTool closes a tool call; the job is then doing the call still open
// (a subagent's, a parallel one), else thinking.
func (j *Job) endTool(e runner.Event) {
	if e.Tool == nil {
		return
	}
	for i, t := range j.tools {
		if t.ToolUseID == e.Tool.ToolUseID {
			j.tools = append(j.tools[:i], j.tools[i+1:]...)
			break
		}
	}
	if n := len(j.tools); n > 0 {
		j.Doing = Activity{Kind: KindTool, What: toolLine(j.tools[n-1], j.Worktree), Since: e.Time}
		return
	}
	j.Doing = Activity{Kind: KindThinking, What: "thinking", Since: e.Time}
}

// do sets what the event's job is doing.
func (s *State) do(e runner.Event, kind, what string, until time.Time) {
	if j := s.Running[e.Job]; j != nil {
		j.Doing = Activity{Kind: kind, What: what, Since: e.Time, Until: until}
	}
}

func (s *State) finish(e runner.Event) {
	j := s.Running[e.Job]
	delete(s.Running, e.Job)
	if j == nil {
		j = &Job{Name: e.Job, Started: e.Time}
	}
	j.Result, j.Finished, j.tools = e.Result, e.Time, nil
	if e.Result != nil {
		j.CostUSD, j.Turns = e.Result.CostUSD, e.Result.NumTurns
	}
	s.Done = append(s.Done, j)
}

// forget drops a job's earlier finish.
func (s *State) forget(job string) {
	for i, j := range s.Done {
		if j.Name == job {
			s.Done = append(s.Done[:i], s.Done[i+1:]...)
			return
		}
	}
}

// note keeps a run-wide line (the last few).
func (s *State) note(msg string) {
	if msg == "" {
		return
	}
	s.Notes = append(s.Notes, msg)
	if len(s.Notes) > 20 {
		s.Notes = s.Notes[len(s.Notes)-20:]
	}
}

// toolLine is a tool call for people: "Bash: go test ./...", the job's
// worktree left out of its paths. Input is policy.Summarize's summary,
// which names the tool first.
func toolLine(t runner.ToolCall, worktree string) string {
	in := strings.TrimPrefix(t.Input, t.Name+": ")
	if in == t.Name {
		in = ""
	}
	if worktree != "" {
		in = strings.ReplaceAll(in, strings.TrimSuffix(worktree, "/")+"/", "")
	}
	in = strings.Join(strings.Fields(in), " ")
	if in == "" {
		return t.Name
	}
	return t.Name + ": " + in
}
