package runner

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/report"
)

func TestParseShard(t *testing.T) {
	tests := []struct {
		in   string
		want Shard
		err  string
	}{
		{"1/1", Shard{1, 1}, ""},
		{"2/4", Shard{2, 4}, ""},
		{"4/4", Shard{4, 4}, ""},
		{"07/10", Shard{7, 10}, ""},
		{"10000/10000", Shard{10000, 10000}, ""},
		{"", Shard{}, "want i/n"},
		{"3", Shard{}, "want i/n"},
		{"0/4", Shard{}, "between 1 and 4"},
		{"5/4", Shard{}, "between 1 and 4"},
		{"1/0", Shard{}, "at least 1"},
		{"-1/4", Shard{}, "not a whole number"},
		{"+1/4", Shard{}, "not a whole number"},
		{" 1/4", Shard{}, "not a whole number"},
		{"1/4/2", Shard{}, "not a whole number"},
		{"1.5/4", Shard{}, "not a whole number"},
		{"/4", Shard{}, "missing number"},
		{"1/", Shard{}, "missing number"},
		{"1/10001", Shard{}, "more than 10000"},
		{"1/99999999999999999999999", Shard{}, "more than 10000"},
	}
	for _, tt := range tests {
		got, err := ParseShard(tt.in)
		if tt.err == "" {
			if err != nil || got != tt.want {
				t.Errorf("ParseShard(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
			if !strings.HasPrefix(tt.in, "0") && got.String() != tt.in {
				t.Errorf("%v.String() = %q, want %q", got, got.String(), tt.in)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), fmt.Sprintf("%q", tt.in)) {
			t.Errorf("ParseShard(%q) error %v; want one quoting the input and saying %q", tt.in, err, tt.err)
		}
	}
}

func FuzzParseShard(f *testing.F) {
	for _, s := range []string{"1/1", "2/4", "0/0", "5/4", "-1/3", "1/", "/", "a/b", "1/10000", "99999999999999999999/1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseShard(in)
		if err != nil {
			if s != (Shard{}) {
				t.Fatalf("ParseShard(%q) returned %v with an error", in, s)
			}
			return
		}
		if s.Index < 1 || s.Index > s.Total || s.Total > maxShards {
			t.Fatalf("ParseShard(%q) = %v, out of range", in, s)
		}
		back, err := ParseShard(s.String())
		if err != nil || back != s {
			t.Fatalf("ParseShard(%q) = %v does not round-trip: %v, %v", in, s, back, err)
		}
	})
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestDetectShard(t *testing.T) {
	tests := []struct {
		name string
		vars map[string]string
		want Shard
		ok   bool
		err  string
	}{
		{"nothing", nil, Shard{}, false, ""},
		{"gitlab without parallel", map[string]string{"CI_NODE_TOTAL": "1"}, Shard{}, false, ""},
		{"gitlab", map[string]string{"CI_NODE_INDEX": "3", "CI_NODE_TOTAL": "5"}, Shard{3, 5}, true, ""},
		{"gitlab 0", map[string]string{"CI_NODE_INDEX": "0", "CI_NODE_TOTAL": "5"}, Shard{}, false, "between 1 and 5"},
		{"gitlab no total", map[string]string{"CI_NODE_INDEX": "1"}, Shard{}, false, "CI_NODE_TOTAL is not"},
		{"buildkite first", map[string]string{"BUILDKITE_PARALLEL_JOB": "0", "BUILDKITE_PARALLEL_JOB_COUNT": "4"}, Shard{1, 4}, true, ""},
		{"buildkite last", map[string]string{"BUILDKITE_PARALLEL_JOB": "3", "BUILDKITE_PARALLEL_JOB_COUNT": "4"}, Shard{4, 4}, true, ""},
		{"buildkite past end", map[string]string{"BUILDKITE_PARALLEL_JOB": "4", "BUILDKITE_PARALLEL_JOB_COUNT": "4"}, Shard{}, false, `BUILDKITE_PARALLEL_JOB="4"`},
		{"kubernetes", map[string]string{"JOB_COMPLETION_INDEX": "0", "PNEUMA_SHARD_TOTAL": "8"}, Shard{1, 8}, true, ""},
		{"kubernetes last", map[string]string{"JOB_COMPLETION_INDEX": "7", "PNEUMA_SHARD_TOTAL": "8"}, Shard{8, 8}, true, ""},
		{"kubernetes without total", map[string]string{"JOB_COMPLETION_INDEX": "2"}, Shard{}, false, "PNEUMA_SHARD_TOTAL is not: set it to the Job's completions"},
		{"total without kubernetes", map[string]string{"PNEUMA_SHARD_TOTAL": "3"}, Shard{}, false, "JOB_COMPLETION_INDEX is not"},
		{"kubernetes total too small", map[string]string{"JOB_COMPLETION_INDEX": "3", "PNEUMA_SHARD_TOTAL": "3"}, Shard{}, false, "between 1 and 3"},
		{"garbage", map[string]string{"CI_NODE_INDEX": "two", "CI_NODE_TOTAL": "5"}, Shard{}, false, `CI_NODE_INDEX="two"`},
		{"agreeing engines", map[string]string{"CI_NODE_INDEX": "2", "CI_NODE_TOTAL": "3", "JOB_COMPLETION_INDEX": "1", "PNEUMA_SHARD_TOTAL": "3"}, Shard{2, 3}, true, ""},
		{"disagreeing engines", map[string]string{"CI_NODE_INDEX": "2", "CI_NODE_TOTAL": "3", "BUILDKITE_PARALLEL_JOB": "0", "BUILDKITE_PARALLEL_JOB_COUNT": "3"}, Shard{}, false, "GitLab CI says shard 2/3 but Buildkite says 1/3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := DetectShard(env(tt.vars))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got %v, %v, %v; want an error containing %q", got, ok, err, tt.err)
				}
				return
			}
			if err != nil || ok != tt.ok || got != tt.want {
				t.Fatalf("got %v, %v, %v; want %v, %v", got, ok, err, tt.want, tt.ok)
			}
		})
	}
}

func jobNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("job-%d", i)
	}
	return names
}

// TestShardsPartitionThePlan checks that for every plan size from 1 to 200
// and every shard count from 1 to 16 each job lands in exactly one shard.
func TestShardsPartitionThePlan(t *testing.T) {
	for size := 1; size <= 200; size++ {
		names := jobNames(size)
		for n := 1; n <= 16; n++ {
			for _, name := range names {
				owners := 0
				for i := 1; i <= n; i++ {
					if (Shard{i, n}).Contains(name) {
						owners++
					}
				}
				if owners != 1 {
					t.Fatalf("%d jobs, %d shards: %q is in %d shards", size, n, name, owners)
				}
			}
		}
	}
}

// TestAddingAJobMovesNoOther checks the split depends on names, not
// positions: inserting a job anywhere leaves every other job in its shard.
func TestAddingAJobMovesNoOther(t *testing.T) {
	names := jobNames(100)
	for n := 1; n <= 16; n++ {
		before := map[string]int{}
		for _, name := range names {
			before[name] = shardOf(name, n)
		}
		grown := append([]string{"a-new-job-at-the-front"}, names...)
		grown = append(grown[:50], append([]string{"another-in-the-middle"}, grown[50:]...)...)
		for _, name := range grown {
			if old, ok := before[name]; ok && shardOf(name, n) != old {
				t.Fatalf("%d shards: adding jobs moved %q from shard %d to %d", n, name, old, shardOf(name, n))
			}
		}
	}
}

func shardOf(name string, n int) int {
	for i := 1; i <= n; i++ {
		if (Shard{i, n}).Contains(name) {
			return i
		}
	}
	return 0
}

