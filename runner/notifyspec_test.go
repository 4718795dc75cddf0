package runner

import (
	"path/filepath"
	"testing"

	"github.com/pneuma-cli/pneuma/jobfile"
)

func TestResolveNotify(t *testing.T) {
	in := []jobfile.Notify{{URL: "https://a"}, {URL: "https://b", SecretFile: "secrets/hook"}, {URL: "https://c", SecretFile: "/abs/key"}}
	got := resolveNotify("/work", in)
	if got[0].SecretFile != "" || got[1].SecretFile != filepath.Join("/work", "secrets/hook") || got[2].SecretFile != "/abs/key" || in[1].SecretFile != "secrets/hook" {
		t.Fatalf("resolved %+v (original %+v)", got, in)
	}
}
