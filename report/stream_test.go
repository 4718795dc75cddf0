package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// bigJob is job i of a generated run: one in a hundred failed.
func bigJob(i int) Job {
	j := Job{Name: fmt.Sprintf("job-%05d", i+1), Position: i, Status: StatusSucceeded, SessionID: "0e9c5f7e-2b7a-4d43-9d0c-6f3c1d1b2a10",
		Model: "claude-sonnet-4-5", CostUSD: 0.001, Usage: Usage{InputTokens: 10, OutputTokens: 2}, NumTurns: 1, DurationMS: 900,
		Result: "ok", Repo: "/repo", Base: "HEAD", Branch: "pneuma/run/" + fmt.Sprint(i), Worktree: "/repo/.pneuma/worktrees/run/" + fmt.Sprint(i),
		Stream: "/repo/.pneuma/runs/run/jobs/" + fmt.Sprint(i) + "/stream.jsonl", PermissionDenials: []PermissionDenial{}}
	if i%100 == 99 {
		j.Status, j.Reason, j.Error = StatusFailed, ReasonExecution, "error_during_execution"
	}
	return j
}

// bigReport is a streamed report of n generated jobs: they are made as
// they are walked, never held.
func bigReport(n int) *Report {
	start := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	head := Report{Schema: Schema, RunID: "20261127-000000-scal", StartedAt: start, FinishedAt: start.Add(47 * time.Second)}
	for i := range n {
		j := bigJob(i)
		head.Totals.Add(&j)
	}
	head.Status = head.Totals.RunStatus(false)
	return Streamed(head, func(fn func(*Job) error) error {
		for i := range n {
			j := bigJob(i)
			if err := fn(&j); err != nil {
				return err
			}
		}
		return nil
	})
}

// TestStreamedReportOf10kJobsValidates: a report of 10,000 jobs written
// one job at a time is the document Encode makes of it in memory, valid
// against the schema, and read back job by job.
func TestStreamedReportOf10kJobsValidates(t *testing.T) {
	const n = 10000
	rep := bigReport(n)
	path := filepath.Join(t.TempDir(), "report.json")
	if err := WriteJSON(path, rep); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(data); err != nil {
		t.Fatalf("a streamed report of %d jobs does not validate: %v", n, err)
	}
	loaded, err := rep.Load()
	if err != nil {
		t.Fatal(err)
	}
	whole, err := Encode(loaded)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(whole, data) {
		t.Error("the streamed report.json differs from Encode of the same report in memory")
	}
	opened, err := OpenJSON(path)
	if err != nil {
		t.Fatal(err)
	}
	if opened.Totals != rep.Totals || opened.RunID != rep.RunID || !opened.IsStreamed() {
		t.Errorf("OpenJSON: totals %+v, run %q", opened.Totals, opened.RunID)
	}
	seen := 0
	err = opened.EachJob(func(j *Job) error {
		if want := bigJob(seen); j.Name != want.Name || j.Status != want.Status {
			return fmt.Errorf("job %d is %s %s, want %s %s", seen, j.Name, j.Status, want.Name, want.Status)
		}
		seen++
		return nil
	})
	if err != nil || seen != n {
		t.Errorf("walked %d of %d jobs: %v", seen, n, err)
	}
}

// TestStreamedOutputsMatchInMemory: JUnit, the table, the Markdown summary
// and the annotations of a streamed report are those of the same report
// in memory.
func TestStreamedOutputsMatchInMemory(t *testing.T) {
	rep := bigReport(1000)
	loaded, err := rep.Load()
	if err != nil {
		t.Fatal(err)
	}
	for name, write := range map[string]func(*bytes.Buffer, *Report) error{
		"junit": func(b *bytes.Buffer, r *Report) error { return WriteJUnit(b, r) },
		"table": func(b *bytes.Buffer, r *Report) error { return Table(b, r) },
		"markdown": func(b *bytes.Buffer, r *Report) error {
			return WriteMarkdown(b, r, MarkdownOptions{MaxBytes: 64 << 10})
		},
		"annotations": func(b *bytes.Buffer, r *Report) error { return GitHubAnnotations(b, r) },
		"compact":     func(b *bytes.Buffer, r *Report) error { return EncodeTo(b, r, false) },
	} {
		var a, b bytes.Buffer
		if err := write(&a, rep); err != nil {
			t.Fatalf("%s of the streamed report: %v", name, err)
		}
		if err := write(&b, loaded); err != nil {
			t.Fatalf("%s of the report in memory: %v", name, err)
		}
		if a.String() != b.String() {
			t.Errorf("%s differs between the streamed report and the same in memory", name)
		}
		if a.Len() == 0 {
			t.Errorf("%s is empty", name)
		}
	}
	var ann bytes.Buffer
	_ = GitHubAnnotations(&ann, rep)
	if got := strings.Count(ann.String(), "::error "); got != maxAnnotations {
		t.Errorf("%d error annotations for 10 failures, want %d", got, maxAnnotations)
	}
}

