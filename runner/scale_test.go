package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pneuma-cli/pneuma/jobfile"
	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/worktree"
)

// scaleJobs is the size of the scale benchmarks (issue 27).
const scaleJobs = 10000

// bigJobsFile is a jobs file of n jobs.
func bigJobsFile(n int) []byte {
	var b strings.Builder
	b.WriteString("version: 1\nconcurrency: 30\njobs:\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "  - name: job-%05d\n    prompt: \"job %d: reply ok\"\n", i, i)
	}
	return []byte(b.String())
}

// BenchmarkBuildPlan10k plans 10,000 jobs in one repository: the
// repository and its base are checked once, not once per job.
func BenchmarkBuildPlan10k(b *testing.B) {
	dir := scaleRepo(b)
	path := filepath.Join(dir, "jobs.yaml")
	if err := os.WriteFile(path, bigJobsFile(scaleJobs), 0o644); err != nil {
		b.Fatal(err)
	}
	f, err := jobfile.Read(path)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := BuildPlan(context.Background(), f, PlanOptions{Binary: "claude", Git: worktree.New()}); err != nil {
			b.Fatal(err)
		}
	}
}

// scaleRepo is a git repository with one commit.
func scaleRepo(tb testing.TB) string {
	dir := tb.TempDir()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"-c", "user.name=t", "-c", "user.email=t@pneuma.invalid", "commit", "-q", "--allow-empty", "-m", "x"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			tb.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

// killedJournal leaves in dir the journal of a run of n jobs that was
// killed when every job but the last tenth had finished (one in a hundred
// failed): run.json from its start and a log of n*9/10 finished states.
func killedJournal(tb testing.TB, dir string, n int) *Plan {
	p := &Plan{RunID: "20261127-000000-scal", RunDir: dir, Concurrency: 30}
	for i := range n {
		name := fmt.Sprintf("job-%05d", i+1)
		p.Jobs = append(p.Jobs, &Job{Name: name, Position: i, Prompts: []string{"job: reply ok"}, Repo: "/repo",
			Branch: "pneuma/" + p.RunID + "/" + name, Dir: "/repo/.pneuma/worktrees/" + p.RunID + "/" + name})
	}
	j, err := openJournal(p, nil)
	if err != nil {
		tb.Fatal(err)
	}
	j.startWriter()
	for i, job := range p.Jobs[:n*9/10] {
		res := &report.Job{Name: job.Name, Position: i, Status: report.StatusSucceeded, SessionID: "0e9c5f7e-2b7a-4d43-9d0c-6f3c1d1b2a10",
			CostUSD: 0.001, NumTurns: 1, DurationMS: 900, Repo: job.Repo, Branch: job.Branch, Worktree: job.Dir, Result: "ok",
			Stream: dir + "/jobs/" + job.Name + "/stream.jsonl", PermissionDenials: []report.PermissionDenial{}}
		if i%100 == 99 {
			res.Status, res.Reason, res.Error = report.StatusFailed, report.ReasonExecution, "error_during_execution"
		}
		j.update(job.Name, func(s *JobState) { s.State, s.Result = StateFinished, res })
		if err := j.sync(); err != nil {
			tb.Fatal(err)
		}
	}
	j.stopWriter() // killed: no final save
	return p
}

// BenchmarkResumeReplay10k is what --resume of a killed run of 10,000 jobs
// does before its first job can start: read run.json, replay the log of
// 9,000 finished jobs, write the new run.json and move the finished
// results to the store (issue 27: within a second).
func BenchmarkResumeReplay10k(b *testing.B) {
	dir := b.TempDir()
	killedJournal(b, dir, scaleJobs)
	for b.Loop() {
		prior, err := ReadJournal(dir)
		if err != nil {
			b.Fatal(err)
		}
		j, err := openJournal(prior.Plan, prior)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := j.storeResults(RunDir(dir).Results()); err != nil {
			b.Fatal(err)
		}
		j.closeResults()
		// the next iteration replays the same log again
		b.StopTimer()
		killedJournal(b, dir, scaleJobs)
		b.StartTimer()
	}
}

// TestResumeKeepsStoredResults: the results of a resumed run's finished
// jobs move to the store and come back, whole and in plan order, in the
// final run.json, and a second replay reads the same.
func TestResumeKeepsStoredResults(t *testing.T) {
	dir := t.TempDir()
	const n = 300
	killedJournal(t, dir, n)
	prior, err := ReadJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	j, err := openJournal(prior.Plan, prior)
	if err != nil {
		t.Fatal(err)
	}
	carried, err := j.storeResults(RunDir(dir).Results())
	if err != nil {
		t.Fatal(err)
	}
	if carried.Jobs != n*9/10 || carried.Failed != n*9/10/100 {
		t.Errorf("carried totals %+v, want %d jobs, %d failed", carried, n*9/10, n*9/10/100)
	}
	for _, s := range j.Jobs {
		if s.Result != nil {
			t.Fatalf("job %s keeps its result in memory", s.Name)
		}
	}
	var names []string
	if err := j.eachResult(func(r *report.Job) error { names = append(names, r.Name); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(names) != n*9/10 || names[0] != "job-00001" || names[len(names)-1] != fmt.Sprintf("job-%05d", n*9/10) {
		t.Errorf("eachResult gave %d results, %v ... ", len(names), names[:min(3, len(names))])
	}
	if err := j.save(); err != nil {
		t.Fatal(err)
	}
	j.closeResults()
	if _, err := os.Stat(RunDir(dir).Results()); !os.IsNotExist(err) {
		t.Errorf("results.jsonl is still there after close: %v", err)
	}
	again, err := ReadJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	done := 0
	for i, s := range again.Jobs {
		if s.Done() {
			done++
			if s.Result == nil || s.Result.Name != s.Name || s.Result.Position != i {
				t.Fatalf("run.json state %d: result %+v", i, s.Result)
			}
		}
	}
	if len(again.Plan.Jobs) != n || again.Plan.Jobs[n-1].Name != fmt.Sprintf("job-%05d", n) {
		t.Errorf("run.json's plan has %d jobs", len(again.Plan.Jobs))
	}
	if done != n*9/10 {
		t.Errorf("run.json has %d finished jobs, want %d", done, n*9/10)
	}
}

// TestUnsucceededReadsWhatRerunNeeds: --rerun-failed's slim reading of a
// killed run's journal (run.json and its log) names the jobs that failed
// and those that never finished, in plan order: what the whole journal says.
func TestUnsucceededReadsWhatRerunNeeds(t *testing.T) {
	dir := t.TempDir()
	const n = 300
	killedJournal(t, dir, n)
	got, err := unsucceeded(dir)
	if err != nil {
		t.Fatal(err)
	}
	j, err := ReadJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, s := range j.Jobs {
		if s.Result == nil || s.Result.Status != report.StatusSucceeded {
			want = append(want, s.Name)
		}
	}
	if len(want) != 2+n/10 {
		t.Fatalf("the fixture has %d unsucceeded jobs, want %d", len(want), 2+n/10)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("unsucceeded = %v\nwant %v", got, want)
	}
	if _, err := unsucceeded(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no run journal") {
		t.Errorf("a directory without run.json: %v", err)
	}
}

// endedJournal leaves in dir the journal of a run of n jobs that ended
// (one in a hundred failed, the last one too): killedJournal's, resumed
// and finished, its first results through the store, the last tenth in
// memory. It returns the names of the jobs that did not succeed.
func endedJournal(tb testing.TB, dir string, n int) []string {
	p := killedJournal(tb, dir, n)
	prior, err := ReadJournal(dir)
	if err != nil {
		tb.Fatal(err)
	}
	j, err := openJournal(p, prior)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := j.storeResults(RunDir(dir).Results()); err != nil {
		tb.Fatal(err)
	}
	defer j.closeResults()
	var failed []string
	for i, job := range p.Jobs {
		if i < n*9/10 {
			if i%100 == 99 {
				failed = append(failed, job.Name)
			}
			continue
		}
		res := &report.Job{Name: job.Name, Position: i, Status: report.StatusSucceeded}
		if i == n-1 {
			res.Status = report.StatusFailed
			failed = append(failed, job.Name)
		}
		j.update(job.Name, func(s *JobState) { s.State, s.Result = StateFinished, res })
	}
	j.finish("failed")
	if err := j.save(); err != nil {
		tb.Fatal(err)
	}
	return failed
}

// TestUnsucceededOfAnEndedRunReadsItsList: a run that ended lists its
// jobs that did not succeed ahead of its plan in run.json (results in
// memory and in the store alike), and --rerun-failed reads that list and
// nothing after it: the same names as the whole journal says.
func TestUnsucceededOfAnEndedRunReadsItsList(t *testing.T) {
	dir := t.TempDir()
	const n = 300
	want := endedJournal(t, dir, n)
	whole, err := ReadJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	var says []string
	for _, s := range whole.Jobs {
		if s.Result == nil || s.Result.Status != report.StatusSucceeded {
			says = append(says, s.Name)
		}
	}
	if strings.Join(says, ",") != strings.Join(want, ",") {
		t.Fatalf("the journal says %v did not succeed, the fixture %v", says, want)
	}
	data, err := os.ReadFile(JournalPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	// Cut run.json where its plan begins: the list is all that is read.
	at := strings.Index(string(data), `"plan":`)
	if at < 0 || !strings.Contains(string(data[:at]), `"not_succeeded":[`) {
		t.Fatalf("run.json does not list the jobs that did not succeed ahead of its plan: %.300s", data)
	}
	if err := os.WriteFile(JournalPath(dir), append(data[:at+len(`"plan":`)], "cut"...), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := unsucceeded(dir)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("unsucceeded = %v\nwant %v", got, want)
	}
}

// firstJobRepo is a repository with a jobs file of n jobs and, in its
// .pneuma/runs, run runID's journal as fixture leaves it.
func firstJobRepo(b *testing.B, n int, runID string, fixture func(testing.TB, string, int)) (repo, jobsFile string) {
	repo = scaleRepo(b)
	jobsFile = filepath.Join(repo, "jobs.yaml")
	if err := os.WriteFile(jobsFile, bigJobsFile(n), 0o644); err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(repo, ".pneuma", "runs", runID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	fixture(b, dir, n)
	return repo, jobsFile
}

// BenchmarkRerunFailedToFirstJob10k is what --rerun-failed of a run of
// 10,000 jobs that ended does before its first job can start: decode
// the jobs file, read which jobs did not succeed, plan them and write the
// new run's journal (issue 27: within a second).
func BenchmarkRerunFailedToFirstJob10k(b *testing.B) {
	_, jobsFile := firstJobRepo(b, scaleJobs, "20261127-000000-scal", func(tb testing.TB, dir string, n int) { endedJournal(tb, dir, n) })
	for b.Loop() {
		f, err := jobfile.Read(jobsFile)
		if err != nil {
			b.Fatal(err)
		}
		p, err := RerunPlan(context.Background(), f, PlanOptions{Binary: "claude", Git: worktree.New()}, "20261127-000000-scal")
		if err != nil {
			b.Fatal(err)
		}
		if len(p.Jobs) != scaleJobs*9/10/100+1 {
			b.Fatalf("rerun plans %d jobs", len(p.Jobs))
		}
		if err := os.MkdirAll(p.RunDir, 0o755); err != nil {
			b.Fatal(err)
		}
		j, err := openJournal(p, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := j.storeResults(RunDir(p.RunDir).Results()); err != nil {
			b.Fatal(err)
		}
		j.closeResults()
	}
}

// BenchmarkResumeToFirstJob10k is what --resume of a killed run of 10,000
// jobs does before its first job can start: decode the jobs file, read
// run.json and replay 9,000 finished states, compare the file with the
// run's plan, write the new run.json and move the results to the store.
func BenchmarkResumeToFirstJob10k(b *testing.B) {
	const runID = "20261127-000000-scal"
	repo, jobsFile := firstJobRepo(b, scaleJobs, runID, func(tb testing.TB, dir string, n int) { killedJournal(tb, dir, n) })
	dir := filepath.Join(repo, ".pneuma", "runs", runID)
	for b.Loop() {
		f, err := jobfile.Read(jobsFile)
		if err != nil {
			b.Fatal(err)
		}
		p, prior, _, err := ResumePlan(context.Background(), f, PlanOptions{Binary: "claude", Git: worktree.New()}, runID)
		if err != nil {
			b.Fatal(err)
		}
		j, err := openJournal(p, prior)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := j.storeResults(RunDir(dir).Results()); err != nil {
			b.Fatal(err)
		}
		j.closeResults()
		b.StopTimer()
		killedJournal(b, dir, scaleJobs) // the next iteration replays the same log again
		b.StartTimer()
	}
}

// TestEachEncodedIsMarshalOfEachResult: the jobs report.json is written
// from are, byte for byte, json.Marshal of each job's result in plan
// order: copied from the store for a job this run finished, encoded again
// for one a resumed run carried as an older run.json had it.
func TestEachEncodedIsMarshalOfEachResult(t *testing.T) {
	dir := t.TempDir()
	const n = 300
	killedJournal(t, dir, n)
	prior, err := ReadJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	j, err := openJournal(prior.Plan, prior)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.storeResults(RunDir(dir).Results()); err != nil {
		t.Fatal(err)
	}
	defer j.closeResults()
	j.startWriter()
	defer j.stopWriter()
	for _, job := range prior.Plan.Jobs[n*9/10 : n*9/10+5] { // finished now: put in the store
		res := &report.Job{Name: job.Name, Position: job.Position, Status: report.StatusFailed, Result: "<b>&</b> \u2028",
			Error: "exit 1\n\x1b[31m", PermissionDenials: []report.PermissionDenial{{ToolName: "Bash", ToolInput: map[string]any{"n": 1e21}}}}
		j.update(job.Name, func(s *JobState) { s.State, s.Result = StateFinished, res })
		if err := j.sync(); err != nil {
			t.Fatal(err)
		}
		if err := j.settle(job.Name); err != nil {
			t.Fatal(err)
		}
		if s := j.state(job.Name); s.Result != nil || !s.stored {
			t.Fatalf("job %s was not moved to the store", job.Name)
		}
	}
	var want, got [][]byte
	err = j.eachResult(func(r *report.Job) error {
		data, err := json.Marshal(r)
		want = append(want, data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.eachEncoded(func(data []byte) error { got = append(got, bytes.Clone(data)); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) || len(want) != n*9/10+5 {
		t.Fatalf("eachEncoded gave %d jobs, eachResult %d, want %d", len(got), len(want), n*9/10+5)
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("job %d encoded as\n%s\nwant\n%s", i, got[i], want[i])
		}
	}
}

// PlannedSlug finds a job's directory name by the job's name in run.json,
// first, last and missing alike, and says when there is no journal.
func TestPlannedSlug(t *testing.T) {
	dir := t.TempDir()
	var plan, states []string
	for i := range 300 {
		plan = append(plan, fmt.Sprintf(`{"name":"job %d","slug":"job-%d","prompts":["p"]}`, i, i))
		states = append(states, fmt.Sprintf(`{"name":"job %d","state":"pending"}`, i))
	}
	journal := `{"schema":"x","status":"running","plan":{"run_id":"r","jobs":[` + strings.Join(plan, ",") +
		`],"concurrency":3},"jobs":[` + strings.Join(states, ",") + `]}`
	if err := os.WriteFile(RunDir(dir).Journal(), []byte(journal), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"job 0": "job-0", "job 299": "job-299", "no such job": ""} {
		if got, err := PlannedSlug(dir, name); err != nil || got != want {
			t.Errorf("PlannedSlug(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
	if _, err := PlannedSlug(t.TempDir(), "x"); err == nil {
		t.Error("PlannedSlug without run.json: no error")
	}
}
