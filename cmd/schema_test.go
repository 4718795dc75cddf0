package cmd_test

import (
	"os"
	"testing"
)

// `pneuma schema jobs` prints the committed schema/jobs.schema.json byte for
// byte, so an editor pointed at either reads the same schema.
func TestSchemaJobsPrintsCommittedFile(t *testing.T) {
	want, err := os.ReadFile("../schema/jobs.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	r := run(t, "", nil, "schema", "jobs")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if r.stdout != string(want) {
		t.Fatalf("pneuma schema jobs differs from schema/jobs.schema.json")
	}
	for _, args := range [][]string{{"schema"}, {"schema", "report2"}} {
		if r := run(t, "", nil, args...); r.code != 2 {
			t.Errorf("pneuma %v: exit %d, want 2 (usage)", args, r.code)
		}
	}
}
