package runner

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pneuma-cli/pneuma/claude"
	"github.com/pneuma-cli/pneuma/report"
)

// notices are what a CLI process's newer message kinds say about its job
// beyond the accounting of tally: API retries, compactions, a model that
// refused, writes the CLI lost, hooks that ran and the background tasks
// still running (docs/claude-stream.md lists every kind and its use).
type notices struct {
	apiRetries  int
	compactions int
	hookRuns    int
	hookFails   int
	// fallback is the latest model_refusal_fallback of the main thread.
	fallback *claude.ModelFallback
	// writesLost is the latest session_writes_lost.
	writesLost *claude.WritesLost
	// tasks are the background tasks running, by id: the level of the
	// latest background_tasks_changed, kept current by the task lines.
	tasks map[string]claude.BackgroundTask
	// atResult are the tasks running when the latest result the job
	// counts came (resulted says one did): a task that ends while the CLI
	// exits after the job's result still ran past it.
	atResult []report.Task
	resulted bool
}

// result notes that a result the job counts came: the tasks running now
// are the ones the report names.
func (n *notices) result() {
	n.atResult, n.resulted = n.running(), true
}

// note takes one system line; it reports whether the line is one people
// should see as it happens (a compaction, a fallback, a background task
// that started or ended, lost writes).
func (n *notices) note(ev claude.Event) bool {
	switch {
	case ev.Retry != nil:
		n.apiRetries++
	case ev.Compact != nil:
		n.compactions++
		return true
	case ev.Hook != nil:
		if ev.Subtype == claude.SubtypeHookStarted {
			n.hookRuns++
		}
		if ev.Hook.Failed() {
			n.hookFails++
		}
	case ev.Fallback != nil:
		n.fallback = ev.Fallback
		return true
	case ev.WritesLost != nil:
		n.writesLost = ev.WritesLost
		return true
	case ev.Background != nil:
		n.tasks = map[string]claude.BackgroundTask{}
		for _, t := range ev.Background.Tasks {
			n.tasks[t.TaskID] = t
		}
	case ev.Task != nil:
		// background_tasks_changed may name a task before its task_started
		// does: the start is still news.
		return n.task(ev.Task) || (ev.Subtype == claude.SubtypeTaskStarted && ev.Task.Background)
	}
	return false
}

// task follows one task line: a backgrounded task joins the running set,
// one whose status says it ended leaves it.
func (n *notices) task(t *claude.Task) bool {
	switch {
	case t.Ended():
		if _, ok := n.tasks[t.TaskID]; ok {
			delete(n.tasks, t.TaskID)
			return true
		}
	case t.Background:
		if _, ok := n.tasks[t.TaskID]; !ok {
			if n.tasks == nil {
				n.tasks = map[string]claude.BackgroundTask{}
			}
			n.tasks[t.TaskID] = claude.BackgroundTask{TaskID: t.TaskID, TaskType: t.TaskType, SubagentType: t.SubagentType, Description: t.Description}
			return true
		}
	}
	return false
}

// running lists the background tasks still running, by id.
func (n *notices) running() []report.Task {
	var out []report.Task
	for _, id := range slices.Sorted(maps.Keys(n.tasks)) {
		t := n.tasks[id]
		out = append(out, report.Task{ID: t.TaskID, Type: t.TaskType, Description: t.Description})
	}
	return out
}

// addTo adds an attempt's counts, fallback and lost writes to its job's
// result.
func (n *notices) addTo(res *report.Job) {
	res.APIRetries += n.apiRetries
	res.Compactions += n.compactions
	res.HookRuns += n.hookRuns
	res.HookFailures += n.hookFails
	if f := n.fallback; f != nil {
		res.RefusalFallback = &report.RefusalFallback{OriginalModel: f.OriginalModel, FallbackModel: f.FallbackModel, Scope: f.Scope}
	}
	if w := n.writesLost; w != nil {
		res.Warnings = append(res.Warnings, report.Warning{Code: report.WarnSessionWritesLost,
			Message: fmt.Sprintf("the CLI could not save its %s (%s): the session's transcript on disk may be incomplete, and resuming it may miss part of the conversation",
				strings.Join(w.Lost, " and "), w.ErrorCode)})
	}
}

// leftRunning records the background tasks still running at the last
// attempt's last result (at its end when it had none).
func (n *notices) leftRunning(res *report.Job) {
	res.TasksRunning = n.running()
	if n.resulted {
		res.TasksRunning = n.atResult
	}
	if len(res.TasksRunning) > 0 {
		names := make([]string, len(res.TasksRunning))
		for i, t := range res.TasksRunning {
			names[i] = fmt.Sprintf("%s (%s)", t.ID, firstNonEmpty(t.Description, t.Type))
		}
		res.Warnings = append(res.Warnings, report.Warning{Code: report.WarnTasksRunning,
			Message: fmt.Sprintf("%d background task(s) were still running at the job's result: %s", len(names), strings.Join(names, ", "))})
	}
}

// noticeEvent is the run event of a notable system line of job.
func noticeEvent(job string, ev claude.Event) Event {
	e := Event{Job: job}
	switch {
	case ev.Compact != nil:
		e.Type, e.Compact = EventCompactBoundary, ev.Compact
		e.Message = fmt.Sprintf("the conversation was compacted (%s) from %d tokens", firstNonEmpty(ev.Compact.Trigger, "auto"), ev.Compact.PreTokens)
	case ev.Fallback != nil:
		e.Type, e.Model = EventModelFallback, ev.Fallback.FallbackModel
		e.Message = fmt.Sprintf("%s refused; the CLI switched to %s", ev.Fallback.OriginalModel, ev.Fallback.FallbackModel)
	case ev.WritesLost != nil:
		e.Type, e.Reason = EventWritesLost, ev.WritesLost.ErrorCode
		e.Message = fmt.Sprintf("the CLI could not save its %s (%s)", strings.Join(ev.WritesLost.Lost, " and "), ev.WritesLost.ErrorCode)
	case ev.Task != nil:
		e.Type, e.Task = EventBackgroundTask, ev.Task
	}
	return e
}

// hookEvent is the run event of a hook line of job (include_hook_events):
// the hook and how it went, never its output.
func hookEvent(job string, h *claude.Hook) Event {
	e := Event{Type: EventHook, Job: job, Hook: h, Status: h.Outcome}
	switch {
	case h.Phase != "response":
		e.Message = fmt.Sprintf("hook %s %s", h.HookName, h.Phase)
	case h.ExitCode != nil:
		e.Message = fmt.Sprintf("hook %s: %s (exit %d)", h.HookName, firstNonEmpty(h.Outcome, "done"), *h.ExitCode)
	default:
		e.Message = fmt.Sprintf("hook %s: %s", h.HookName, firstNonEmpty(h.Outcome, "done"))
	}
	return e
}
