package report

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
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
	out := &Report{Schema: Schema, Jobs: []Job{}}
	where := make(map[string][]int)
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
		for _, j := range r.Jobs {
			if _, ok := where[j.Name]; !ok {
				order = append(order, j.Name)
			}
			where[j.Name] = append(where[j.Name], i)
			out.Jobs = append(out.Jobs, j)
		}
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
			Jobs:       len(r.Jobs),
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
	slices.SortStableFunc(out.Jobs, func(a, b Job) int { return cmp.Compare(a.Position, b.Position) })
	out.RunID = mergedRunID(ids)
	out.Tally(interrupted)
	return out, nil
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
