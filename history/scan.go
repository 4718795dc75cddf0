package history

import (
	"bytes"
	"encoding/json"
	"errors"
)

// This file is the fast path of the usage scanner: it extracts the handful of
// fields accounting needs from a transcript line and skips everything else
// (multi-MB contents are mostly strings, skipped at memchr speed) instead of
// decoding the whole line with encoding/json.

var errSyntax = errors.New("malformed JSON line")

// lineInfo is what scanLine extracts from one line. String fields are kept
// raw (quotes and escapes included, pointing into the line) so that a line
// costs no allocation; str and strIs read them.
type lineInfo struct {
	typ, timestamp, sessionID, cwd, requestID  []byte
	uuid, promptSource                         []byte
	isSidechain, isAPIError, isMeta, isCompact bool
	parentNull                                 bool // "parentUuid":null
	msgID, model, role                         []byte
	usage                                      []byte // raw message.usage object
	u                                          Usage  // usage read (see readUsage)
	usageBad                                   bool   // usage is not an object parseUsage reads
	content                                    []byte // raw message.content (only when asked)
}

func (li *lineInfo) reset() { *li = lineInfo{} }

// scanLine fills li from line. It returns errSyntax for anything that is not a
// JSON object.
func scanLine(line []byte, li *lineInfo, wantContent bool) error {
	return scanLineFrom(line, li, 0, wantContent)
}

// scanLineFrom is scanLine for a line whose head scanHead read into li
// already: from is what scanHead returned (0 to read the whole line).
func scanLineFrom(line []byte, li *lineInfo, from int, wantContent bool) error {
	if from == 0 {
		li.reset()
		i := skipWS(line, 0)
		if i >= len(line) || line[i] != '{' {
			return errSyntax
		}
		from = i
	}
	// Each byte is walked once: "message" is read as it is skipped.
	end, err := scanMembers(line, from, func(key []byte, vs int) (int, error) {
		if string(key) == "message" && line[vs] == '{' {
			return scanMembers(line, vs, func(k []byte, s int) (int, error) {
				if string(k) == "usage" && line[s] == '{' {
					return li.readUsage(line, s)
				}
				e, err := skipValue(line, s)
				if err == nil {
					li.message(k, line[s:e], wantContent)
				}
				return e, err
			})
		}
		ve, err := skipValue(line, vs)
		if err == nil {
			li.top(key, line[vs:ve])
		}
		return ve, err
	})
	if err != nil {
		return err
	}
	if skipWS(line, end) != len(line) {
		return errSyntax
	}
	return nil
}

// scanHead reads the members of a line's top-level object into li (reset
// first) up to "type" or to the first object or array value, whichever
// comes first: the CLI writes "type" before "message" and "toolUseResult",
// which hold a line's bulk. line may be the beginning of a line only. typed
// reports whether li.typ was read (were "type" repeated, which the CLI never
// does, it is the first one). from is where scanLineFrom goes on, 0 when the
// head cannot be read (scanLineFrom then reads the whole line).
func scanHead(line []byte, li *lineInfo) (from int, typed bool) {
	li.reset()
	start := skipWS(line, 0)
	if start >= len(line) || line[start] != '{' {
		return 0, false
	}
	from = start // the opening brace: nothing read yet
	i := skipWS(line, start+1)
	for {
		if i >= len(line) || line[i] != '"' {
			return 0, false
		}
		ke, err := skipString(line, i)
		if err != nil {
			return 0, false
		}
		key := line[i+1 : ke-1]
		c := skipWS(line, ke)
		if c >= len(line) || line[c] != ':' {
			return 0, false
		}
		vs := skipWS(line, c+1)
		if vs >= len(line) || line[vs] == '{' || line[vs] == '[' {
			return from, false
		}
		ve, err := skipValue(line, vs)
		if err != nil || ve == len(line) { // a number may go on past a prefix
			return 0, false
		}
		li.top(key, line[vs:ve])
		i = skipWS(line, ve)
		if i >= len(line) || line[i] != ',' {
			return 0, string(key) == "type" && i < len(line) && line[i] == '}'
		}
		from = i // the comma before the next member
		if string(key) == "type" {
			return from, true
		}
		i = skipWS(line, i+1)
	}
}

