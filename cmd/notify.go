package cmd

import (
	"context"
	"errors"
	"fmt"
	stdio "io"
	"strings"
	"sync"
	"time"

	"github.com/pneuma-cli/pneuma/notify"
	"github.com/pneuma-cli/pneuma/runner"
	"github.com/pneuma-cli/pneuma/serve"
)

// notifyShutdown bounds the delivery of what is queued at exit: a dead
// receiver delays pneuma's exit by at most this.
const notifyShutdown = 10 * time.Second

// startNotify starts the notifier of the config file's notify: targets
// (nil without any); stop delivers what is left, within notifyShutdown.
func startNotify(ctx context.Context, io *IO, targets []notify.Target) (n *notify.Notifier, stop func(), err error) {
	if len(targets) == 0 {
		return nil, func() {}, nil
	}
	n, err = notify.New(targets, notify.Options{Logf: func(format string, args ...any) {
		fmt.Fprintf(io.ErrOut, "warning: "+format+"\n", args...)
	}})
	if err != nil {
		return nil, nil, &UsageError{Err: fmt.Errorf("settings: %w", err)}
	}
	return n, func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), notifyShutdown)
		defer cancel()
		n.Close(sctx)
	}, nil
}

// sayApprovalLinks tells at start-up whether permission notifications
// carry approval links: they need --public-url.
func sayApprovalLinks(io *IO, n *notify.Notifier, srv *serve.Server) {
	if !n.Wants(notify.EventPermissionRequest) {
		return
	}
	if ok, ttl := srv.ApprovalLinks(); ok {
		fmt.Fprintf(io.ErrOut, "pneuma serve: permission notifications carry approval links, each good for one decision within %s\n", ttl)
		return
	}
	fmt.Fprintln(io.ErrOut, "pneuma serve: permission notifications carry no approval link: give --public-url (the URL people reach this server by) to add one")
}

// syncErr returns io with an ErrOut safe for concurrent writers: the
// notifier logs from its own goroutines while the run prints its lines.
func syncErr(io *IO) *IO {
	c := *io
	c.ErrOut = &lockedWriter{w: io.ErrOut}
	return &c
}

type lockedWriter struct {
	mu sync.Mutex
	w  stdio.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// runTargets are a run's notification targets: the config file's, then the
// jobs file's (a bad one of those is named by the jobs file).
func runTargets(config []notify.Target, plan *runner.Plan) ([]notify.Target, error) {
	out := append([]notify.Target(nil), config...)
	var probs []string
	for i, t := range plan.Notify {
		nt := notify.Target{URL: t.URL, Format: t.Format, Events: t.Events, SecretFile: t.SecretFile}
		for _, p := range nt.Check() {
			probs = append(probs, fmt.Sprintf("%s: notify[%d]: %s", plan.JobsFile, i, p))
		}
		out = append(out, nt)
	}
	if len(probs) > 0 {
		return nil, &ExitError{Code: ExitUsage, Err: errors.New(strings.Join(probs, "\n"))}
	}
	return out, nil
}
