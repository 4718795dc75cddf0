package report

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// split deals r's jobs into n shard reports by pick, the way n runs of the
// same plan would report them.
func split(r *Report, n int, pick func(i int, j Job) int) []*Report {
	parts := make([]*Report, n)
	for k := range parts {
		parts[k] = &Report{
			Schema:     Schema,
			RunID:      r.RunID,
			StartedAt:  r.StartedAt.Add(time.Duration(k) * time.Second),
			FinishedAt: r.FinishedAt.Add(-time.Duration(k) * time.Second),
			Shard:      &Shard{Index: k + 1, Total: n},
		}
	}
	for i, j := range r.Jobs {
		k := pick(i, j)
		parts[k].Jobs = append(parts[k].Jobs, j)
	}
	for _, p := range parts {
		p.Tally(false)
	}
	return parts
}

func TestMergeEqualsUnsharded(t *testing.T) {
	whole := mixedReport()
	whole.Budget = nil
	whole.Tally(false) // interrupted because a job was, without the signal flag
	parts := split(whole, 3, func(i int, _ Job) int { return (i * 7) % 3 })
	// Shards arrive in any order.
	got, err := Merge(parts[2], parts[0], parts[1])
	if err != nil {
		t.Fatal(err)
	}
	validJSON(t, got)
	if len(got.Merged) != 3 || got.Merged[0].Shard.Index != 3 || got.Merged[0].Jobs != len(parts[2].Jobs) {
		t.Errorf("merged parts not recorded: %+v", got.Merged)
	}
	if got.Shard != nil || got.MissingShards() != nil {
		t.Errorf("merged report has shard %v, missing %v", got.Shard, got.MissingShards())
	}
	if !got.StartedAt.Equal(whole.StartedAt) || !got.FinishedAt.Equal(whole.FinishedAt) {
		t.Errorf("merged times %v..%v, want %v..%v", got.StartedAt, got.FinishedAt, whole.StartedAt, whole.FinishedAt)
	}
	got.Merged = nil
	if !reflect.DeepEqual(got, whole) {
		t.Errorf("merge differs from the unsharded report:\ngot  %+v\nwant %+v", got, whole)
	}
}

func TestMergeStatusAndBudget(t *testing.T) {
	a := &Report{Schema: Schema, RunID: "a", Budget: &Budget{CapUSD: 2, SpentUSD: 0.5},
		Jobs: []Job{{Name: "x", Status: StatusSucceeded, CostUSD: 0.5}}}
	a.Tally(true) // stopped by a signal before anything failed
	b := &Report{Schema: Schema, RunID: "b", Budget: &Budget{CapUSD: 2, SpentUSD: 1},
		Jobs: []Job{{Name: "y", Position: 1, Status: StatusFailed, Reason: ReasonMaxTurns, CostUSD: 1}}}
	b.Tally(false)
	got, err := Merge(a, b)
	if err != nil {
		t.Fatal(err)
	}
	validJSON(t, got)
	if got.Status != RunInterrupted {
		t.Errorf("status %s, want interrupted (a part was)", got.Status)
	}
	if *got.Budget != (Budget{CapUSD: 4, SpentUSD: 1.5}) || got.Totals.CostUSD != 1.5 || got.Totals.Failed != 1 {
		t.Errorf("budget %+v totals %+v", got.Budget, got.Totals)
	}
	if !strings.HasPrefix(got.RunID, "merged-") {
		t.Errorf("run id %q for parts of different runs", got.RunID)
	}
	again, _ := Merge(a, b)
	if again.RunID != got.RunID {
		t.Error("merged run id is not deterministic")
	}
}

func TestMergeErrors(t *testing.T) {
	job := func(name string) Job { return Job{Name: name, Status: StatusSucceeded} }
	rep := func(shard *Shard, jobs ...Job) *Report {
		r := &Report{Schema: Schema, RunID: "r", Shard: shard, Jobs: jobs}
		r.Tally(false)
		return r
	}
	tests := []struct {
		name    string
		reports []*Report
		want    string
		dups    []DuplicateJob
	}{
		{"none", nil, "no reports", nil},
		{"nil", []*Report{rep(nil), nil}, "report 2 is nil", nil},
		{"other schema", []*Report{{Schema: "pneuma.report/v2"}}, `schema "pneuma.report/v2"`, nil},
		{"overlap", []*Report{rep(&Shard{1, 2}, job("a"), job("b")), rep(&Shard{2, 2}, job("b"), job("c"), job("a"))},
			`2 jobs appear more than once: "a", "b"`, []DuplicateJob{{"a", []int{0, 1}}, {"b", []int{0, 1}}}},
		{"same report twice", []*Report{rep(nil, job("a")), rep(nil, job("a"))}, `"a"`, []DuplicateJob{{"a", []int{0, 1}}}},
		{"duplicate inside one", []*Report{rep(nil, job("a"), job("a"))}, `"a"`, []DuplicateJob{{"a", []int{0, 0}}}},
		{"same shard twice", []*Report{rep(&Shard{1, 2}, job("a")), rep(&Shard{1, 2}, job("b"))}, "reports 1 and 2 are both shard 1/2", nil},
		{"different splits", []*Report{rep(&Shard{1, 2}, job("a")), rep(&Shard{2, 3}, job("b"))}, "different splits", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Merge(tt.reports...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
			var dup *DuplicateJobsError
			if errors.As(err, &dup) != (tt.dups != nil) {
				t.Fatalf("error %T, DuplicateJobsError wanted: %v", err, tt.dups != nil)
			}
			if dup != nil && !reflect.DeepEqual(dup.Jobs, tt.dups) {
				t.Errorf("duplicates %+v, want %+v", dup.Jobs, tt.dups)
			}
		})
	}
}

func TestMissingShards(t *testing.T) {
	a := &Report{Schema: Schema, RunID: "r", Shard: &Shard{2, 4}, Jobs: []Job{{Name: "a", Status: StatusSucceeded}}}
	a.Tally(false)
	got, err := Merge(a)
	if err != nil {
		t.Fatal(err)
	}
	want := []Shard{{1, 4}, {3, 4}, {4, 4}}
	if m := got.MissingShards(); !reflect.DeepEqual(m, want) {
		t.Errorf("missing %v, want %v", m, want)
	}
	var b strings.Builder
	if err := WriteMarkdown(&b, got, MarkdownOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "No report from shards 1/4, 3/4, 4/4") {
		t.Errorf("summary does not warn about missing shards:\n%s", b.String())
	}
}
