package cmd

import (
	goio "io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"
)

type testSettings struct {
	Concurrency int           `mapstructure:"concurrency"`
	StopGrace   time.Duration `mapstructure:"stop_grace"`
	Only        []string      `mapstructure:"only"`
	Config      string        `mapstructure:"config"`
}

// TestLoadSettingsPrecedence: a flag wins over its PNEUMA_* variable, read
// through the IO seam (never the process environment), which wins over the
// config file, which wins over the flag's default.
func TestLoadSettingsPrecedence(t *testing.T) {
	t.Setenv("PNEUMA_STOP_GRACE", "9m") // the process environment is not read
	cfg := filepath.Join(t.TempDir(), "pneuma.yaml")
	if err := os.WriteFile(cfg, []byte("concurrency: 3\nstop_grace: 4s\nonly: [c]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"PNEUMA_CONCURRENCY": "5", "PNEUMA_ONLY": "a,b", "PNEUMA_CONFIG": cfg}
	for _, c := range []struct {
		name string
		args []string
		want testSettings
	}{
		{"env over config", nil, testSettings{Concurrency: 5, StopGrace: 4 * time.Second, Only: []string{"a", "b"}}},
		{"flag over env", []string{"-j", "7", "--only", "x"}, testSettings{Concurrency: 7, StopGrace: 4 * time.Second, Only: []string{"x"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := loadTestSettings(t, env, c.args)
			if got.Concurrency != c.want.Concurrency || got.StopGrace != c.want.StopGrace || strings.Join(got.Only, ",") != strings.Join(c.want.Only, ",") {
				t.Fatalf("settings = %+v, want %+v", got, c.want)
			}
		})
	}
}

// TestLoadSettingsUnknownKey: a key the command does not know is a usage error.
func TestLoadSettingsUnknownKey(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "pneuma.yaml")
	if err := os.WriteFile(cfg, []byte("concurency: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := newSettingsCmd()
	_ = c.ParseFlags([]string{"--config", cfg})
	var s testSettings
	err := loadSettings(viper.New(), c, &IO{Getenv: func(string) string { return "" }}, &s)
	if e, ok := err.(*ExitError); !ok || e.Code != ExitUsage || !strings.Contains(err.Error(), "concurency") {
		t.Fatalf("err = %v, want a usage error naming concurency", err)
	}
}

// TestLoadSettingsSharedFile: one pneuma.yaml holds every command's
// settings; a key of a sibling command is not an error.
func TestLoadSettingsSharedFile(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "pneuma.yaml")
	if err := os.WriteFile(cfg, []byte("concurrency: 2\naddr: 127.0.0.1:1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := &cobra.Command{Use: "root"}
	c := newSettingsCmd()
	sibling := &cobra.Command{Use: "serve"}
	sibling.Flags().String("addr", "", "")
	root.AddCommand(c, sibling)
	_ = c.ParseFlags([]string{"--config", cfg})
	var s testSettings
	if err := loadSettings(viper.New(), c, &IO{Getenv: func(string) string { return "" }}, &s); err != nil || s.Concurrency != 2 {
		t.Fatalf("settings %+v, err %v", s, err)
	}
}

func newSettingsCmd() *cobra.Command {
	c := &cobra.Command{Use: "x"}
	c.SetOut(goio.Discard)
	f := c.Flags()
	f.IntP("concurrency", "j", 1, "")
	f.Duration("stop-grace", 2*time.Second, "")
	f.StringSlice("only", nil, "")
	f.String("config", "", "")
	return c
}

func loadTestSettings(t *testing.T, env map[string]string, args []string) testSettings {
	t.Helper()
	c := newSettingsCmd()
	if err := c.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	var s testSettings
	if err := loadSettings(viper.New(), c, &IO{Getenv: func(k string) string { return env[k] }}, &s); err != nil {
		t.Fatal(err)
	}
	return s
}
