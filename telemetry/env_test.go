package telemetry

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzResourceAttributes: any run id or job name survives the trip through
// OTEL_RESOURCE_ATTRIBUTES whole, and never adds an attribute of its own.
func FuzzResourceAttributes(f *testing.F) {
	for _, s := range []string{"lint", "a,b=c", "x%20y", "ü ñ", "k=v,evil=1", "\x00;\"\\"} {
		f.Add(s, "team=core")
	}
	f.Fuzz(func(t *testing.T, job, user string) {
		if !utf8.ValidString(job) || strings.ContainsAny(user, "\x00\n") {
			return
		}
		env := cliEnv("run", job, zeroSC, []string{"OTEL_RESOURCE_ATTRIBUTES=" + user})
		var value string
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, "OTEL_RESOURCE_ATTRIBUTES="); ok {
				value = v
			}
		}
		got := parseAttributes(value)
		if len(got) < 2 {
			t.Fatalf("%q: attributes %v", value, got)
		}
		last, prev := got[len(got)-1], got[len(got)-2]
		if last.Key != "pneuma.job" || last.Value.AsString() != job || prev.Key != "pneuma.run_id" || prev.Value.AsString() != "run" {
			t.Fatalf("job %q: got %v from %q", job, got, value)
		}
		if want := len(parseAttributes(user)) + 2; len(got) != want {
			t.Fatalf("job %q added attributes: %v", job, got)
		}
	})
}
