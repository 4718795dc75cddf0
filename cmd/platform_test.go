package cmd

import (
	"strings"
	"testing"
)

func TestPlatformError(t *testing.T) {
	tests := []struct {
		goos string
		want string // "" when supported
	}{
		{"linux", ""},
		{"darwin", ""},
		{"freebsd", ""},
		{"windows", "windows is not supported: pneuma needs Unix process groups"},
	}
	for _, tt := range tests {
		err := platformError(tt.goos)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("platformError(%q) = %v, want nil", tt.goos, err)
		case tt.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.want)):
			t.Errorf("platformError(%q) = %v, want %q...", tt.goos, err, tt.want)
		}
	}
}
