package claude

import (
	"strings"
	"testing"
	"time"
)

func TestDecodeSpeedTmp(t *testing.T) {
	line := []byte(`{"type":"assistant","message":{"id":"m","content":[{"type":"text","text":"` + strings.Repeat("x", 20<<20) + `"}]},"session_id":"s"}`)
	start := time.Now()
	ev := Decode(line)
	t.Logf("decode 20MB: %v (err %v)", time.Since(start), ev.Err)
}
