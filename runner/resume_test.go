package runner

import (
	"strings"
	"testing"
)

func TestDiffPlans(t *testing.T) {
	plan := func(jobs ...*Job) *Plan { return &Plan{Jobs: jobs} }
	job := func(name string, prompts ...string) *Job { return &Job{Name: name, Prompts: prompts} }
	tests := []struct {
		name     string
		was, now *Plan
		want     string
	}{
		{"same", plan(job("a", "x")), plan(job("a", "x")), ""},
		{"added", plan(job("a", "x")), plan(job("a", "x"), job("b", "y")), "jobs added: b"},
		{"removed", plan(job("a", "x"), job("b", "y")), plan(job("b", "y")), "jobs removed: a"},
		{"prompt", plan(job("a", "x")), plan(job("a", "z")), "prompt changed: a"},
		{"second prompt", plan(job("a", "x", "y")), plan(job("a", "x")), "prompt changed: a"},
		{"all", plan(job("a", "x"), job("b", "y")), plan(job("c", "x"), job("b", "w")), "jobs added: c; jobs removed: a; prompt changed: b"},
	}
	for _, tt := range tests {
		if got := diffPlans(tt.was, tt.now); got != tt.want {
			t.Errorf("%s: diffPlans = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestEnvLost(t *testing.T) {
	if w := envLost(&Plan{Jobs: []*Job{{Name: "a"}}}); w != nil {
		t.Errorf("no env: %v", w)
	}
	w := envLost(&Plan{Jobs: []*Job{{Name: "a", EnvKeys: []string{"K1", "K2"}}, {Name: "b"}}})
	if len(w) != 1 || !strings.Contains(w[0], "a (K1, K2)") || strings.Contains(w[0], "b (") {
		t.Errorf("envLost = %v", w)
	}
}
