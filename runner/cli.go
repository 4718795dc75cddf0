package runner

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/pneuma-cli/pneuma/claude"
	"github.com/pneuma-cli/pneuma/policy"
	"github.com/pneuma-cli/pneuma/sandbox"
)

// initializeTimeout bounds the CLI's answer to the initialize request.
const initializeTimeout = 30 * time.Second

// cliSpec is what starting a CLI process takes: a job's attempt and a
// server session's CLI start the same way.
type cliSpec struct {
	binary, dir string
	env         []string
	opts        claude.Options
	policy      *policy.Spec
	// ask, when set, decides the permission prompts that the policy leaves
	// open (a server session's client); nil lets the CLI's mode decide.
	ask       func(context.Context, *claude.ControlRequest) claude.ControlResponse
	audit     *audit
	stream    io.Writer
	stderr    *tailFile
	stopGrace time.Duration
	parts     bool // keep the parts clients get in each event (claude.Config.Parts)
	// box is the sandbox the CLI runs in (nil: the job's, from ctx, if any).
	box *sandbox.Box
}

// startCLI starts the CLI and, when a policy or a client decides tool calls,
// routes them to pneuma before the first prompt: the policy's PreToolUse
// hook holds even in bypassPermissions, and permission prompts come to
// pneuma instead of being refused.
func startCLI(ctx context.Context, s cliSpec) (*claude.Process, error) {
	cfg := claude.Config{Binary: s.binary, Dir: s.dir, Env: s.env, Options: s.opts, Stream: s.stream, Stderr: s.stderr, Parts: s.parts}
	if err := confine(firstBox(s.box, boxOf(ctx)), &cfg); err != nil {
		return nil, err
	}
	if s.policy != nil || s.ask != nil {
		pol, err := compilePolicy(s.policy)
		if err != nil {
			return nil, err
		}
		cfg.Options.PermissionPromptStdio = true
		cfg.OnControl = (&controller{pol: pol, cwd: s.dir, audit: s.audit, ask: s.ask}).onControl
	}
	p, err := claude.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if cfg.OnControl == nil {
		return p, nil
	}
	ictx, cancel := context.WithTimeout(ctx, initializeTimeout)
	_, err = p.Initialize(ictx, policyHooks())
	cancel()
	if err == nil {
		return p, nil
	}
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 4*s.stopGrace+5*time.Second)
	_ = p.Stop(sctx, s.stopGrace) // ends in SIGKILL if it must; Wait below reaps it
	scancel()
	_, _ = p.Wait() // the error below says what went wrong
	return nil, fmt.Errorf("%s", withStderr(fmt.Sprintf("register the policy hook: %v", err), s.stderr))
}

// compilePolicy compiles a job's policy; nil is the empty policy, which
// allows every call and leaves it to the CLI's permission mode.
func compilePolicy(spec *policy.Spec) (*policy.Policy, error) {
	if spec == nil {
		spec = &policy.Spec{}
	}
	pol, errs := policy.Compile(*spec)
	if len(errs) > 0 {
		return nil, errPolicy(errs[0])
	}
	return pol, nil
}
