package report

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// SchemaJSON is the JSON Schema (draft 2020-12) of "pneuma.report/v1", the
// documented contract of report.json. Every field is described in it.
//
//go:embed schema/report.v1.schema.json
var SchemaJSON []byte

const schemaURL = "https://raw.githubusercontent.com/pneuma-cli/pneuma/main/report/schema/report.v1.schema.json"

var compiled = sync.OnceValues(func() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(SchemaJSON))
	if err != nil {
		return nil, fmt.Errorf("parse embedded report schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("load embedded report schema: %w", err)
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("compile embedded report schema: %w", err)
	}
	return s, nil
})

// Validate checks that data is a valid "pneuma.report/v1" document: it must
// match the JSON Schema, and hold what a schema cannot express: unique job
// names and totals that agree with the jobs.
func Validate(data []byte) error {
	s, err := compiled()
	if err != nil {
		return err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("invalid report: not JSON: %w", err)
	}
	if err := s.Validate(doc); err != nil {
		return fmt.Errorf("invalid report: %w", err)
	}
	r, err := Decode(data)
	if err != nil {
		return fmt.Errorf("invalid report: %w", err)
	}
	if err := r.check(); err != nil {
		return fmt.Errorf("invalid report: %w", err)
	}
	return nil
}

// check verifies the invariants of a report that the schema cannot state.
func (r *Report) check() error {
	var errs []error
	seen := make(map[string]bool, len(r.Jobs))
	for _, j := range r.Jobs {
		if seen[j.Name] {
			errs = append(errs, fmt.Errorf("job %q appears more than once", j.Name))
		}
		seen[j.Name] = true
	}
	want := Report{Jobs: r.Jobs}
	want.Tally(false)
	w, g := want.Totals, r.Totals
	for _, c := range []struct {
		name      string
		got, want int64
	}{
		{"jobs", int64(g.Jobs), int64(w.Jobs)},
		{"succeeded", int64(g.Succeeded), int64(w.Succeeded)},
		{"failed", int64(g.Failed), int64(w.Failed)},
		{"skipped", int64(g.Skipped), int64(w.Skipped)},
		{"interrupted", int64(g.Interrupted), int64(w.Interrupted)},
		{"input_tokens", g.InputTokens, w.InputTokens},
		{"output_tokens", g.OutputTokens, w.OutputTokens},
		{"cache_read_input_tokens", g.CacheReadInputTokens, w.CacheReadInputTokens},
		{"cache_creation_input_tokens", g.CacheCreationInputTokens, w.CacheCreationInputTokens},
		{"num_turns", int64(g.NumTurns), int64(w.NumTurns)},
	} {
		if c.got != c.want {
			errs = append(errs, fmt.Errorf("totals.%s is %d but the jobs add up to %d", c.name, c.got, c.want))
		}
	}
	if math.Abs(g.CostUSD-w.CostUSD) > 1e-6*math.Max(1, w.CostUSD) {
		errs = append(errs, fmt.Errorf("totals.cost_usd is %g but the jobs add up to %g", g.CostUSD, w.CostUSD))
	}
	if bad := w.Failed + w.Skipped + w.Interrupted; bad > 0 && r.Status == RunSucceeded {
		errs = append(errs, fmt.Errorf("status is %s but %d of its jobs did not succeed", r.Status, bad))
	}
	if r.Shard != nil && r.Shard.Index > r.Shard.Total {
		errs = append(errs, fmt.Errorf("shard.index %d is greater than shard.total %d", r.Shard.Index, r.Shard.Total))
	}
	return errors.Join(errs...)
}
