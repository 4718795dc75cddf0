package runner

import (
	"context"
	"time"

	"github.com/pneuma-cli/pneuma/report"
)

// Stage 4 of a session: finish, as a job does. Close ends the CLI
// gracefully, commits leftover work on the session's branch, records what
// changed, archives the transcript and removes a clean worktree. Shutdown
// (the server stopping) does the same but keeps the worktree, so that a
// restarted server resumes the session in it.

// Close ends the session for good and says what it changed.
func (s *Session) Close(ctx context.Context) (SessionSummary, error) {
	if err := s.end(ctx); err != nil {
		return SessionSummary{}, err
	}
	sum := s.finish(ctx, true)
	s.mu.Lock()
	s.setStatus(SessionClosed)
	sum.State = s.stateLocked()
	s.mu.Unlock()
	return sum, nil
}

// Shutdown stops the session for a server stop: the running turn is
// interrupted, the CLI ends, work is committed, the worktree stays. The
// state a restart restores is State() after it.
func (s *Session) Shutdown(ctx context.Context) error {
	if err := s.end(ctx); err != nil {
		return err
	}
	s.finish(ctx, false)
	s.mu.Lock()
	s.setStatus(SessionIdle)
	s.mu.Unlock()
	return nil
}

// end refuses new messages, denies pending permission requests and stops
// the CLI (interrupt, stdin EOF, then signals), waiting until it is read to
// the end.
func (s *Session) end(ctx context.Context) error {
	s.startMu.Lock() // a CLI being started is stopped below, not left behind
	defer s.startMu.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrSessionClosed
	}
	s.closed = true
	s.denyPending()
	p, done := s.proc, s.readerDone
	s.mu.Unlock()
	if p == nil {
		return nil
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 4*s.o.StopGrace+5*time.Second)
	defer cancel()
	_ = p.Stop(sctx, s.o.StopGrace) // ends in SIGKILL if it must; the reader reports the exit
	<-done
	return nil
}

// finish commits leftovers, records changes and archives the transcript;
// remove also removes a clean worktree.
func (s *Session) finish(ctx context.Context, remove bool) SessionSummary {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	j := s.plan.Job
	res := &report.Job{Status: report.StatusSucceeded}
	f := &finish{git: s.git, job: j, res: res, rec: s.rec, lapT: time.Now()}
	var head string
	if j.UseWorktree {
		head = f.commitLeftovers(ctx, "server session "+s.o.ID)
	} else if h, err := s.git.Head(ctx, j.Dir); err == nil {
		head = h
	}
	f.recordChanges(ctx, head)
	s.mu.Lock()
	cli := s.st.CLISessionID
	s.mu.Unlock()
	f.archiveTranscript(ctx, s.tx, childEnv(s.o.Environ, j.Env), cli)
	if remove && j.UseWorktree && f.clean {
		if err := s.git.Remove(ctx, j.Repo, j.Dir); err != nil {
			f.warn("remove worktree: %v", err)
		}
	}
	if err := s.rec.close(); err != nil {
		f.warn("%v", err)
	}
	closeSandbox(s.box)
	return SessionSummary{Commit: res.Commit, FilesChanged: res.FilesChanged, Insertions: res.Insertions,
		Deletions: res.Deletions, Transcript: res.Transcript, Patch: s.rec.dir.Patch(), Warnings: res.Error}
}

// stateLocked is State for a caller that holds mu.
func (s *Session) stateLocked() SessionState {
	st := s.st
	st.PendingPermissions = append([]PendingPermission{}, s.st.PendingPermissions...)
	return st
}