// TestWriteJSONOf10kJobsInBoundedMemory: writing a streamed report of
// 10,000 jobs allocates no more than a small part of what the report
// would take in memory (about 1 KB a job).
func TestWriteJSONOf10kJobsInBoundedMemory(t *testing.T) {
	rep := bigReport(10000)
	path := filepath.Join(t.TempDir(), "report.json")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if err := WriteJSON(path, rep); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	// Live heap after the write (HeapAlloc includes garbage not yet
	// collected, so it is an upper bound of what the writer held).
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 12<<20 {
		t.Errorf("the heap grew by %d KB while writing a streamed report of 10,000 jobs", grew>>10)
	}
}

// TestMergeOfTenStreamedShards: ten shards of 1,000 jobs on disk merge
// into the report of the whole run, walked from the files one job per
// shard at a time, in position order, with the unsharded totals.
func TestMergeOfTenStreamedShards(t *testing.T) {
	const shards, n = 10, 10000
	dir := t.TempDir()
	whole, err := bigReport(n).Load()
	if err != nil {
		t.Fatal(err)
	}
	var inputs []*Report
	for s := range shards {
		part := Report{Schema: Schema, RunID: fmt.Sprintf("%s-%d", whole.RunID, s+1), StartedAt: whole.StartedAt,
			FinishedAt: whole.FinishedAt, Shard: &Shard{Index: s + 1, Total: shards}}
		for i := s; i < n; i += shards {
			part.Jobs = append(part.Jobs, whole.Jobs[i])
		}
		part.Tally(false)
		path := filepath.Join(dir, fmt.Sprintf("shard-%d.json", s+1))
		if err := WriteJSON(path, &part); err != nil {
			t.Fatal(err)
		}
		r, err := OpenJSON(path)
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, r)
	}
	merged, err := Merge(inputs...)
	if err != nil {
		t.Fatal(err)
	}
	if !merged.IsStreamed() {
		t.Error("a merge of reports on disk holds their jobs in memory")
	}
	if merged.Totals != whole.Totals || merged.Status != whole.Status {
		t.Errorf("merged totals %+v %s, want %+v %s", merged.Totals, merged.Status, whole.Totals, whole.Status)
	}
	next := 0
	err = merged.EachJob(func(j *Job) error {
		if j.Position != next {
			return fmt.Errorf("job %s at place %d has position %d", j.Name, next, j.Position)
		}
		next++
		return nil
	})
	if err != nil || next != n {
		t.Fatalf("walked %d of %d jobs: %v", next, n, err)
	}
	path := filepath.Join(dir, "merged.json")
	if err := WriteJSON(path, merged); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(data); err != nil {
		t.Errorf("the merged report of %d jobs does not validate: %v", n, err)
	}
}

// encodedSource is the encoded source of jobs: each job as json.Marshal
// makes it, as the runner's result store holds it.
func encodedSource(t *testing.T, jobs []Job) EncodedJobSource {
	t.Helper()
	data := make([][]byte, len(jobs))
	for i := range jobs {
		var err error
		if data[i], err = json.Marshal(&jobs[i]); err != nil {
			t.Fatal(err)
		}
	}
	return func(fn func([]byte) error) error {
		for _, d := range data {
			if err := fn(d); err != nil {
				return err
			}
		}
		return nil
	}
}

// TestStreamedEncodedWritesTheSameBytes: a report whose jobs come already
// encoded is written, indented and compact, byte for byte as the same
// report in memory (markup, control characters, bad UTF-8 and all), and
// every other writer still walks its jobs.
func TestStreamedEncodedWritesTheSameBytes(t *testing.T) {
	mem := mixedReport()
	head := *mem
	head.Jobs = nil
	rep := StreamedEncoded(head, func(fn func(*Job) error) error {
		for i := range mem.Jobs {
			if err := fn(&mem.Jobs[i]); err != nil {
				return err
			}
		}
		return nil
	}, encodedSource(t, mem.Jobs))
	want := validJSON(t, mem)
	got, err := Encode(rep)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("report.json from encoded jobs differs from Encode of the report in memory:\n%s\nwant:\n%s", got, want)
	}
	var a, b bytes.Buffer
	if err := EncodeTo(&a, rep, false); err != nil {
		t.Fatal(err)
	}
	if err := EncodeTo(&b, mem, false); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Errorf("compact JSON from encoded jobs differs:\n%s\nwant:\n%s", a.String(), b.String())
	}
	loaded, err := rep.Load()
	if err != nil || len(loaded.Jobs) != len(mem.Jobs) {
		t.Fatalf("Load: %d jobs, %v", len(loaded.Jobs), err)
	}
	if got, err := Encode(loaded); err != nil || !bytes.Equal(got, want) {
		t.Errorf("the loaded report encodes differently (%v)", err)
	}
	// A head made from it by Streamed has no jobs, encoded or not.
	empty := Streamed(*rep, func(func(*Job) error) error { return nil })
	var c bytes.Buffer
	if err := EncodeTo(&c, empty, false); err != nil || !strings.Contains(c.String(), `"jobs":[]`) {
		t.Errorf("Streamed of an encoded report kept its encoded jobs: %s (%v)", c.String(), err)
	}
}

