package redact

import (
	"math"
	"regexp"
	"strings"
)

// This file decides, for Secrets, whether a value given to a secret-looking
// name is a secret or ordinary code.

// secretNameRe matches a whole name that String treats as naming a secret.
var secretNameRe = regexp.MustCompile(`^` + secretName + `$`)

// IsSecretValue reports whether value, given to the name name (a JSON key,
// a variable), is a secret by Secrets' standard: the name names a secret
// and the value looks like one.
func IsSecretValue(name, value string) bool {
	return secretNameRe.MatchString(name) && namedValue(name, value)
}

// namedValue judges the value of a secret-looking name: passwords by
// passwordValue, keys, tokens and secrets by randomValue.
func namedValue(name, value string) bool {
	n := strings.ToLower(name)
	if strings.Contains(n, "passw") {
		return passwordValue(name, value)
	}
	return randomValue(name, value)
}

// unquote strips the quotes (", ', \") around a value.
func unquote(v string) string {
	for _, q := range []string{`\"`, `"`, `'`} {
		if len(v) >= 2*len(q) && strings.HasPrefix(v, q) && strings.HasSuffix(v, q) {
			return v[len(q) : len(v)-len(q)]
		}
	}
	return v
}

// notAValue rejects what code puts where a secret could be: nothing, an
// earlier marker, literals, numbers, variables and expressions.
func notAValue(v string) bool {
	if v == "" || strings.Contains(v, Marker) {
		return true
	}
	if strings.ContainsAny(v, " \t\r\n(){}[]<>,;`$|\\*") {
		return true // an expression, a template, a reference, prose
	}
	switch strings.ToLower(v) {
	case "true", "false", "null", "none", "nil", "undefined", "yes", "no", "on", "off":
		return true
	}
	digits := 0
	for i := 0; i < len(v); i++ {
		if v[i] >= '0' && v[i] <= '9' {
			digits++
		}
	}
	return digits == len(v) // a number
}

// identifier reports whether v reads like a name in code: letters, '_' and
// '.' only (self.api_key, os.environ, my_token).
func identifier(v string) bool {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// passwordValue: anything of four or more bytes that is not a word, a
// literal or an expression.
func passwordValue(_, value string) bool {
	v := unquote(value)
	return len(v) >= 4 && !notAValue(v) && !identifier(v)
}

// randomValue: a long value of mixed characters with high entropy, as keys
// and tokens are; words, paths and names are not.
func randomValue(_, value string) bool {
	v := unquote(value)
	if len(v) < 12 || notAValue(v) || identifier(v) {
		return false
	}
	var lower, upper, digit, other bool
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case 'a' <= c && c <= 'z':
			lower = true
		case 'A' <= c && c <= 'Z':
			upper = true
		case '0' <= c && c <= '9':
			digit = true
		default:
			other = true
		}
	}
	classes := 0
	for _, b := range []bool{lower, upper, digit, other} {
		if b {
			classes++
		}
	}
	return classes >= 2 && digit && entropy(v) >= 3.0 || classes >= 3 && entropy(v) >= 3.3
}

// entropy is the Shannon entropy of v's bytes, in bits per byte.
func entropy(v string) float64 {
	var counts [256]int
	for i := 0; i < len(v); i++ {
		counts[v[i]]++
	}
	h := 0.0
	n := float64(len(v))
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}