// TestShardBalanceAndStability guards the hash: jobs spread evenly, going
// from n to n+1 shards moves only about 1/(n+1) of them (the point of
// rendezvous hashing), and known names keep their shard across releases.
func TestShardBalanceAndStability(t *testing.T) {
	names := jobNames(1600)
	for _, n := range []int{2, 4, 8, 16} {
		counts := make([]int, n+1)
		moved := 0
		for _, name := range names {
			s := shardOf(name, n)
			counts[s]++
			if shardOf(name, n+1) != s {
				moved++
			}
		}
		want := len(names) / n
		for i := 1; i <= n; i++ {
			if counts[i] < want*3/4 || counts[i] > want*5/4 {
				t.Errorf("%d shards: shard %d holds %d of %d jobs, want about %d", n, i, counts[i], len(names), want)
			}
		}
		if ideal := len(names) / (n + 1); moved > ideal*3/2 {
			t.Errorf("%d to %d shards moved %d jobs, want about %d", n, n+1, moved, ideal)
		}
	}
	// Shards must agree across pneuma versions running side by side: pin a
	// few assignments so a change to the hash is deliberate.
	pinned := map[string]int{}
	for _, name := range []string{"lint", "fix-tests", "docs", "refactor", "job-0"} {
		pinned[name] = shardOf(name, 4)
	}
	want := map[string]int{"lint": 2, "fix-tests": 1, "docs": 4, "refactor": 2, "job-0": 1}
	if !reflect.DeepEqual(pinned, want) {
		t.Errorf("shard assignments of 4 shards changed: got %v, want %v", pinned, want)
	}
}

func TestZeroShardContainsEverything(t *testing.T) {
	if !(Shard{}).Contains("anything") || !(Shard{}).IsZero() || (Shard{1, 1}).IsZero() {
		t.Error("the zero Shard must contain every job")
	}
}

// TestMergeOfShardsEqualsUnshardedRun splits a run's report with Contains the
// way sharded runs would produce it, merges the parts and expects the
// unsharded report back (apart from times).
func TestMergeOfShardsEqualsUnshardedRun(t *testing.T) {
	start := time.Date(2026, 11, 22, 13, 0, 0, 0, time.UTC)
	for _, n := range []int{1, 2, 3, 7} {
		whole := &report.Report{Schema: report.Schema, RunID: "run", StartedAt: start, FinishedAt: start.Add(time.Hour)}
		for i, name := range jobNames(40) {
			j := report.Job{Name: name, Position: i, Status: report.StatusSucceeded, CostUSD: float64(i) / 100,
				Usage: report.Usage{InputTokens: int64(i * 100), OutputTokens: int64(i)}, NumTurns: i % 5, DurationMS: int64(i * 1000)}
			if i%9 == 4 {
				j.Status, j.Reason, j.Error = report.StatusFailed, report.ReasonVerifyFailed, "exit 1"
			}
			whole.Jobs = append(whole.Jobs, j)
		}
		whole.Tally(false)
		var parts []*report.Report
		for i := n; i >= 1; i-- {
			s := Shard{i, n}
			p := &report.Report{Schema: report.Schema, RunID: "run", Shard: &report.Shard{Index: i, Total: n},
				StartedAt: start.Add(time.Duration(i) * time.Minute), FinishedAt: start.Add(time.Duration(30+i) * time.Minute)}
			for _, j := range whole.Jobs {
				if s.Contains(j.Name) {
					p.Jobs = append(p.Jobs, j)
				}
			}
			p.Tally(false)
			parts = append(parts, p)
		}
		got, err := report.Merge(parts...)
		if err != nil {
			t.Fatal(err)
		}
		data, err := report.Encode(got)
		if err != nil {
			t.Fatal(err)
		}
		if err := report.Validate(data); err != nil {
			t.Fatalf("merged report does not validate: %v", err)
		}
		if len(got.Merged) != n || len(got.MissingShards()) != 0 {
			t.Errorf("%d shards: merged %d, missing %v", n, len(got.Merged), got.MissingShards())
		}
		got.Merged, got.StartedAt, got.FinishedAt = nil, whole.StartedAt, whole.FinishedAt
		if !reflect.DeepEqual(got, whole) {
			t.Errorf("%d shards: merged report differs from the unsharded one:\ngot  %+v\nwant %+v", n, got, whole)
		}
	}
}