// top records a top-level member of a line.
func (li *lineInfo) top(key, v []byte) {
	switch string(key) {
	case "type":
		li.typ = v
	case "timestamp":
		li.timestamp = v
	case "sessionId":
		li.sessionID = v
	case "cwd":
		li.cwd = v
	case "requestId":
		li.requestID = v
	case "uuid":
		li.uuid = v
	case "promptSource":
		li.promptSource = v
	case "parentUuid":
		li.parentNull = bytes.Equal(v, litNull)
	case "isSidechain":
		li.isSidechain = bytes.Equal(v, litTrue)
	case "isApiErrorMessage":
		li.isAPIError = bytes.Equal(v, litTrue)
	case "isMeta":
		li.isMeta = bytes.Equal(v, litTrue)
	case "isCompactSummary":
		li.isCompact = bytes.Equal(v, litTrue)
	}
}

// readUsage reads message.usage at line[i] == '{' as it skips it, and
// returns the index just past it. A usage object that parseUsage rejects
// leaves the line well-formed if skipValue accepts it (its brackets and
// strings are whole); li.usageBad then says so.
func (li *lineInfo) readUsage(line []byte, i int) (int, error) {
	e, err := parseUsageAt(line, i, &li.u)
	li.usageBad = err != nil
	if err != nil {
		if e, err = skipValue(line, i); err != nil {
			return 0, err
		}
	}
	li.usage = line[i:e]
	return e, nil
}

// message records a member of a line's message object.
func (li *lineInfo) message(key, v []byte, wantContent bool) {
	switch string(key) {
	case "id":
		li.msgID = v
	case "model":
		li.model = v
	case "role":
		li.role = v
	case "content":
		if wantContent {
			li.content = v
		}
	}
}

// plainString returns the content of a raw JSON string without escapes, and
// false for anything else (escapes, other values).
func plainString(v []byte) ([]byte, bool) {
	if len(v) < 2 || v[0] != '"' {
		return nil, false
	}
	inner := v[1 : len(v)-1]
	if bytes.IndexByte(inner, '\\') >= 0 {
		return nil, false
	}
	return inner, true
}

// strIs reports whether strValue(v) == s, without allocating for the
// common unescaped spelling.
func strIs(v []byte, s string) bool {
	if inner, ok := plainString(v); ok {
		return string(inner) == s
	}
	return strValue(v) == s
}

// strEmpty reports whether strValue(v) == "".
func strEmpty(v []byte) bool {
	if inner, ok := plainString(v); ok {
		return len(inner) == 0
	}
	return strValue(v) == ""
}

// parseUsage reads a raw message.usage object into u without encoding/json
// (it runs once per assistant line). Counts may be spelled as floats.
func parseUsage(b []byte, u *Usage) error {
	_, err := parseUsageAt(b, 0, u)
	return err
}

// parseUsageAt is parseUsage of the object at b[i]; it returns the index
// just past it.
func parseUsageAt(b []byte, i int, u *Usage) (int, error) {
	*u = Usage{}
	if i >= len(b) || b[i] != '{' {
		return 0, errSyntax
	}
	return scanMembers(b, i, func(k []byte, vs int) (int, error) {
		var dst *int64
		switch string(k) {
		case "input_tokens":
			dst = &u.InputTokens
		case "output_tokens":
			dst = &u.OutputTokens
		case "cache_creation_input_tokens":
			dst = &u.CacheCreationInputTokens
		case "cache_read_input_tokens":
			dst = &u.CacheReadInputTokens
		case "cache_creation":
			if b[vs] == '{' {
				return scanMembers(b, vs, func(k []byte, s int) (int, error) {
					var dst *int64
					switch string(k) {
					case "ephemeral_5m_input_tokens":
						dst = &u.CacheCreation.Ephemeral5m
					case "ephemeral_1h_input_tokens":
						dst = &u.CacheCreation.Ephemeral1h
					}
					return readCount(b, s, dst)
				})
			}
		}
		return readCount(b, vs, dst)
	})
}

