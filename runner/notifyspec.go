package runner

import "github.com/pneuma-cli/pneuma/jobfile"

// resolveNotify makes each notify target's secret_file absolute, relative
// to the jobs file's directory.
func resolveNotify(dir string, in []jobfile.Notify) []jobfile.Notify {
	out := make([]jobfile.Notify, len(in))
	for i, t := range in {
		if t.SecretFile != "" {
			t.SecretFile = ResolvePath(dir, t.SecretFile)
		}
		out[i] = t
	}
	return out
}
