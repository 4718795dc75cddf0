package cmd

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// loadSettings is the one settings loader of every command that has
// settings: it reads c's flags, then PNEUMA_* variables (through io.Getenv,
// so tests set them without touching the process), then a config file
// (--config, PNEUMA_CONFIG or ./pneuma.yaml), highest first, into out; a
// config key that is no command's setting is an error.
func loadSettings(v *viper.Viper, c *cobra.Command, io *IO, out any) error {
	var unset []string // flags not given on the command line
	c.Flags().VisitAll(func(fl *pflag.Flag) {
		if fl.Name == "help" {
			return
		}
		key := settingKey(fl.Name)
		_ = v.BindPFlag(key, fl)
		if !fl.Changed {
			unset = append(unset, key)
		}
	})
	// viper reads the environment itself with os.Getenv; Set places a
	// variable above the config file, and only flags that were not given
	// are set, so a flag still wins over its variable.
	for _, key := range unset {
		if val, ok := lookupSetting(io, key); ok {
			v.Set(key, val)
		}
	}
	if err := readConfig(v, c, io); err != nil {
		return err
	}
	if err := unknownSettings(v, c); err != nil {
		return err
	}
	if err := v.Unmarshal(out); err != nil {
		return &ExitError{Code: ExitUsage, Err: fmt.Errorf("settings: %w", err)}
	}
	return nil
}

// fileOnly are settings of the config file that have no flag: lists of
// objects, which a flag cannot spell.
var fileOnly = []string{"notify"}

// unknownSettings refuses a config file key that is no command's setting.
// One pneuma.yaml serves every command, so a key of another command
// (serve's addr in `pneuma run`) is not an error.
func unknownSettings(v *viper.Viper, c *cobra.Command) error {
	known := map[string]bool{}
	for _, k := range fileOnly {
		known[k] = true
	}
	for _, cmd := range append(c.Root().Commands(), c) {
		cmd.Flags().VisitAll(func(fl *pflag.Flag) { known[settingKey(fl.Name)] = true })
	}
	var unknown []string
	for _, key := range v.AllKeys() {
		top, _, _ := strings.Cut(key, ".")
		if !known[top] {
			unknown = append(unknown, top)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	return &ExitError{Code: ExitUsage, Err: fmt.Errorf("settings: %s: unknown setting %s", v.ConfigFileUsed(), strings.Join(slices.Compact(unknown), ", "))}
}

// settingKey is the viper key of a flag: its name with '_' for '-'.
func settingKey(flag string) string { return strings.ReplaceAll(flag, "-", "_") }

// lookupSetting reads PNEUMA_<KEY> through io; an empty value is unset.
func lookupSetting(io *IO, key string) (string, bool) {
	val := io.Getenv("PNEUMA_" + strings.ToUpper(key))
	return val, val != ""
}

// readConfig reads the config file named by --config or PNEUMA_CONFIG, else
// ./pneuma.yaml when it exists; no file is no error.
func readConfig(v *viper.Viper, c *cobra.Command, io *IO) error {
	cfg, _ := c.Flags().GetString("config")
	if cfg == "" {
		cfg = io.Getenv("PNEUMA_CONFIG")
	}
	if cfg == "" {
		if _, err := os.Stat("pneuma.yaml"); err != nil {
			return nil
		}
		cfg = "pneuma.yaml"
	}
	v.SetConfigFile(cfg)
	if err := v.ReadInConfig(); err != nil {
		return &ExitError{Code: ExitUsage, Err: fmt.Errorf("read config file %s: %w", cfg, err)}
	}
	return nil
}
