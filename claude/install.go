package claude

import (
	"bufio"
	"cmp"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Search says where Find looks for the CLI when no path is given: PATH
// first, then the places its installers use, because a job runner is often
// started from a shell (cron, CI, systemd, an IDE) whose PATH lacks the
// directory that an interactive shell adds for nvm, fnm, volta or npm.
type Search struct {
	// LookPath finds "claude" on PATH; exec.LookPath when nil.
	LookPath func(string) (string, error)
	// Getenv reads the environment; os.Getenv when nil.
	Getenv func(string) string
	// Home is the user's home directory; os.UserHomeDir when empty.
	Home string
	// System lists directories outside home to try; /usr/local/bin and
	// /opt/homebrew/bin when nil.
	System []string
}

// Places returns, in the order Find tries them, the paths where an
// installer may have put the CLI. A path may hold a glob (* for a Node
// version); Find takes its newest match.
func (s Search) Places() []string {
	getenv, home := s.Getenv, s.Home
	if getenv == nil {
		getenv = os.Getenv
	}
	if home == "" {
		home, _ = os.UserHomeDir() // no home: only the absolute places remain
	}
	at := func(parts ...string) string { return filepath.Join(parts...) }
	var places []string
	add := func(dir string, rest ...string) {
		if dir != "" && filepath.IsAbs(dir) {
			places = append(places, at(append([]string{dir}, rest...)...))
		}
	}
	// npm's global prefix, without running npm (a slow Node process):
	// the environment, then ~/.npmrc, then the prefix its docs recommend.
	add(firstAbs(getenv("NPM_CONFIG_PREFIX"), getenv("npm_config_prefix")), "bin", "claude")
	add(npmrcPrefix(filepath.Join(home, ".npmrc"), home), "bin", "claude")
	add(home, ".npm-global", "bin", "claude")
	add(home, ".claude", "local", "claude") // the CLI's own `claude migrate-installer`
	add(home, ".local", "bin", "claude")    // the native installer
	add(firstAbs(getenv("NVM_DIR"), at(home, ".nvm")), "versions", "node", "*", "bin", "claude")
	add(getenv("FNM_DIR"), "node-versions", "*", "installation", "bin", "claude")
	add(dataHome(getenv, home), "fnm", "node-versions", "*", "installation", "bin", "claude")
	add(home, ".fnm", "node-versions", "*", "installation", "bin", "claude") // fnm before 1.31
	add(firstAbs(getenv("VOLTA_HOME"), at(home, ".volta")), "bin", "claude")
	add(firstAbs(getenv("ASDF_DATA_DIR"), at(home, ".asdf")), "shims", "claude")
	system := s.System
	if system == nil {
		system = []string{"/usr/local/bin", "/opt/homebrew/bin"}
	}
	for _, dir := range system {
		add(dir, "claude")
	}
	return dedupe(places)
}

// dataHome is $XDG_DATA_HOME, or ~/.local/share.
func dataHome(getenv func(string) string, home string) string {
	if d := getenv("XDG_DATA_HOME"); filepath.IsAbs(d) {
		return d
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".local", "share")
}

// npmrcPrefix reads prefix= from an .npmrc; "" when there is none.
func npmrcPrefix(path, home string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, val, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !ok || strings.TrimSpace(key) != "prefix" {
			continue
		}
		val = strings.Trim(strings.TrimSpace(val), `"'`)
		val = strings.NewReplacer("${HOME}", home, "$HOME", home).Replace(val)
		if rest, ok := strings.CutPrefix(val, "~"); ok && home != "" {
			val = home + rest
		}
		return val
	}
	return ""
}

// firstExecutable returns the newest executable file that place (a path,
// perhaps with a glob) names, or "".
func firstExecutable(place string) string {
	matches, _ := filepath.Glob(place) // the only error is a bad pattern, and ours are fixed
	slices.SortFunc(matches, func(a, b string) int { return compareVersions(b, a) })
	for _, m := range matches {
		if fi, err := os.Stat(m); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return m
		}
	}
	return ""
}

// compareVersions orders paths by the numbers in them (v20.10.0 after
// v9.11.2), then by text.
func compareVersions(a, b string) int {
	na, nb := numbers(a), numbers(b)
	for i := range min(len(na), len(nb)) {
		if c := cmp.Compare(na[i], nb[i]); c != 0 {
			return c
		}
	}
	return cmp.Or(cmp.Compare(len(na), len(nb)), strings.Compare(a, b))
}

// numbers returns the runs of digits in s.
func numbers(s string) []int {
	var out []int
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r < '0' || r > '9' }) {
		n, _ := strconv.Atoi(f) // digits only; an overflow sorts as 0
		out = append(out, n)
	}
	return out
}

// dedupe drops repeated entries, keeping the first.
func dedupe(s []string) []string {
	seen := map[string]bool{}
	return slices.DeleteFunc(s, func(v string) bool {
		if seen[v] {
			return true
		}
		seen[v] = true
		return false
	})
}

// firstAbs returns the first of vs that is an absolute path: a relative
// directory in the environment would depend on pneuma's working directory.
func firstAbs(vs ...string) string {
	for _, v := range vs {
		if filepath.IsAbs(v) {
			return v
		}
	}
	return ""
}