// TestWriteJSONOfEncodedJobsAllocatesLittle: writing 10,000 jobs that come
// encoded allocates the writer's buffers, not a decoded and re-encoded
// copy of every job (which made the end of a 10,000-job run the peak of
// its memory, issue 27).
func TestWriteJSONOfEncodedJobsAllocatesLittle(t *testing.T) {
	const n = 10000
	full := bigReport(n)
	head := *full
	jobs := make([]Job, n)
	for i := range jobs {
		jobs[i] = bigJob(i)
	}
	rep := StreamedEncoded(head, func(func(*Job) error) error { return errors.New("walked, not copied") }, encodedSource(t, jobs))
	path := filepath.Join(t.TempDir(), "report.json")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := WriteJSON(path, rep); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("writing %d encoded jobs allocated %d KB", n, got>>10)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := full.Load()
	if err != nil {
		t.Fatal(err)
	}
	want, err := Encode(loaded)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, want) {
		t.Error("report.json of encoded jobs differs from Encode of the same jobs in memory")
	}
}

// TestEachEncodedJobIsMarshalOfEachJob: every kind of report gives its
// jobs to EachEncodedJob as json.Marshal encodes them: a report file's
// (StreamFile: compacted from the file, not decoded), an encoded
// source's, and one in memory; a walk stops at fn's error.
func TestEachEncodedJobIsMarshalOfEachJob(t *testing.T) {
	mem := mixedReport()
	mem.Jobs[0].Result = `<b>"quoted" & 'escaped'</b>` + "\n\ttabbed é"
	var want []string
	for i := range mem.Jobs {
		data, err := json.Marshal(&mem.Jobs[i])
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, string(data))
	}
	path := filepath.Join(t.TempDir(), "report.json")
	if err := WriteJSON(path, mem); err != nil {
		t.Fatal(err)
	}
	head := *mem
	head.Jobs = nil
	reports := map[string]*Report{
		"file":      StreamFile(head, path),
		"encoded":   StreamedEncoded(head, func(func(*Job) error) error { return errors.New("decoded") }, encodedSource(t, mem.Jobs)),
		"in memory": mem,
	}
	for name, rep := range reports {
		var got []string
		if err := rep.EachEncodedJob(func(data []byte) error { got = append(got, string(data)); return nil }); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: jobs\n%s\nwant\n%s", name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		stop := errors.New("stop")
		n := 0
		if err := rep.EachEncodedJob(func([]byte) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
			t.Errorf("%s: a walk that fn stops: %d jobs, %v", name, n, err)
		}
	}
	// The file's jobs as written, not decoded: a member this pneuma does
	// not know stays.
	if err := os.WriteFile(path, []byte(`{"schema":"x","jobs":[ {"name": "a", "later": [1, 2]} ]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := reports["file"].EachEncodedJob(func(data []byte) error { got = append(got, string(data)); return nil }); err != nil ||
		len(got) != 1 || got[0] != `{"name":"a","later":[1,2]}` {
		t.Errorf("a report file's job: %q, %v; want it compacted as written", got, err)
	}
	if err := os.WriteFile(path, []byte(`{"schema":"x","jobs":[{"name":"a"},{"name":`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := reports["file"].EachEncodedJob(func([]byte) error { return nil }); err == nil || !strings.Contains(err.Error(), "jobs[1]") {
		t.Errorf("a torn report file: %v, want an error naming jobs[1]", err)
	}
}

// TestEncodeToOfReportFileCopiesItsJobs: a finished run's report read from
// its file (what --json's run_finished streams) is encoded with each job
// copied as written: the same bytes as the report in memory, and no
// decoded and re-encoded copy of each job (22 MB of garbage at the end of
// a 10,000-job run, its peak RSS).
func TestEncodeToOfReportFileCopiesItsJobs(t *testing.T) {
	const n = 10000
	path := filepath.Join(t.TempDir(), "report.json")
	if err := WriteJSON(path, bigReport(n)); err != nil {
		t.Fatal(err)
	}
	rep, err := OpenJSON(path)
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := rep.Load()
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := EncodeTo(&want, loaded, false); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	got.Grow(want.Len() + 1<<10)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := EncodeTo(&got, rep, false); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Error("the report file's compact JSON differs from that of the same report in memory")
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("encoding %d jobs from the report file allocated %d KB", n, alloc>>10)
	}
}
