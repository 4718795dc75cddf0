package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// CLISettings returns the CLI's --settings value with Claude Code's own
// Bash sandbox turned off (sandbox.enabled: false), merged into settings
// (a JSON object or a file holding one; "" for none). The CLI's sandbox
// cannot start inside pneuma's: bubblewrap does not nest here ("Can't
// mount proc").
func CLISettings(settings string) (string, error) {
	obj := map[string]any{}
	if s := strings.TrimSpace(settings); s != "" {
		data := []byte(s)
		if !strings.HasPrefix(s, "{") {
			var err error
			if data, err = os.ReadFile(settings); err != nil {
				return "", fmt.Errorf("sandbox: read settings: %w", err)
			}
		}
		if err := json.Unmarshal(data, &obj); err != nil {
			return "", fmt.Errorf("sandbox: settings are not a JSON object: %w", err)
		}
	}
	sb, _ := obj["sandbox"].(map[string]any)
	if sb == nil {
		sb = map[string]any{}
	}
	sb["enabled"] = false
	obj["sandbox"] = sb
	out, err := json.Marshal(obj)
	if err != nil {
		return "", fmt.Errorf("sandbox: settings: %w", err)
	}
	return string(out), nil
}
