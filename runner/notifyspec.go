package runner

import (
	"go.yaml.in/yaml/v3"
)

// NotifySpec is a notification target of the jobs file's notify: list
// (docs/notifications.md). The notify package checks and uses it; runner
// only decodes it and resolves secret_file against the jobs file.
type NotifySpec struct {
	URL        string   `yaml:"url" json:"url"`
	Format     string   `yaml:"format" json:"format,omitempty"`
	Events     []string `yaml:"events" json:"events,omitempty"`
	SecretFile string   `yaml:"secret_file" json:"secret_file,omitempty"`
}

// notifyTargets decodes notify: strictly, each target a mapping of the
// known fields.
func (d *decoder) notifyTargets(v *yaml.Node) []NotifySpec {
	if v.Kind != yaml.SequenceNode {
		d.errorf(v, "notify must be a list of targets, not %s", kindName(v))
		return nil
	}
	var out []NotifySpec
	for _, item := range v.Content {
		var t NotifySpec
		if d.scalar(item, &t) {
			if t.URL == "" {
				d.errorf(item, "a notify target needs a url")
			}
			out = append(out, t)
		}
	}
	return out
}

// resolveNotify makes each target's secret_file absolute, relative to the
// jobs file's directory.
func resolveNotify(dir string, in []NotifySpec) []NotifySpec {
	out := make([]NotifySpec, len(in))
	for i, t := range in {
		if t.SecretFile != "" {
			t.SecretFile = ResolvePath(dir, t.SecretFile)
		}
		out[i] = t
	}
	return out
}
