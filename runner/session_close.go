package runner

import (
	"context"
)

// Stage 4 of a session: the finish stage of a job (finish.go). Close ends
// the session's run: the CLI stops (the stop ladder, as for a job whose run
// is interrupted), leftover work is committed on the session's branch, what
// changed is recorded, the transcript archived, and a clean worktree parked
// as a spare for the next session or run (one with work stays). Shutdown
// (the server stopping) does the same but keeps the worktree, so that a
// restarted server resumes the session in it.

// Close ends the session for good and says what it changed.
func (s *Session) Close(ctx context.Context) (SessionSummary, error) {
	if err := s.end(KeepNever); err != nil {
		return SessionSummary{}, err
	}
	sum := s.summary()
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
	if err := s.end(KeepAlways); err != nil {
		return err
	}
	s.mu.Lock()
	s.setStatus(SessionIdle)
	s.mu.Unlock()
	return nil
}

// end refuses new messages, denies pending permission requests, and ends
// the session's run (its CLI stops; its finish stage runs with keep),
// waiting until it is done.
func (s *Session) end(keep KeepPolicy) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrSessionClosed
	}
	s.closed = true
	s.queue = nil
	s.denyPending()
	s.mu.Unlock()
	s.r.setKeep(keep)
	s.cancel()
	<-s.done // the finish stage bounds its own time
	return nil
}

// summary is what the session's finished run left.
func (s *Session) summary() SessionSummary {
	res := s.res
	return SessionSummary{Status: res.Status, Reason: res.Reason, Commit: res.Commit, FilesChanged: res.FilesChanged,
		Insertions: res.Insertions, Deletions: res.Deletions, Transcript: res.Transcript, Patch: s.rec.dir.Patch(), Warnings: res.Error}
}

// stateLocked is State for a caller that holds mu.
func (s *Session) stateLocked() SessionState {
	st := s.st
	st.PendingPermissions = append([]PendingPermission{}, s.st.PendingPermissions...)
	return st
}
