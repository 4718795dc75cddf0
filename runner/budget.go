package runner

import (
	"math"

	"github.com/pneuma-cli/pneuma/claude"
)

// budgetLeft returns the money left under the run's cap (ok=false: spent).
// Without a cap it returns 0, true.
func (r *run) budgetLeft() (left float64, ok bool) {
	if r.plan.BudgetUSD <= 0 {
		return 0, true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	left = r.plan.BudgetUSD - r.spent
	return left, left > 0.000001
}

func (r *run) addSpent(usd float64) float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.spent += usd
	return r.spent
}

func (r *run) spentSoFar() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.spent
}

// capBudget lowers the CLI's --max-budget-usd to what is left under the
// run's cap. It returns false when nothing is left.
func (r *run) capBudget(opts *claude.Options) bool {
	left, capped := r.budgetCap()
	if !capped || (opts.MaxBudgetUSD != 0 && opts.MaxBudgetUSD <= left) {
		return true
	}
	// Down to a hundredth of a cent, so float noise never lifts the cap.
	opts.MaxBudgetUSD = math.Floor(left*1e4+1e-6) / 1e4
	return opts.MaxBudgetUSD > 0
}

// budgetCap returns what is left under the run's cap and whether there is one.
func (r *run) budgetCap() (float64, bool) {
	if r.plan.BudgetUSD <= 0 {
		return 0, false
	}
	left, _ := r.budgetLeft()
	return left, true
}
