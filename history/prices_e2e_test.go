package history_test

import (
	"math"
	"testing"

	"github.com/pneuma-cli/pneuma/history"
	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakeapi"
)

// TestEndToEndPinnedModelsArePriced asks the pinned CLI which model it uses
// by default and for each --model alias, and fails when history's embedded
// price table does not price that model or prices it differently from the
// CLI's own costUSD. A bump that brings a new model fails here until
// prices.json has it.
func TestEndToEndPinnedModelsArePriced(t *testing.T) {
	// Input, output, cache reads and 5-minute cache writes all cost.
	use := fakeapi.Usage{Input: 1000, Output: 100, CacheRead: 2000, CacheWrite: 400}
	prices := history.DefaultPrices()
	for _, alias := range []string{"", "opus", "sonnet", "haiku"} {
		name := alias
		if name == "" {
			name = "default"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := newBed(t, fakeapi.Sequence(fakeapi.Text("priced").WithUsage(use)))
			var extra []string
			if alias != "" {
				extra = []string{"--model", alias}
			}
			res := b.run("Which model?", extra...)
			reqs := b.api.Requests()
			if len(reqs) != 1 {
				t.Fatalf("the fake saw %d requests, want 1", len(reqs))
			}
			model := reqs[0].Model
			mu, _ := res["modelUsage"].(map[string]any)
			if len(mu) != 1 {
				t.Fatalf("modelUsage %v, want the one model %s", mu, model)
			}
			for key, v := range mu {
				if history.NormalizeModel(key) != history.NormalizeModel(model) {
					t.Errorf("modelUsage names %q, the request %q", key, model)
				}
				cliCost, _ := v.(map[string]any)["costUSD"].(float64)
				got, ok := prices.Cost(model, history.Usage{InputTokens: int64(use.Input), OutputTokens: int64(use.Output),
					CacheReadInputTokens: int64(use.CacheRead), CacheCreationInputTokens: int64(use.CacheWrite)})
				if !ok {
					t.Fatalf("CLI %s uses model %q (--model %q), which history/prices.json does not price (the CLI charged $%.6f)",
						claudetest.PinnedVersion(t, b.bin), model, alias, cliCost)
				}
				if math.Abs(got-cliCost) > 1e-9 {
					t.Errorf("model %q: history prices $%.6f, the CLI $%.6f", model, got, cliCost)
				}
			}
		})
	}
}
