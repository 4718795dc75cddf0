package jobfile

import (
	"fmt"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"
)

// Duration is a time.Duration written as "90s", "15m" or "1h30m".
type Duration time.Duration

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// UnmarshalYAML reads a duration such as "90s" or "1h30m".
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("must be a duration such as 90s or 15m, not %s", kindName(n))
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		if _, nerr := strconv.Atoi(n.Value); nerr == nil {
			return fmt.Errorf("duration %q needs a unit, such as %ss", n.Value, n.Value)
		}
		return fmt.Errorf("invalid duration %q (write it like 90s, 15m or 1h30m)", n.Value)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration as a string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// MarshalJSON writes the duration as a string ("15m0s").
func (d Duration) MarshalJSON() ([]byte, error) {
	return []byte(strconv.Quote(time.Duration(d).String())), nil
}

// UnmarshalJSON reads the form MarshalJSON writes.
func (d *Duration) UnmarshalJSON(b []byte) error {
	s, err := strconv.Unquote(string(b))
	if err != nil {
		return fmt.Errorf("duration must be a string: %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}
