package report

import (
	"bytes"
	"context"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// xmllint returns the path of xmllint. It is a test dependency (make
// test-deps): under CI=true its absence fails the test, elsewhere it skips.
func xmllint(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("xmllint")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("xmllint is not installed (make test-deps installs libxml2-utils)")
		}
		t.Skip("xmllint is not installed (make test-deps installs libxml2-utils)")
	}
	return path
}

// validateXSD checks file against testdata/junit-10.xsd with xmllint.
func validateXSD(t *testing.T, file string) {
	t.Helper()
	bin := xmllint(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--noout", "--schema", filepath.Join("testdata", "junit-10.xsd"), file).CombinedOutput()
	if err != nil {
		data, _ := os.ReadFile(file)
		t.Fatalf("xmllint rejects the JUnit file: %v\n%s\n--- file ---\n%s", err, out, data)
	}
}

func TestJUnitValidatesAgainstXSD(t *testing.T) {
	for name, r := range map[string]*Report{
		"mixed":   mixedReport(),
		"sharded": func() *Report { r := mixedReport(); r.Shard = &Shard{Index: 1, Total: 2}; return r }(),
		"empty":   func() *Report { r := &Report{Schema: Schema, RunID: "empty"}; r.Tally(false); return r }(),
	} {
		t.Run(name, func(t *testing.T) {
			validJSON(t, r)
			var buf bytes.Buffer
			if err := WriteJUnit(&buf, r); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "junit.xml")
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			validateXSD(t, path)
		})
	}
}

