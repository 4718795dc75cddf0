package jobfile

import (
	"go.yaml.in/yaml/v3"
)

// Limits is the jobs file's limits: block: how a run treats the
// account's usage limits (subscription auth, where the CLI reports them).
type Limits struct {
	// Wait makes a run that hits a usage limit wait for its reset and then
	// continue the held jobs in their sessions (default true).
	Wait *bool `yaml:"wait"`
	// MaxWait bounds that wait (default 6h); a later reset fails the held
	// jobs with reason usage_limit.
	MaxWait Duration `yaml:"max_wait"`
	// ReserveUtilization, when above 0, keeps the rest of the quota for
	// people: once a job reports a utilization at or past it, no new job
	// starts.
	ReserveUtilization float64 `yaml:"reserve_utilization"`
}

func (d *decoder) validateLimits(n *yaml.Node, s Limits) {
	if s.MaxWait < 0 {
		d.errorf(n, "limits.max_wait must not be negative")
	}
	if s.ReserveUtilization < 0 || s.ReserveUtilization > 1 {
		d.errorf(n, "limits.reserve_utilization must be between 0 and 1 (a share of the quota), not %v", s.ReserveUtilization)
	}
}
