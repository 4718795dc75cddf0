package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

func TestGitHubAnnotationsOrderAndLimit(t *testing.T) {
	r := &Report{Schema: Schema, RunID: "x"}
	add := func(name, status, reason string) {
		r.Jobs = append(r.Jobs, Job{Name: name, Status: status, Reason: reason, Error: name + " went wrong"})
	}
	add("ok", StatusSucceeded, "")
	add("stopped", StatusInterrupted, ReasonInterrupted)
	add("fail-fast", StatusInterrupted, ReasonFailFast)
	add("over-budget", StatusFailed, ReasonBudget)
	for i := range 11 {
		add(fmt.Sprintf("broken-%02d", i), StatusFailed, ReasonVerifyFailed)
	}
	add("skipped", StatusSkipped, ReasonBudget)
	r.Tally(false)

	var buf bytes.Buffer
	if err := GitHubAnnotations(&buf, r); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 11 {
		t.Fatalf("%d lines, want 10 errors and a notice:\n%s", len(lines), buf.String())
	}
	for i, line := range lines[:10] {
		want := fmt.Sprintf("::error title=pneuma%%3A job broken-%02d failed (verify_failed)::broken-%02d went wrong%%0A", i, i)
		if !strings.HasPrefix(line, want) {
			t.Errorf("line %d:\n got %s\nwant %s…", i, line, want)
		}
	}
	if want := "::notice title=pneuma::4 more jobs did not succeed"; !strings.HasPrefix(lines[10], want) {
		t.Errorf("last line %q, want %q…", lines[10], want)
	}
}

func TestGitHubAnnotationsEscaping(t *testing.T) {
	r := &Report{Schema: Schema, Jobs: []Job{{
		Name: "a,b:c", Status: StatusFailed, Reason: ReasonCLIError,
		Error: "100% broken\r\n::set-output name=x::y\n\x1b[31m::warning::red\x1b[0m",
	}}}
	r.Tally(false)
	var buf bytes.Buffer
	if err := GitHubAnnotations(&buf, r); err != nil {
		t.Fatal(err)
	}
	want := "::error title=pneuma%3A job a%2Cb%3Ac failed (cli_error)::100%25 broken%0D%0A::set-output name=x::y%0A::warning::red%0A"
	if got := buf.String(); !strings.HasPrefix(got, want) || strings.Count(got, "\n") != 1 {
		t.Errorf("got  %q\nwant %q… on one line", got, want)
	}
}

func TestGitHubAnnotationsNoneWhenAllSucceed(t *testing.T) {
	r := &Report{Schema: Schema, Jobs: []Job{{Name: "a", Status: StatusSucceeded}, {Name: "b", Status: StatusSkipped}}}
	var buf bytes.Buffer
	if err := GitHubAnnotations(&buf, r); err != nil || buf.Len() != 0 {
		t.Fatalf("got %q, %v; want nothing", buf.String(), err)
	}
}

func TestStopCommands(t *testing.T) {
	token := NewStopToken()
	if token == NewStopToken() || len(token) < 30 {
		t.Fatalf("tokens are not random or too short: %q", token)
	}
	tests := []struct {
		name string
		f    func(io.Writer) error
		want string
		err  error
	}{
		{"lines", func(w io.Writer) error { _, err := io.WriteString(w, "::error::injected\n"); return err },
			"::stop-commands::" + token + "\n::error::injected\n::" + token + "::\n", nil},
		{"unfinished line", func(w io.Writer) error { _, err := io.WriteString(w, "partial"); return err },
			"::stop-commands::" + token + "\npartial\n::" + token + "::\n", nil},
		{"nothing", func(io.Writer) error { return nil },
			"::stop-commands::" + token + "\n::" + token + "::\n", nil},
		{"error", func(w io.Writer) error { io.WriteString(w, "half"); return errBoom },
			"::stop-commands::" + token + "\nhalf\n::" + token + "::\n", errBoom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := StopCommands(&buf, token, tt.f)
			if !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
				t.Errorf("error %v, want %v", err, tt.err)
			}
			if buf.String() != tt.want {
				t.Errorf("got  %q\nwant %q", buf.String(), tt.want)
			}
		})
	}
}

var errBoom = errors.New("boom")