// readCount returns the index just past the value at b[i], and stores it
// as a count in *dst when dst is not nil.
func readCount(b []byte, i int, dst *int64) (int, error) {
	if dst != nil {
		// The common spelling, digits, read as they are skipped.
		var n int64
		j := i
		for j < len(b) && j-i < 18 && b[j] >= '0' && b[j] <= '9' {
			n = n*10 + int64(b[j]-'0')
			j++
		}
		if j > i && j < len(b) && (b[j] == ',' || b[j] == '}') {
			*dst = n
			return j, nil
		}
	}
	e, err := skipValue(b, i)
	if err == nil && dst != nil {
		*dst = countOf(b[i:e])
	}
	return e, err
}

// countOf reads a raw JSON number as a token count (see count).
func countOf(v []byte) int64 {
	var n int64
	for i, c := range v {
		if c < '0' || c > '9' || i > 17 {
			return count(json.Number(strValueOrRaw(v)))
		}
		n = n*10 + int64(c-'0')
	}
	return n
}

// strValueOrRaw returns a quoted value's content, or the raw bytes.
func strValueOrRaw(v []byte) string {
	if len(v) > 0 && v[0] == '"' {
		return strValue(v)
	}
	return string(v)
}

var (
	litTrue = []byte("true")
	litNull = []byte("null")
)

// strValue returns the string a raw JSON string value holds, or "" for any
// other value.
func strValue(v []byte) string {
	if len(v) < 2 || v[0] != '"' {
		return ""
	}
	inner := v[1 : len(v)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner)
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return ""
	}
	return s
}

// scanObject walks the object starting at b[i] == '{', calling fn with each
// key (raw, without quotes) and the bounds of its value. It returns the index
// just past the closing brace.
func scanObject(b []byte, i int, fn func(key []byte, vs, ve int) error) (int, error) {
	return scanMembers(b, i, func(key []byte, vs int) (int, error) {
		ve, err := skipValue(b, vs)
		if err != nil {
			return 0, err
		}
		return ve, fn(key, vs, ve)
	})
}

// scanMembers walks the object starting at b[i] == '{', calling fn with each
// key (raw, without quotes) and the start of its value; fn returns the index
// just past the value (skipValue's, or its own when it reads the value). It
// returns the index just past the closing brace. It also goes on with an
// object from b[i] == ',' between two of its members.
func scanMembers(b []byte, i int, fn func(key []byte, vs int) (int, error)) (int, error) {
	open := b[i] == '{'
	i++ // '{' or ','
	i = skipWS(b, i)
	if open && i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		i = skipWS(b, i)
		if i >= len(b) || b[i] != '"' {
			return 0, errSyntax
		}
		ke, err := skipString(b, i)
		if err != nil {
			return 0, err
		}
		key := b[i+1 : ke-1]
		i = skipWS(b, ke)
		if i >= len(b) || b[i] != ':' {
			return 0, errSyntax
		}
		vs := skipWS(b, i+1)
		if vs >= len(b) {
			return 0, errSyntax
		}
		ve, err := fn(key, vs)
		if err != nil {
			return 0, err
		}
		i = skipWS(b, ve)
		if i >= len(b) {
			return 0, errSyntax
		}
		switch b[i] {
		case ',':
			i++
		case '}':
			return i + 1, nil
		default:
			return 0, errSyntax
		}
	}
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at b[i] == '"'.
func skipString(b []byte, i int) (int, error) {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return 0, errSyntax
		}
		q := j + k
		n := 0
		for p := q - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q + 1, nil
		}
		j = q + 1
	}
}

// skipValue returns the index just past the JSON value starting at b[i]. It
// checks structure (strings closed, brackets balanced and matched), not the
// spelling of literals and numbers.
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errSyntax
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		var buf [64]byte
		stack := buf[:0] // grows past 64 levels (valid JSON has no limit)
		for i < len(b) {
			c := b[i]
			switch c {
			case '"':
				e, err := skipString(b, i)
				if err != nil {
					return 0, err
				}
				i = e
				continue
			case '{', '[':
				stack = append(stack, c)
			case '}', ']':
				depth := len(stack)
				if depth == 0 || (c == '}') != (stack[depth-1] == '{') {
					return 0, errSyntax
				}
				stack = stack[:depth-1]
				if depth == 1 {
					return i + 1, nil
				}
			}
			i++
		}
		return 0, errSyntax
	default:
		j := i
		for j < len(b) {
			c := b[j]
			if c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				break
			}
			j++
		}
		if j == i {
			return 0, errSyntax
		}
		return j, nil
	}
}
