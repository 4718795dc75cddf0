package runner

import (
	"os"
	"strings"
	"testing"

	"github.com/pneuma-cli/pneuma/claude"
	"github.com/pneuma-cli/pneuma/jobfile"
	"github.com/pneuma-cli/pneuma/report"
)

func TestAsksQuestion(t *testing.T) {
	tests := []struct {
		answer string
		want   bool
	}{
		{"Done. Should I also update the tests?", true},
		{"I fixed it.\n\nWould you like me to open a PR.", true},
		{"Fixed the bug. Let me know if anything else is needed.", true},
		{"Which approach do you prefer? **Option A** or **B?**", true},
		{"Why did it fail? The cache was stale.\n\nI cleared it and the tests pass.", false},
		{"All tests pass.", false},
		{"Here is the fix:\n\n```go\nx := a?b\n```", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := asksQuestion(tt.answer); got != tt.want {
			t.Errorf("asksQuestion(%q) = %v", tt.answer, got)
		}
	}
}

func TestSuspectAndExpect(t *testing.T) {
	denied := &claude.Result{PermissionDenials: []claude.PermissionDenial{{ToolName: "Write"}}}
	mcp := []claude.MCPServer{{Name: "gh", Status: "failed"}, {Name: "ok", Status: "connected"}, {Name: "db", Status: "needs-auth"}}
	tests := []struct {
		name   string
		res    *claude.Result
		mcp    []claude.MCPServer
		mode   string
		expect *jobfile.Expect
		codes  string
		reason string
	}{
		{"clean", &claude.Result{Result: "done"}, nil, "default", nil, "", ""},
		{"question", &claude.Result{Result: "Shall I go on?"}, nil, "default", nil, "asked_question", ""},
		{"question, expected none", &claude.Result{Result: "Shall I go on?"}, nil, "default", &jobfile.Expect{NoQuestions: true}, "asked_question", report.ReasonAskedQuestion},
		{"mcp failed", &claude.Result{}, mcp, "default", nil, "mcp_failed", ""},
		{"mcp failed, expected", &claude.Result{}, mcp, "default", &jobfile.Expect{MCP: true}, "mcp_failed", report.ReasonMCPFailed},
		{"denials in default mode", denied, nil, "default", nil, "permission_denied", ""},
		{"denials in bypass", denied, nil, "bypassPermissions", nil, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := suspect(tt.res, tt.mcp, tt.mode)
			var codes []string
			for _, w := range ws {
				codes = append(codes, w.Code)
			}
			v, failed := expectVerdict(tt.expect, ws)
			if got := strings.Join(codes, ","); got != tt.codes || v.reason != tt.reason || failed != (tt.reason != "") {
				t.Errorf("codes %q, verdict %+v", got, v)
			}
		})
	}
}

func TestStructuredOutput(t *testing.T) {
	schema := []byte(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)
	tests := []struct {
		name, out string
		ok        bool
	}{
		{"valid", `{"n":3}`, true},
		{"wrong type", `{"n":"three"}`, false},
		{"missing field", `{}`, false},
		{"none", ``, false},
		{"null", `null`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := structuredOutput(schema, &claude.Result{StructuredOutput: []byte(tt.out)})
			if (err == nil) != tt.ok {
				t.Errorf("structuredOutput(%s) error %v", tt.out, err)
			}
		})
	}
}

// A success whose structured output the CLI passed on although it does not
// match output_schema fails the job, and output.json is not written.
func TestJudgeStructuredOutput(t *testing.T) {
	schema := []byte(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)
	for _, tt := range []struct {
		name, out, reason, output string
	}{
		{"valid", `{"n":3}`, "", `{"n":3}`},
		{"invalid", `{"n":"three"}`, report.ReasonInvalidOutput, ""},
		{"none", ``, report.ReasonInvalidOutput, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			job := &Job{JobDir: t.TempDir(), OutputSchema: schema}
			res := &report.Job{Status: report.StatusSucceeded}
			r := &run{}
			r.judge(job, res, attempt{result: &claude.Result{Subtype: "success", StructuredOutput: []byte(tt.out)}})
			if res.Reason != tt.reason || string(res.StructuredOutput) != tt.output {
				t.Errorf("judge: %s/%s %q, structured_output %s", res.Status, res.Reason, res.Error, res.StructuredOutput)
			}
			data, err := os.ReadFile(JobDir(job.JobDir).Output())
			if string(data) != tt.output || (tt.output == "" && !os.IsNotExist(err)) {
				t.Errorf("output.json %q (%v), want %q", data, err, tt.output)
			}
		})
	}
}
