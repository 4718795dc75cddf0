package worktree

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// maxName is the longest name SanitizeName returns, in bytes.
const maxName = 64

// SanitizeName turns a job name into a string that is both a single safe
// path component and a valid git ref component, so that it can name the
// job's worktree directory and the last part of its branch. The rule:
//
//   - every character outside [A-Za-z0-9._-] (separators, spaces, unicode)
//     becomes '-'; case is kept, because names appear in reports;
//   - runs of '-' and runs of '.' collapse to one (so no "..");
//   - '-' and '.' are trimmed from both ends, and a ".lock" suffix (any
//     case) is dropped, repeatedly;
//   - an empty result becomes "job", and "HEAD" becomes "HEAD-job";
//   - a result longer than 64 bytes is cut to 55 and gets "-" and the first
//     8 hex digits of the SHA-256 of the original name.
//
// The result is deterministic, but different names can give the same result
// ("a/b" and "a b" both give "a-b"), and names that differ only in case
// collide on case-insensitive file systems and in loose refs: callers
// detect collisions with strings.EqualFold on the results.
func SanitizeName(name string) string {
	b := make([]byte, 0, len(name))
	for _, r := range name {
		c := byte('-')
		if r < 0x80 && allowedNameByte(byte(r)) {
			c = byte(r)
		}
		if (c == '-' || c == '.') && len(b) > 0 && b[len(b)-1] == c {
			continue
		}
		b = append(b, c)
	}
	s := trimName(string(b))
	if len(s) > maxName {
		sum := sha256.Sum256([]byte(name))
		s = trimName(s[:maxName-9]) + "-" + hex.EncodeToString(sum[:4])
	}
	switch s {
	case "":
		return "job"
	case "HEAD":
		return "HEAD-job"
	}
	return s
}

func allowedNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '.' || c == '_' || c == '-'
}

// trimName drops leading and trailing '-' and '.' and any ".lock" suffix
// until none is left.
func trimName(s string) string {
	for {
		t := strings.Trim(s, "-.")
		if n := len(t); n >= 5 && strings.EqualFold(t[n-5:], ".lock") {
			t = t[:n-5]
		}
		if t == s {
			return s
		}
		s = t
	}
}

// ValidBranch reports whether name can be a branch (refs/heads/<name>), by
// the rules of `git check-ref-format --branch`: no component starting with
// '.' or ending in ".lock", no "..", "@{", "//", control characters, space
// or any of ~^:?*[\, not starting or ending with '/', not ending with '.',
// not "@", not starting with '-', not "HEAD".
func ValidBranch(name string) error {
	switch {
	case name == "":
		return errors.New("invalid branch name: empty")
	case strings.HasPrefix(name, "-"):
		return fmt.Errorf("invalid branch name %q: starts with '-'", name)
	case name == "HEAD":
		return fmt.Errorf("invalid branch name %q", name)
	}
	if err := checkRef(name, true); err != nil {
		return fmt.Errorf("invalid branch name %q: %w", name, err)
	}
	return nil
}

// checkRef applies git's check_refname_format rules to a ref name; oneLevel
// allows names without a '/' (as branch names relative to refs/heads/ are).
func checkRef(name string, oneLevel bool) error {
	if name == "" {
		return errors.New("empty")
	}
	if name == "@" {
		return errors.New("is \"@\"")
	}
	if strings.HasSuffix(name, ".") {
		return errors.New("ends with '.'")
	}
	components := strings.Split(name, "/")
	if !oneLevel && len(components) < 2 {
		return errors.New("has only one component")
	}
	for _, c := range components {
		switch {
		case c == "":
			return errors.New("has an empty component (leading, trailing or double '/')")
		case c[0] == '.':
			return errors.New("has a component starting with '.'")
		case strings.HasSuffix(c, ".lock"):
			return errors.New("has a component ending with \".lock\"")
		}
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c < 0x20 || c == 0x7f:
			return errors.New("contains a control character")
		case strings.IndexByte(" ~^:?*[\\", c) >= 0:
			return fmt.Errorf("contains %q", c)
		case c == '.' && i+1 < len(name) && name[i+1] == '.':
			return errors.New("contains \"..\"")
		case c == '@' && i+1 < len(name) && name[i+1] == '{':
			return errors.New("contains \"@{\"")
		}
	}
	return nil
}
