package runner

import (
	"github.com/pneuma-cli/pneuma/claude"
	"github.com/pneuma-cli/pneuma/report"
)

// tally keeps what a CLI process's events say about its accounting: the
// session id, the model, results, turns and cost. A job's attempt and a
// server session's turns read events the same way through it.
type tally struct {
	sessionID string
	model     string
	initSeen  bool // an init line arrived: the CLI accepted its session
	results   int
	turns     int
	last      *claude.Result // the latest result
	costUsage *claude.Result // the result that carried the largest cost
	maxCost   float64
	invalid   int
	oversized int
	// rateLimit is the latest rate-limit state the CLI reported.
	rateLimit *claude.RateLimitInfo
	// mcp are the MCP servers of the latest init line.
	mcp []claude.MCPServer
	// served is the model of the latest main-thread answer from the API.
	served string
	// permMode is the permission mode of the latest init line.
	permMode string
	// outputTool is the id of the latest StructuredOutput call, and
	// outputRejected why the CLI refused its input (its own validation
	// against --json-schema), "" while it has not.
	outputTool, outputRejected string
	// notices are the newer message kinds' facts (notices.go); notable
	// says the latest event is one people should see as it happens.
	notices
	notable bool
}

// add takes one event. It reports whether the event was a result (and
// newSession whether it named a session id not seen before).
func (t *tally) add(ev claude.Event) (result, newSession bool) {
	t.notable = false
	switch ev.Type {
	case claude.TypeInvalid:
		t.invalid++
	case claude.TypeOversized:
		t.oversized++
	case claude.TypeSystem:
		if ev.Init != nil {
			t.initSeen = true
			if ev.Init.SessionID != "" && ev.Init.SessionID != t.sessionID {
				t.sessionID, newSession = ev.Init.SessionID, true
			}
			t.model = firstNonEmpty(ev.Init.Model, t.model)
			t.mcp, t.permMode = ev.Init.MCPServers, ev.Init.PermissionMode
		}
		t.notable = t.note(ev)
		if f := ev.Fallback; f != nil && ev.ParentToolUseID == "" && f.Scope != "local" && f.FallbackModel != "" {
			t.served = f.FallbackModel // the session goes on with the fallback model
		}
	case claude.TypeRateLimit:
		if ev.RateLimit != nil {
			t.rateLimit = ev.RateLimit
		}
	case claude.TypeAssistant:
		// "<synthetic>" marks messages the CLI made up itself (API errors).
		if m := ev.Message; m != nil && ev.ParentToolUseID == "" && m.Model != "" && m.Model != "<synthetic>" {
			t.served = m.Model
		}
		t.noteOutputCall(ev)
	case claude.TypeUser:
		t.noteOutputResult(ev)
	case claude.TypeResult:
		if ev.Result == nil {
			return false, false
		}
		t.results++
		t.last = ev.Result
		t.notices.result()
		t.sessionID = firstNonEmpty(ev.Result.SessionID, t.sessionID)
		t.turns += ev.Result.NumTurns
		// total_cost_usd is cumulative per process in stream-json input
		// mode, and 0 after an interrupted turn: keep the largest, never sum.
		if ev.Result.TotalCostUSD >= t.maxCost {
			t.maxCost = ev.Result.TotalCostUSD
			t.costUsage = ev.Result
		}
		return true, false
	}
	return false, newSession
}

// usage is the process's token usage by model and in total, from the result
// that carried the largest cost.
func (t *tally) usage() (report.Usage, map[string]report.ModelUsage) {
	if t.costUsage == nil {
		return report.Usage{}, nil
	}
	return claudeUsage(t.costUsage.ModelUsage, t.costUsage.Usage)
}

// denials lists the calls the CLI's permission system refused in a result.
func denials(res *claude.Result) []report.PermissionDenial {
	if res == nil {
		return nil
	}
	out := make([]report.PermissionDenial, 0, len(res.PermissionDenials))
	for _, pd := range res.PermissionDenials {
		out = append(out, report.PermissionDenial{ToolName: pd.ToolName, ToolUseID: pd.ToolUseID, ToolInput: pd.ToolInput})
	}
	return out
}

// noteOutputCall remembers the main thread's latest StructuredOutput call.
func (t *tally) noteOutputCall(ev claude.Event) {
	if ev.Message == nil || ev.ParentToolUseID != "" {
		return
	}
	for _, b := range ev.Message.Content {
		if b.Type == "tool_use" && b.Name == structuredOutputTool {
			t.outputTool, t.outputRejected = b.ID, ""
		}
	}
}

// noteOutputResult keeps why the CLI refused the latest StructuredOutput
// call ("Output does not match required schema: /n: must be integer").
func (t *tally) noteOutputResult(ev claude.Event) {
	if ev.Message == nil || t.outputTool == "" {
		return
	}
	for _, b := range ev.Message.Content {
		if b.Type == "tool_result" && b.ToolUseID == t.outputTool && b.IsError {
			t.outputRejected = blockText(b.Content)
		}
	}
}

// structuredOutputTool is the tool the CLI offers the model for the result
// of a --json-schema run.
const structuredOutputTool = "StructuredOutput"
