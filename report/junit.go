package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// junitTextMax bounds the text of one system-out or failure body: CI
// consumers load the whole file into memory, and report.json keeps the rest.
const junitTextMax = 256 << 10

// The JUnit XML shape: the Jenkins/Ant junit-10.xsd (report/testdata), which
// GitHub test reporters, GitLab and Jenkins all read.
type (
	// <testsuites> and its one <testsuite> are written as tokens around
	// the cases (WriteJUnit), with these attributes: testsuites name,
	// tests, failures, errors, time; testsuite name, tests, failures,
	// errors, skipped, time, timestamp.
	junitPropsList struct {
		Props []junitProp `xml:"property"`
	}
	junitProp struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	}
	junitCase struct {
		Name       string          `xml:"name,attr"`
		Classname  string          `xml:"classname,attr"`
		Time       string          `xml:"time,attr"`
		Properties *junitPropsList `xml:"properties,omitempty"`
		Skipped    *junitSkipped   `xml:"skipped"`
		Failure    *junitFailure   `xml:"failure"`
		SystemOut  *junitText      `xml:"system-out"`
	}
	junitSkipped struct {
		Message string `xml:"message,attr,omitempty"`
	}
	junitFailure struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",cdata"`
	}
	// CDATA keeps multi-line output readable in the raw file; encoding/xml
	// splits a "]]>" in the text across two sections.
	junitText struct {
		Text string `xml:",cdata"`
	}
)

// WriteJUnit writes r as JUnit XML: one test suite for the run, one test case
// per job with its time in seconds and its properties (caseProps), a failure carrying the reason and error
// for failed and interrupted jobs, skipped for skipped ones, and the job's
// final result text in system-out. Text is cleaned of ANSI escapes and of
// characters XML forbids.
func WriteJUnit(w io.Writer, r *Report) error {
	// The counts go in the opening tags: a first walk counts, the second
	// writes one test case at a time (a streamed report's jobs are read
	// from disk, never all held at once).
	var tests, failures, skipped int
	if err := r.EachJob(func(j *Job) error {
		tests++
		switch j.Status {
		case StatusFailed, StatusInterrupted:
			failures++
		case StatusSkipped:
			skipped++
		}
		return nil
	}); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	dur := seconds(runDuration(r))
	suite := []xml.Attr{attr("name", suiteName(r)), attr("tests", strconv.Itoa(tests)), attr("failures", strconv.Itoa(failures)),
		attr("errors", "0"), attr("skipped", strconv.Itoa(skipped)), attr("time", dur)}
	if !r.StartedAt.IsZero() {
		suite = append(suite, attr("timestamp", r.StartedAt.UTC().Format("2006-01-02T15:04:05Z")))
	}
	props := []junitProp{{"run_id", r.RunID}, {"status", r.Status}, {"cost_usd", plainUSD(r.Totals.CostUSD)}}
	if r.Shard != nil {
		props = append(props, junitProp{"shard", fmt.Sprintf("%d/%d", r.Shard.Index, r.Shard.Total)})
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	suites := xml.StartElement{Name: xml.Name{Local: "testsuites"}, Attr: []xml.Attr{attr("name", "pneuma"),
		attr("tests", strconv.Itoa(tests)), attr("failures", strconv.Itoa(failures)), attr("errors", "0"), attr("time", dur)}}
	one := xml.StartElement{Name: xml.Name{Local: "testsuite"}, Attr: suite}
	err := enc.EncodeToken(suites)
	if err == nil {
		err = enc.EncodeToken(one)
	}
	if err == nil {
		err = enc.EncodeElement(junitPropsList{Props: cleanProps(props)}, xml.StartElement{Name: xml.Name{Local: "properties"}})
	}
	if err == nil {
		err = r.EachJob(func(j *Job) error {
			return enc.EncodeElement(junitCaseOf(*j), xml.StartElement{Name: xml.Name{Local: "testcase"}})
		})
	}
	if err == nil {
		err = enc.EncodeToken(one.End())
	}
	if err == nil {
		err = enc.EncodeToken(suites.End())
	}
	if err == nil {
		err = enc.Flush()
	}
	if err == nil {
		_, err = io.WriteString(w, "\n")
	}
	if err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	return nil
}

func attr(name, value string) xml.Attr { return xml.Attr{Name: xml.Name{Local: name}, Value: value} }

// junitCaseOf is a job's test case.
func junitCaseOf(j Job) junitCase {
	c := junitCase{
		Name:       CleanText(j.Name),
		Classname:  "pneuma",
		Time:       seconds(time.Duration(j.DurationMS) * time.Millisecond),
		Properties: &junitPropsList{Props: caseProps(j)},
	}
	switch j.Status {
	case StatusFailed, StatusInterrupted:
		c.Failure = &junitFailure{
			Message: CleanText(failureMessage(j)),
			Type:    orDefault(j.Reason, j.Status),
			Text:    truncate(CleanText(failureDetails(j)), junitTextMax, "\n… (truncated; see report.json)"),
		}
	case StatusSkipped:
		c.Skipped = &junitSkipped{Message: CleanText(skipMessage(j))}
	}
	if j.Result != "" {
		c.SystemOut = &junitText{Text: truncate(CleanText(j.Result), junitTextMax, "\n… (truncated; see report.json)")}
	}
	return c
}

func suiteName(r *Report) string {
	name := "pneuma run"
	if r.RunID != "" {
		name += " " + r.RunID
	}
	if r.Shard != nil {
		name += fmt.Sprintf(" (shard %d/%d)", r.Shard.Index, r.Shard.Total)
	}
	return CleanText(name)
}

// caseProps are a job's facts as test case properties, which the Jenkins
// JUnit plugin and GitHub test-report actions show next to the case (the
// form pytest's record_property writes): cost, tokens and turns always, the
// rest when known.
func caseProps(j Job) []junitProp {
	props := []junitProp{
		{"cost_usd", plainUSD(j.CostUSD)},
		{"tokens", strconv.FormatInt(j.Usage.Total(), 10)},
		{"turns", strconv.Itoa(j.NumTurns)},
	}
	for _, p := range []junitProp{{"model", j.Model}, {"session_id", j.SessionID}, {"branch", j.Branch}, {"pr_url", j.PRURL}} {
		if p.Value != "" {
			props = append(props, p)
		}
	}
	return cleanProps(props)
}

// plainUSD is an amount of US dollars as a plain decimal ("0.012375"), for
// the machines that read properties.
func plainUSD(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func cleanProps(props []junitProp) []junitProp {
	for i := range props {
		props[i].Value = CleanText(props[i].Value)
	}
	return props
}

// failureMessage is the one line a test reporter shows for a failed job.
func failureMessage(j Job) string {
	msg := orDefault(j.Reason, j.Status)
	if e := firstLine(j.Error); e != "" {
		msg += ": " + e
	}
	return msg
}

func skipMessage(j Job) string {
	msg := "skipped"
	if j.Reason != "" {
		msg += " (" + j.Reason + ")"
	}
	if e := firstLine(j.Error); e != "" {
		msg += ": " + e
	}
	return msg
}

// failureDetails is the body of a failure: the whole error, then the facts
// that help find out what happened.
func failureDetails(j Job) string {
	var b strings.Builder
	if j.Error != "" {
		b.WriteString(j.Error)
		b.WriteString("\n\n")
	}
	fact := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "%s: %s\n", k, v)
		}
	}
	fact("status", j.Status)
	fact("reason", j.Reason)
	fact("exit code", strconv.Itoa(j.ExitCode))
	fact("session", j.SessionID)
	fact("branch", j.Branch)
	fact("worktree", j.Worktree)
	fact("transcript", j.Transcript)
	fact("stream", j.Stream)
	if len(j.Attempts) > 1 {
		fact("attempts", strconv.Itoa(len(j.Attempts)))
	}
	return strings.TrimRight(b.String(), "\n")
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		return strings.TrimSpace(s[:i]) + " …"
	}
	return s
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// seconds formats d as JUnit wants it: decimal seconds.
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 3, 64)
}

// runDuration is the run's wall-clock time, or the sum of its jobs' times
// when the run's start or end is unknown.
func runDuration(r *Report) time.Duration {
	if !r.StartedAt.IsZero() && !r.FinishedAt.IsZero() && !r.FinishedAt.Before(r.StartedAt) {
		return r.FinishedAt.Sub(r.StartedAt)
	}
	return time.Duration(r.Totals.DurationMS) * time.Millisecond
}
