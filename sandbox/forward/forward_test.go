package forward

import (
	"bufio"
	"strings"
	"testing"
)

func TestParseForward(t *testing.T) {
	f, err := parseForward([]string{"--socket", "/s", "--listen", "3128", "--raw", "80", "--", "claude", "-p"})
	if err != nil || f.socket != "/s" || f.listen != 3128 || len(f.raw) != 1 || strings.Join(f.argv, " ") != "claude -p" {
		t.Errorf("parseForward = %+v, %v", f, err)
	}
	for _, bad := range [][]string{{"--listen", "0", "--socket", "/s", "--", "x"}, {"--socket", "/s", "--listen", "1"}, {"--what", "1"}, {"--socket"}} {
		if _, err := parseForward(bad); err == nil {
			t.Errorf("parseForward(%q) accepted", bad)
		}
	}
}

// tunnelOpened reads the whole answer to a CONNECT, and only a 200 opens.
func TestTunnelOpened(t *testing.T) {
	for resp, want := range map[string]bool{
		"HTTP/1.1 200 Connection established\r\n\r\nDATA":       true,
		"HTTP/1.1 200 OK\r\nX: y\r\n\r\n":                       true,
		"HTTP/1.1 403 Forbidden\r\nContent-Length: 3\r\n\r\nno": false,
		"HTTP/1.1 200 OK\r\n":                                   false,
		"garbage\r\n\r\n":                                       false,
	} {
		br := bufio.NewReader(strings.NewReader(resp))
		if got := tunnelOpened(br); got != want {
			t.Errorf("tunnelOpened(%q) = %v, want %v", resp, got, want)
		}
		if want {
			if rest, _ := br.ReadString(0); strings.HasPrefix(resp, "HTTP/1.1 200 Connection") && rest != "DATA" {
				t.Errorf("bytes after the header: %q", rest)
			}
		}
	}
}
