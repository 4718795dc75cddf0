package runner

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// maxShards bounds n in "i/n". No CI engine runs more parallel copies of one
// job than this, and Contains costs O(n) per job.
const maxShards = 10000

// Shard is one part of a plan split n ways for running on several machines:
// Index of Total, 1-based. The zero Shard means no sharding and contains every
// job.
type Shard struct{ Index, Total int }

// String formats s as "i/n".
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Total) }

// IsZero reports whether s is the zero Shard (no sharding).
func (s Shard) IsZero() bool { return s == Shard{} }

// ParseShard parses "i/n", 1 ≤ i ≤ n, as given to --shard (1-based, like
// Playwright's and Jest's --shard).
func ParseShard(s string) (Shard, error) {
	is, ns, ok := strings.Cut(s, "/")
	if !ok {
		return Shard{}, fmt.Errorf("invalid shard %q: want i/n, for example 2/4", s)
	}
	i, err := shardNumber(is)
	if err != nil {
		return Shard{}, fmt.Errorf("invalid shard %q: index: %w", s, err)
	}
	n, err := shardNumber(ns)
	if err != nil {
		return Shard{}, fmt.Errorf("invalid shard %q: total: %w", s, err)
	}
	return newShard(i, n, fmt.Sprintf("shard %q", s))
}

// shardNumber parses a decimal number of digits only (no sign, no spaces).
func shardNumber(s string) (int, error) {
	if s == "" {
		return 0, fmt.Errorf("missing number")
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%q is not a whole number", s)
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n > maxShards {
		return 0, fmt.Errorf("%s is more than %d", s, maxShards)
	}
	return n, nil
}

// newShard checks 1 ≤ index ≤ total ≤ maxShards; what names the input in
// errors.
func newShard(index, total int, what string) (Shard, error) {
	switch {
	case total < 1:
		return Shard{}, fmt.Errorf("invalid %s: the total must be at least 1", what)
	case total > maxShards:
		return Shard{}, fmt.Errorf("invalid %s: the total must be at most %d", what, maxShards)
	case index < 1 || index > total:
		return Shard{}, fmt.Errorf("invalid %s: the index must be between 1 and %d", what, total)
	}
	return Shard{Index: index, Total: total}, nil
}

// shardSource is one CI engine's way of telling a copy of a job which part it
// is.
type shardSource struct {
	name       string
	indexVar   string
	totalVar   string
	zeroBased  bool
	needsTotal bool // the index alone is set by the engine; the total must be given
}

var shardSources = []shardSource{
	// GitLab sets CI_NODE_TOTAL=1 for every job; CI_NODE_INDEX only with parallel:.
	{name: "GitLab CI", indexVar: "CI_NODE_INDEX", totalVar: "CI_NODE_TOTAL"},
	{name: "Buildkite", indexVar: "BUILDKITE_PARALLEL_JOB", totalVar: "BUILDKITE_PARALLEL_JOB_COUNT", zeroBased: true},
	// A Kubernetes Indexed Job sets the index but not the completion count.
	{name: "Kubernetes Indexed Job", indexVar: "JOB_COMPLETION_INDEX", totalVar: "PNEUMA_SHARD_TOTAL", zeroBased: true, needsTotal: true},
}

// DetectShard finds the shard this process should run from the variables CI
// engines set for parallel copies of a job: GitLab (CI_NODE_INDEX and
// CI_NODE_TOTAL, 1-based), Buildkite (BUILDKITE_PARALLEL_JOB and
// BUILDKITE_PARALLEL_JOB_COUNT, 0-based) and Kubernetes Indexed Jobs
// (JOB_COMPLETION_INDEX, 0-based, with PNEUMA_SHARD_TOTAL set to the Job's
// completions). ok is false when none is set. Malformed values, a
// JOB_COMPLETION_INDEX without PNEUMA_SHARD_TOTAL (or the reverse) and engines
// that disagree are errors. An explicit --shard takes precedence; the caller
// need not call DetectShard then. GitLab also sets CI_NODE_INDEX for
// `parallel: matrix:` jobs, which then shard too: --shard 1/1 turns that off.
func DetectShard(getenv func(string) string) (s Shard, ok bool, err error) {
	var found *shardSource
	for i := range shardSources {
		src := &shardSources[i]
		index, total := getenv(src.indexVar), getenv(src.totalVar)
		if index == "" {
			if src.needsTotal && total != "" {
				return Shard{}, false, fmt.Errorf("%s is set but %s is not: PNEUMA_SHARD_TOTAL is only for Kubernetes Indexed Jobs (use --shard i/n elsewhere)", src.totalVar, src.indexVar)
			}
			continue
		}
		if total == "" {
			if src.needsTotal {
				return Shard{}, false, fmt.Errorf("%s is set (%s) but %s is not: set it to the Job's completions, or pass --shard 1/1 to run every job", src.indexVar, src.name, src.totalVar)
			}
			return Shard{}, false, fmt.Errorf("%s is set but %s is not (%s)", src.indexVar, src.totalVar, src.name)
		}
		got, err := src.parse(index, total)
		if err != nil {
			return Shard{}, false, err
		}
		if found != nil && got != s {
			return Shard{}, false, fmt.Errorf("%s says shard %v but %s says %v: pass --shard to choose", found.name, s, src.name, got)
		}
		if found == nil {
			s, found = got, src
		}
	}
	return s, found != nil, nil
}

func (src *shardSource) parse(index, total string) (Shard, error) {
	what := fmt.Sprintf("shard from %s=%q and %s=%q", src.indexVar, index, src.totalVar, total)
	i, err := shardNumber(strings.TrimSpace(index))
	if err != nil {
		return Shard{}, fmt.Errorf("invalid %s: %w", what, err)
	}
	n, err := shardNumber(strings.TrimSpace(total))
	if err != nil {
		return Shard{}, fmt.Errorf("invalid %s: %w", what, err)
	}
	if src.zeroBased {
		i++
	}
	return newShard(i, n, what)
}

// Contains reports whether the job named jobName belongs to s. The split
// depends only on the name and s.Total, never on a job's position, so every
// job lands in exactly one shard and adding or removing a job moves no other.
// It is rendezvous (highest random weight) hashing: the job goes to the shard
// with the highest hash of (name, shard), which also moves as few jobs as
// possible when the number of shards changes. The hash is part of pneuma's
// behaviour: changing it would split plans differently.
func (s Shard) Contains(jobName string) bool {
	if s.Total <= 1 {
		return true
	}
	return shardOwner(jobName, s.Total) == s.Index
}

// shardOwner is the 1-based shard of n that jobName belongs to.
func shardOwner(jobName string, n int) int {
	h := fnv.New64a()
	h.Write([]byte(jobName))
	name := h.Sum64()
	best, bestScore := 1, uint64(0)
	for k := 1; k <= n; k++ {
		score := shardMix(name ^ shardMix(uint64(k)))
		if k == 1 || score > bestScore {
			best, bestScore = k, score
		}
	}
	return best
}

// shardMix is the SplitMix64 finaliser: it spreads every input bit over the
// output so that nearby inputs give unrelated scores.
func shardMix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
