package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"
)

// ErrUnsupported is returned by Check on systems without bubblewrap
// support (everything but Linux).
var ErrUnsupported = errors.New("the sandbox runs on Linux only (bubblewrap); " +
	"on this system set sandbox: false or leave it out")

// checked caches Check's answer per $PATH (where bwrap is looked up).
var checked struct {
	mu      sync.Mutex
	answers map[string]checkAnswer
}

type checkAnswer struct {
	path string
	err  error
}

// Check finds bubblewrap and makes sure it can start a sandbox here (user
// namespaces allowed), once per process and $PATH. It returns bwrap's
// path, or an error naming what is missing.
func Check() (string, error) {
	checked.mu.Lock()
	defer checked.mu.Unlock()
	key := os.Getenv("PATH")
	a, ok := checked.answers[key]
	if !ok {
		a.path, a.err = check(runtime.GOOS)
		if checked.answers == nil {
			checked.answers = map[string]checkAnswer{}
		}
		checked.answers[key] = a
	}
	return a.path, a.err
}

func check(goos string) (string, error) {
	if goos != "linux" {
		return "", fmt.Errorf("%w (this is %s)", ErrUnsupported, goos)
	}
	path, err := exec.LookPath("bwrap")
	if err != nil {
		return "", errors.New("sandbox: bubblewrap (bwrap) is not installed: install it (Debian/Ubuntu: apt-get install bubblewrap)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	args := append(append([]string{}, namespaceFlags...), "--ro-bind", "/", "/", "--proc", "/proc", "--", "true")
	cmd := exec.CommandContext(ctx, path, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("sandbox: bubblewrap cannot create its namespaces here (user namespaces disabled? check kernel.unprivileged_userns_clone and the container's seccomp profile; --disable-userns needs bubblewrap 0.8 or later): %v: %s",
			err, strings.TrimSpace(stderr.String()))
	}
	return path, nil
}