// junitDoc is what a consumer reads back from the file.
type junitDoc struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Suites   []struct {
		Name      string `xml:"name,attr"`
		Tests     int    `xml:"tests,attr"`
		Failures  int    `xml:"failures,attr"`
		Errors    int    `xml:"errors,attr"`
		Skipped   int    `xml:"skipped,attr"`
		Time      string `xml:"time,attr"`
		Timestamp string `xml:"timestamp,attr"`
		Props     []struct {
			Name  string `xml:"name,attr"`
			Value string `xml:"value,attr"`
		} `xml:"properties>property"`
		Cases []struct {
			Name      string `xml:"name,attr"`
			Classname string `xml:"classname,attr"`
			Time      string `xml:"time,attr"`
			Skipped   *struct {
				Message string `xml:"message,attr"`
			} `xml:"skipped"`
			Failure *struct {
				Message string `xml:"message,attr"`
				Type    string `xml:"type,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
			SystemOut *string `xml:"system-out"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func TestJUnitContent(t *testing.T) {
	r := mixedReport()
	r.Shard = &Shard{Index: 2, Total: 4}
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, r); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.HasPrefix(out, `<?xml version="1.0" encoding="UTF-8"?>`) {
		t.Errorf("no XML declaration: %.60s", out)
	}
	if strings.ContainsRune(out, 0x1b) || strings.Contains(out, "[1;31m") || strings.Contains(out, "]8;;") {
		t.Error("ANSI escapes reached the XML")
	}
	var doc junitDoc
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("output does not parse: %v", err)
	}
	if len(doc.Suites) != 1 {
		t.Fatalf("%d test suites, want 1", len(doc.Suites))
	}
	s := doc.Suites[0]
	if doc.Tests != 4 || doc.Failures != 2 || s.Tests != 4 || s.Failures != 2 || s.Errors != 0 || s.Skipped != 1 {
		t.Errorf("counts: testsuites %d/%d, testsuite tests=%d failures=%d errors=%d skipped=%d; want 4 tests, 2 failures, 1 skipped",
			doc.Tests, doc.Failures, s.Tests, s.Failures, s.Errors, s.Skipped)
	}
	if s.Name != "pneuma run 20261122-130000-ab12 (shard 2/4)" || s.Time != "187.000" || s.Timestamp != "2026-11-22T13:00:00Z" {
		t.Errorf("suite name=%q time=%q timestamp=%q", s.Name, s.Time, s.Timestamp)
	}
	props := map[string]string{}
	for _, p := range s.Props {
		props[p.Name] = p.Value
	}
	if props["run_id"] != r.RunID || props["shard"] != "2/4" || props["status"] != RunInterrupted {
		t.Errorf("properties %v", props)
	}
	if len(s.Cases) != 4 {
		t.Fatalf("%d test cases, want 4", len(s.Cases))
	}
	for i, c := range s.Cases {
		j := r.Jobs[i]
		if c.Name != j.Name || c.Classname == "" {
			t.Errorf("case %d: name %q classname %q", i, c.Name, c.Classname)
		}
		if secs, err := strconv.ParseFloat(c.Time, 64); err != nil || secs != float64(j.DurationMS)/1000 {
			t.Errorf("case %s: time %q, want %g seconds", j.Name, c.Time, float64(j.DurationMS)/1000)
		}
		switch j.Status {
		case StatusSucceeded:
			if c.Failure != nil || c.Skipped != nil {
				t.Errorf("succeeded job %s has failure or skipped", j.Name)
			}
		case StatusFailed, StatusInterrupted:
			if c.Failure == nil {
				t.Fatalf("%s job %s has no failure", j.Status, j.Name)
			}
			if c.Failure.Type != j.Reason || !strings.HasPrefix(c.Failure.Message, j.Reason+": ") {
				t.Errorf("failure of %s: type %q message %q", j.Name, c.Failure.Type, c.Failure.Message)
			}
			if !strings.Contains(c.Failure.Text, "status: "+j.Status) {
				t.Errorf("failure body of %s lacks the facts:\n%s", j.Name, c.Failure.Text)
			}
		case StatusSkipped:
			if c.Skipped == nil || !strings.Contains(c.Skipped.Message, "budget") {
				t.Errorf("skipped job %s: %+v", j.Name, c.Skipped)
			}
		}
		if (j.Result != "") != (c.SystemOut != nil) {
			t.Errorf("job %s: result %q but system-out %v", j.Name, j.Result, c.SystemOut)
		}
	}
	got := *s.Cases[1].SystemOut
	for _, want := range []string{"Error: build failed ✗ 🚀", "link ]]> <tag attr=\"x\"> & done", "ctl:  end", "nonchars:  ok\t| pipe"} {
		if !strings.Contains(got, want) {
			t.Errorf("system-out lacks %q:\n%q", want, got)
		}
	}
	if !strings.Contains(s.Cases[1].Failure.Message, "Reached maximum number of turns (20) …") {
		t.Errorf("failure message is not the error's first line: %q", s.Cases[1].Failure.Message)
	}
}

func TestJUnitTruncatesHugeText(t *testing.T) {
	r := mixedReport()
	r.Jobs[0].Result = strings.Repeat("é", junitTextMax)
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, r); err != nil {
		t.Fatal(err)
	}
	if buf.Len() > 2*junitTextMax {
		t.Errorf("JUnit file is %d bytes for a %d byte result", buf.Len(), len(r.Jobs[0].Result))
	}
	if !utf8.Valid(buf.Bytes()) || !strings.Contains(buf.String(), "(truncated; see report.json)") {
		t.Error("truncated text is not valid UTF-8 or lacks the note")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, os.ErrClosed }

func TestWritersReportWriteErrors(t *testing.T) {
	r := mixedReport()
	if err := WriteJUnit(failWriter{}, r); err == nil {
		t.Error("WriteJUnit ignored a write error")
	}
	if err := WriteMarkdown(failWriter{}, r, MarkdownOptions{}); err == nil {
		t.Error("WriteMarkdown ignored a write error")
	}
	if err := Table(failWriter{}, r); err == nil {
		t.Error("Table ignored a write error")
	}
	if err := GitHubAnnotations(failWriter{}, r); err == nil {
		t.Error("GitHubAnnotations ignored a write error")
	}
}

// Each test case carries the job's facts as properties, the ones a job has.
func TestJUnitCaseProperties(t *testing.T) {
	r := mixedReport()
	r.Jobs[0].PRURL = "https://github.com/o/r/pull/7"
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, r); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cases []struct {
			Name  string `xml:"name,attr"`
			Props []struct {
				Name  string `xml:"name,attr"`
				Value string `xml:"value,attr"`
			} `xml:"properties>property"`
		} `xml:"testsuite>testcase"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]string{
		"lint": {"cost_usd": "0.012375", "tokens": "6580", "turns": "3", "model": "claude-opus-4-8",
			"session_id": "0b5c8e0e-1111-4a7e-9a50-000000000001", "branch": "pneuma/20261122-130000-ab12/lint",
			"pr_url": "https://github.com/o/r/pull/7"},
		"docs": {"cost_usd": "0", "tokens": "0", "turns": "0"},
	}
	for _, c := range doc.Cases {
		w, ok := want[c.Name]
		if !ok {
			continue
		}
		got := map[string]string{}
		for _, p := range c.Props {
			got[p.Name] = p.Value
		}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("case %s properties\n got %v\nwant %v", c.Name, got, w)
		}
		delete(want, c.Name)
	}
	if len(want) != 0 {
		t.Errorf("cases not found: %v", want)
	}
}
