package runner

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"unicode"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/pneuma-cli/pneuma/claude"
	"github.com/pneuma-cli/pneuma/jobfile"
	"github.com/pneuma-cli/pneuma/report"
)

// A success result is not always a success: judge looks for the signs that
// a job which ended well did not do its work, and records each as a
// warning, or as a failure with its own reason when the job's expect: asks.

// judge checks a job's last attempt after the attempts stage: structured
// output against output_schema, and the suspect-success warnings.
func (r *run) judge(job *Job, res *report.Job, last attempt) {
	res.Warnings = append(res.Warnings, suspect(last.result, last.mcp, last.permMode)...)
	if res.Status != report.StatusSucceeded {
		return
	}
	if len(job.OutputSchema) > 0 {
		out, err := structuredOutput(job.OutputSchema, last.result)
		if err != nil {
			// Invalid output is kept out of the report and output.json,
			// where scripts would take it for the job's answer; the
			// stream has it.
			res.Status, res.Reason, res.Error = report.StatusFailed, report.ReasonInvalidOutput, err.Error()
			return
		}
		res.StructuredOutput = out
		if werr := os.WriteFile(JobDir(job.JobDir).Output(), out, 0o644); werr != nil {
			res.Error = joinErr(res.Error, fmt.Sprintf("write output.json: %v", werr))
		}
	}
	if v, failed := expectVerdict(job.Expect, res.Warnings); failed {
		res.Status, res.Reason, res.Error = v.status, v.reason, v.err
	}
}

// expectChanges fails a successful job that changed no file while its
// expect: asks for changes (checked once the finish stage counted them).
func expectChanges(job *Job, res *report.Job) {
	if job.Expect == nil || !job.Expect.Changes || res.Status != report.StatusSucceeded || res.FilesChanged > 0 {
		return
	}
	res.Status, res.Reason = report.StatusFailed, report.ReasonNoChanges
	res.Error = "the job succeeded but changed no file, and expect: {changes: true} is set"
}

// expectVerdict turns warnings the job's expect: forbids into a failure.
func expectVerdict(e *jobfile.Expect, warnings []report.Warning) (verdict, bool) {
	if e == nil {
		return verdict{}, false
	}
	for _, w := range warnings {
		switch {
		case w.Code == report.WarnAskedQuestion && e.NoQuestions:
			return verdict{report.StatusFailed, report.ReasonAskedQuestion, w.Message}, true
		case w.Code == report.WarnMCPFailed && e.MCP:
			return verdict{report.StatusFailed, report.ReasonMCPFailed, w.Message}, true
		}
	}
	return verdict{}, false
}

// suspect lists the warnings an attempt's outcome earns: a final answer
// that asks the user something, MCP servers that did not start, and
// permission denials in a mode other than bypassPermissions.
func suspect(res *claude.Result, mcp []claude.MCPServer, permMode string) []report.Warning {
	var out []report.Warning
	if res != nil && !res.IsError && asksQuestion(res.Result) {
		out = append(out, report.Warning{Code: report.WarnAskedQuestion,
			Message: "the final answer ends by asking the user something: the job may have stopped short"})
	}
	if bad := failedMCP(mcp); len(bad) > 0 {
		out = append(out, report.Warning{Code: report.WarnMCPFailed,
			Message: "MCP servers did not start: " + strings.Join(bad, ", ")})
	}
	if res != nil && len(res.PermissionDenials) > 0 && permMode != "bypassPermissions" {
		tools := make([]string, 0, len(res.PermissionDenials))
		for _, d := range res.PermissionDenials {
			tools = append(tools, d.ToolName)
		}
		out = append(out, report.Warning{Code: report.WarnPermissionDenied,
			Message: fmt.Sprintf("%d tool call(s) refused in permission mode %q: %s", len(tools), permMode, strings.Join(tools, ", "))})
	}
	return out
}

// failedMCP names the MCP servers that failed or need auth, with status
// and, when the CLI said it, why.
func failedMCP(servers []claude.MCPServer) []string {
	var out []string
	for _, s := range servers {
		if s.Status != "failed" && s.Status != "needs-auth" {
			continue
		}
		if s.Error != "" {
			out = append(out, s.Name+" ("+s.Status+": "+s.Error+")")
		} else {
			out = append(out, s.Name+" ("+s.Status+")")
		}
	}
	return out
}

// questionPhrases are how answers hand the decision back to the user.
var questionPhrases = []string{
	"would you like", "do you want", "should i ", "shall i ", "let me know", "please confirm",
	"can you confirm", "could you confirm", "which would you prefer", "how would you like", "which option",
}

// asksQuestion is the documented heuristic for an answer that ends by
// asking the user something. Only the last paragraph counts (text after the
// last blank line, outside a trailing code block): it asks when its last
// sentence ends with "?" (ignoring closing quotes, brackets and markdown
// emphasis), or when it holds one of questionPhrases ("would you like",
// "let me know", "shall I", ...). Questions earlier in the answer, which
// the agent went on to answer itself, do not count.
func asksQuestion(answer string) bool {
	text := strings.TrimSpace(answer)
	if strings.HasSuffix(text, "```") {
		return false // ends in code, not in a question
	}
	if i := strings.LastIndex(text, "\n\n"); i >= 0 {
		text = text[i+2:]
	}
	last := strings.TrimRightFunc(text, func(r rune) bool {
		return unicode.IsSpace(r) || strings.ContainsRune("*_)\"'`]»”", r)
	})
	if strings.HasSuffix(last, "?") || strings.HasSuffix(last, "？") {
		return true
	}
	lower := strings.ToLower(text)
	for _, p := range questionPhrases {
		if strings.Contains(lower, p) {
			return true
		}
	}
	return false
}

// structuredOutput validates a result's structured_output against schema.
// It returns the output (nil when there is none) and why it is invalid.
func structuredOutput(schema []byte, res *claude.Result) ([]byte, error) {
	if res == nil || len(bytes.TrimSpace(res.StructuredOutput)) == 0 || string(bytes.TrimSpace(res.StructuredOutput)) == "null" {
		return nil, fmt.Errorf("the result carries no structured_output (output_schema is set)")
	}
	out := bytes.TrimSpace(res.StructuredOutput)
	s, err := compileSchema(schema)
	if err != nil {
		return out, fmt.Errorf("output_schema: %w", err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(out))
	if err != nil {
		return out, fmt.Errorf("structured_output is not JSON: %w", err)
	}
	if err := s.Validate(v); err != nil {
		return out, fmt.Errorf("structured_output does not match output_schema: %v", err)
	}
	return out, nil
}

// cmpRateLimit keeps the latest rate-limit state: rl when there is one.
func cmpRateLimit(cur *report.RateLimit, rl *claude.RateLimitInfo) *report.RateLimit {
	if rl == nil {
		return cur
	}
	return reportRateLimit(rl)
}

// compileSchema compiles a JSON Schema document.
func compileSchema(data []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(data)))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("output_schema.json", doc); err != nil {
		return nil, err
	}
	return c.Compile("output_schema.json")
}
