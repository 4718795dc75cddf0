package report

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"math"
	"slices"
	"strings"
)

// DuplicateJobsError is returned by Merge when the same job name appears more
// than once among the reports: the shards overlap, or one report was given
// twice. The caller treats it as a usage error (`pneuma report merge` exits 2).
type DuplicateJobsError struct {
	// Jobs lists each duplicated name with the 0-based indexes of the reports
	// (in Merge's argument order) that hold it, sorted by name.
	Jobs []DuplicateJob
}

// DuplicateJob is one job name found in more than one place.
type DuplicateJob struct {
	Name    string
	Reports []int
}

func (e *DuplicateJobsError) Error() string {
	names := make([]string, 0, len(e.Jobs))
	for _, d := range e.Jobs {
		names = append(names, fmt.Sprintf("%q", d.Name))
	}
	const show = 10
	list := strings.Join(names[:min(len(names), show)], ", ")
	if len(names) > show {
		list += fmt.Sprintf(" and %d more", len(names)-show)
	}
	return fmt.Sprintf("reports overlap: %d jobs appear more than once: %s", len(e.Jobs), list)
}

// Merge joins reports, typically the shards of one plan, into one report. Job
// names must be unique across them: a duplicate is a *DuplicateJobsError.
// Reports of different splits (shard 1/3 with shard 1/4) or the same shard
// twice are refused too. The result has no shard; Merged records each input.
// Jobs are ordered by Position (then input order), totals and status are
// recomputed with Tally (interrupted if any input was), StartedAt is the
// earliest start and FinishedAt the latest finish, and budgets are summed.
// The run id is shared by the inputs or else derived from theirs.
func Merge(reports ...*Report) (*Report, error) {
	if len(reports) == 0 {
		return nil, errors.New("merge: no reports")
	}
	out := &Report{Schema: Schema}
	where := make(map[string][]int)
	streamed, sorted := false, true
	var order []string
	interrupted := false
	var shardTotal int
	seenShard := make(map[int]int)
	var ids []string
	for i, r := range reports {
		if r == nil {
			return nil, fmt.Errorf("merge: report %d is nil", i+1)
		}
		if r.Schema != "" && r.Schema != Schema {
			return nil, fmt.Errorf("merge: report %d has schema %q, want %q", i+1, r.Schema, Schema)
		}
		if s := r.Shard; s != nil {
			if shardTotal != 0 && s.Total != shardTotal {
				return nil, fmt.Errorf("merge: report %d is shard %d/%d but an earlier one is of %d shards: they come from different splits", i+1, s.Index, s.Total, shardTotal)
			}
			shardTotal = s.Total
			if prev, ok := seenShard[s.Index]; ok {
				return nil, fmt.Errorf("merge: reports %d and %d are both shard %d/%d", prev+1, i+1, s.Index, s.Total)
			}
			seenShard[s.Index] = i
		}
		// The jobs are walked, not kept: names, counts and totals only.
		jobs, last := 0, math.MinInt
		err := r.EachJob(func(j *Job) error {
			if _, ok := where[j.Name]; !ok {
				order = append(order, j.Name)
			}
			where[j.Name] = append(where[j.Name], i)
			sorted = sorted && j.Position >= last
			last = j.Position
			jobs++
			out.Totals.Add(j)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("merge: report %d: %w", i+1, err)
		}
		streamed = streamed || r.IsStreamed()
		if r.Status == RunInterrupted {
			interrupted = true
		}
		if !r.StartedAt.IsZero() && (out.StartedAt.IsZero() || r.StartedAt.Before(out.StartedAt)) {
			out.StartedAt = r.StartedAt
		}
		if r.FinishedAt.After(out.FinishedAt) {
			out.FinishedAt = r.FinishedAt
		}
		if r.Budget != nil {
			if out.Budget == nil {
				out.Budget = &Budget{}
			}
			out.Budget.CapUSD += r.Budget.CapUSD
			out.Budget.SpentUSD += r.Budget.SpentUSD
		}
		ids = append(ids, r.RunID)
		out.Warnings = append(out.Warnings, r.Warnings...)
		out.Merged = append(out.Merged, MergedReport{
			RunID:      r.RunID,
			Shard:      cloneShard(r.Shard),
			Status:     r.Status,
			StartedAt:  r.StartedAt,
			FinishedAt: r.FinishedAt,
			Jobs:       jobs,
		})
	}
	var dups []DuplicateJob
	for _, name := range order {
		if w := where[name]; len(w) > 1 {
			dups = append(dups, DuplicateJob{Name: name, Reports: w})
		}
	}
	if len(dups) > 0 {
		slices.SortFunc(dups, func(a, b DuplicateJob) int { return cmp.Compare(a.Name, b.Name) })
		return nil, &DuplicateJobsError{Jobs: dups}
	}
	out.RunID = mergedRunID(ids)
	out.Status = out.Totals.RunStatus(interrupted)
	if !sorted {
		// An input out of position order (not written by pneuma run):
		// sort the jobs in memory, as a stable sort by position.
		loaded, err := Streamed(*out, concatSources(reports)).Load()
		if err != nil {
			return nil, fmt.Errorf("merge: %w", err)
		}
		slices.SortStableFunc(loaded.Jobs, func(a, b Job) int { return cmp.Compare(a.Position, b.Position) })
		loaded.Tally(interrupted)
		return loaded, nil
	}
	merged := Streamed(*out, mergeSources(reports))
	// The totals again in the merged order: sums of costs in another order
	// differ in their last bits from the unsharded run's.
	var t Totals
	if err := merged.EachJob(func(j *Job) error { t.Add(j); return nil }); err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	merged.Totals, merged.Status = t, t.RunStatus(interrupted)
	if !streamed {
		return merged.Load() // inputs in memory: so is the result
	}
	return merged, nil
}

// concatSources walks the jobs of every report, one report after another.
func concatSources(reports []*Report) JobSource {
	return func(fn func(*Job) error) error {
		for _, r := range reports {
			if err := r.EachJob(fn); err != nil {
				return err
			}
		}
		return nil
	}
}

// errStopWalk ends a walk of a report's jobs early.
var errStopWalk = errors.New("stop")

// mergeSources walks the jobs of reports that each list theirs by
// position, merged by position (ties in input order: what a stable sort
// of them all would give), holding one job per report at a time.
func mergeSources(reports []*Report) JobSource {
	return func(fn func(*Job) error) error {
		n := len(reports)
		next := make([]func() (*Job, bool), n)
		errs := make([]error, n)
		cur := make([]*Job, n)
		for i, r := range reports {
			seq := func(yield func(*Job) bool) {
				err := r.EachJob(func(j *Job) error {
					if !yield(j) {
						return errStopWalk
					}
					return nil
				})
				if err != nil && !errors.Is(err, errStopWalk) {
					errs[i] = err
				}
			}
			nx, stop := iter.Pull(seq)
			defer stop()
			next[i] = nx
			cur[i], _ = nx()
		}
		for {
			at := -1
			for i, j := range cur {
				if j != nil && (at < 0 || j.Position < cur[at].Position) {
					at = i
				}
			}
			if at < 0 {
				break
			}
			if err := fn(cur[at]); err != nil {
				return err
			}
			cur[at], _ = next[at]()
		}
		return errors.Join(errs...)
	}
}

// mergedRunID is the inputs' common run id, or a stable id derived from
// all of them.
func mergedRunID(ids []string) string {
	same := true
	for _, id := range ids[1:] {
		same = same && id == ids[0]
	}
	if same {
		return ids[0]
	}
	sum := sha256.Sum256([]byte(strings.Join(ids, "\n")))
	return "merged-" + hex.EncodeToString(sum[:6])
}

func cloneShard(s *Shard) *Shard {
	if s == nil {
		return nil
	}
	c := *s
	return &c
}

// MissingShards lists the shards of a merged report's split that none of its
// parts covered (their jobs never reported), in order. It is empty when the
// report was not merged from shards, or when every shard is present.
func (r *Report) MissingShards() []Shard {
	total := 0
	have := make(map[int]bool)
	for _, m := range r.Merged {
		if m.Shard == nil {
			continue
		}
		total = m.Shard.Total
		have[m.Shard.Index] = true
	}
	var missing []Shard
	for i := 1; i <= total; i++ {
		if !have[i] {
			missing = append(missing, Shard{Index: i, Total: total})
		}
	}
	return missing
}
