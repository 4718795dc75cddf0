package serve

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/pneuma-cli/pneuma/internal/safefile"
	"github.com/pneuma-cli/pneuma/jobfile"
	"github.com/pneuma-cli/pneuma/notify"
	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/runner"
)

// notifyTargets checks a client's notify: targets: allowed only under
// --client-allow notify (each URL is a request the server makes, to any
// host the client names), each target valid, its secret_file under a root.
func (c *policyCheck) notifyTargets(key string, targets []jobfile.Notify) error {
	if err := c.gated(key, "notify"); err != nil {
		return err
	}
	for i, t := range targets {
		field := fmt.Sprintf("%s[%d]", key, i)
		if probs := notifyTarget(t).Check(); len(probs) > 0 {
			return &jobfile.DecodeError{Problems: []jobfile.Problem{{Pos: jobfile.Pos{Path: field}, Msg: strings.Join(probs, "; ")}}}
		}
		if t.SecretFile != "" {
			if err := c.path(field+".secret_file", t.SecretFile); err != nil {
				return err
			}
		}
	}
	return nil
}

func notifyTarget(t jobfile.Notify) notify.Target {
	return notify.Target{URL: t.URL, Format: t.Format, Events: t.Events, SecretFile: t.SecretFile}
}

// runNotifier is the notifier of a run's own notify: targets (nil for
// none), its secret files read under the roots; stop delivers what is
// left within a bounded time.
func (s *Server) runNotifier(p *runner.Plan) (*notify.Notifier, func(), error) {
	if len(p.Notify) == 0 {
		return nil, func() {}, nil
	}
	targets := make([]notify.Target, len(p.Notify))
	for i, t := range p.Notify {
		targets[i] = notifyTarget(t)
	}
	n, err := notify.New(targets, notify.Options{Logf: s.cfg.Logf,
		ReadFile: func(path string) ([]byte, error) { return safefile.Read(path, s.cfg.Roots, 4<<10) }})
	if err != nil {
		return nil, nil, fmt.Errorf("run %s: %w", p.RunID, err)
	}
	return n, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		n.Close(ctx)
	}, nil
}

// withRunNotifier runs exec with the server's run options and, when the
// plan has notify: targets, a notifier of its own told of the run too.
func (s *Server) withRunNotifier(p *runner.Plan, ru *run, exec func(runner.Options) (*report.Report, error)) (*report.Report, error) {
	o := s.runOptions(ru)
	n, stop, err := s.runNotifier(p)
	if err != nil {
		return nil, err
	}
	defer stop()
	o.Reporter = n.Reporter(o.Reporter, s.consoleURL("runs"))
	return exec(o)
}
