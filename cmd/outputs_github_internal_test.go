package cmd

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// A value with a line break goes in the delimited form, so it cannot forge
// another output.
func TestAppendGitHubOutputDelimits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out")
	err := appendGitHubOutput(path, []githubOutput{{"a", "1"}, {"b", "x\nstatus=succeeded"}, {"c", ""}})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	re := regexp.MustCompile(`^a=1\nb<<(ghadelimiter_[0-9a-f]{24})\nx\nstatus=succeeded\n(ghadelimiter_[0-9a-f]{24})\nc=\n$`)
	m := re.FindStringSubmatch(string(data))
	if m == nil || m[1] != m[2] {
		t.Fatalf("GITHUB_OUTPUT:\n%s", data)
	}
}
