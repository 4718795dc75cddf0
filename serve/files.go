package serve

import (
	"bytes"
	"errors"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pneuma-cli/pneuma/history"
	"github.com/pneuma-cli/pneuma/internal/safefile"
	"github.com/pneuma-cli/pneuma/runner"
)

// health is GET /api/health.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	key := s.cfg.Getenv("ANTHROPIC_API_KEY") != ""
	oauth := s.cfg.Getenv("CLAUDE_CODE_OAUTH_TOKEN") != ""
	var warnings []string
	if key && oauth {
		warnings = append(warnings, "both ANTHROPIC_API_KEY and CLAUDE_CODE_OAUTH_TOKEN are set: the CLI uses the API key")
	}
	if !key && !oauth {
		warnings = append(warnings, "no ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN: the CLI needs its own login")
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"status":       "ok",
		"version":      s.cfg.Version,
		"cli_version":  s.cfg.CLIVersion,
		"sessions":     s.sessions.active(),
		"max_sessions": s.cfg.MaxSessions,
		"runs":         s.runs.running(),
		"credentials":  map[string]bool{"anthropic_api_key": key, "claude_code_oauth_token": oauth},
		"warnings":     append([]string{}, warnings...),
	})
}

// jobDir finds a run's job directory from the path, answering 404 itself.
func (s *Server) jobDir(w http.ResponseWriter, r *http.Request) (runner.JobDir, bool) {
	ru := s.runOf(w, r)
	if ru == nil {
		return "", false
	}
	job := r.PathValue("job")
	run := runLayout(&s.cfg).Run(ru.id)
	if dir, ok := jobDirNamed(run, job); ok {
		return dir, true
	}
	// Not a job's directory: a job's name ("fix the bug" is in
	// jobs/fix-the-bug), looked up in the run's plan.
	if slug, err := runner.PlannedSlug(string(run), job); err == nil {
		if dir, ok := jobDirNamed(run, slug); ok {
			return dir, true
		}
	}
	writeError(w, http.StatusNotFound, "no job %q in run %s", job, ru.id)
	return "", false
}

// jobDirNamed is the run's directory of the job whose slug is slug, if
// slug is one and the directory exists.
func jobDirNamed(run runner.RunDir, slug string) (runner.JobDir, bool) {
	if !validID(slug) {
		return "", false
	}
	fi, err := os.Stat(string(run.Job(slug)))
	return run.Job(slug), err == nil && fi.IsDir()
}

// MaxStreamTail is the most a stream tail answers (8 MiB): a tail that
// would pass it holds only the whole lines that fit, and says so in its
// TailCutHeader.
const MaxStreamTail = 8 << 20

// TailCutHeader is set ("true") on a stream tail that holds fewer lines
// than asked because they would pass MaxStreamTail.
const TailCutHeader = "Pneuma-Tail-Cut"

// jobStream is the last lines of a job's stream.jsonl (?tail=N, default
// 100), at most MaxStreamTail bytes of them.
func (s *Server) jobStream(w http.ResponseWriter, r *http.Request) {
	dir, ok := s.jobDir(w, r)
	if !ok {
		return
	}
	n := 100
	if t := r.URL.Query().Get("tail"); t != "" {
		v, err := strconv.Atoi(t)
		if err != nil || v < 1 || v > 100000 {
			writeJSON(w, http.StatusBadRequest, apiError{Error: "invalid query", Problems: []Problem{{Field: "tail", Message: "must be a number of lines from 1 to 100000"}}})
			return
		}
		n = v
	}
	data, cut, err := tailLines(dir.Stream(), n, MaxStreamTail)
	switch {
	case errors.Is(err, os.ErrNotExist):
		writeError(w, http.StatusNotFound, "the job has no stream (yet)")
		return
	case err != nil:
		s.cfg.Logf("%s %s: %v", r.Method, r.URL.Path, err)
		writeError(w, http.StatusInternalServerError, "the job's stream could not be read (the server's log says why)")
		return
	}
	if cut && len(data) == 0 {
		writeError(w, http.StatusRequestEntityTooLarge, "the stream's last line is larger than the %d bytes a tail may answer", MaxStreamTail)
		return
	}
	if cut {
		w.Header().Set(TailCutHeader, "true")
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	_, _ = w.Write(data) // a client gone mid-answer has nothing more to hear
}

// tailLines reads the last n lines of a file, from its end backwards, in
// at most limit bytes: cut is true when fewer lines than n fit (data then
// holds the whole lines that do, possibly none). Each chunk is read and
// its newlines counted once. Only a regular file is read, and the open
// never blocks (a named pipe put in the stream's place is an error, not a
// request that hangs).
func tailLines(path string, n int, limit int64) (data []byte, cut bool, err error) {
	f, st, err := safefile.Open(path, math.MaxInt64)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	const step = 64 << 10
	var chunks [][]byte
	var read int64
	need := n // newlines to find: one more when the file ends with one
	off := st.Size()
	// One byte over the limit tells whether the first line kept is whole.
	for off > 0 && read <= limit {
		size := min(off, step, limit+1-read)
		off -= size
		chunk := make([]byte, size)
		if _, err := f.ReadAt(chunk, off); err != nil && !errors.Is(err, io.EOF) {
			return nil, false, err
		}
		if read == 0 && chunk[size-1] == '\n' {
			need++
		}
		read += size
		chunks = append(chunks, chunk)
		if need -= bytes.Count(chunk, []byte("\n")); need <= 0 {
			break
		}
	}
	slices.Reverse(chunks)
	buf := bytes.Join(chunks, nil)
	trimmed := bytes.TrimSuffix(buf, []byte("\n"))
	for i := len(trimmed) - 1; i >= 0; i-- {
		if trimmed[i] == '\n' {
			if n--; n == 0 {
				return buf[i+1:], false, nil
			}
		}
	}
	if off == 0 {
		return buf, false, nil // the whole file is fewer lines than n
	}
	// Stopped at the limit: drop the line it cut into.
	if i := bytes.IndexByte(buf, '\n'); i >= 0 {
		return buf[i+1:], true, nil
	}
	return nil, true, nil
}

// MaxDiff is the largest diff.patch GET .../diff answers (32 MiB); a
// larger one is a 413 (the job's branch holds the changes).
const MaxDiff = 32 << 20

// jobDiff is a job's diff.patch, streamed: a regular file opened without
// blocking, at most MaxDiff bytes.
func (s *Server) jobDiff(w http.ResponseWriter, r *http.Request) {
	dir, ok := s.jobDir(w, r)
	if !ok {
		return
	}
	f, st, err := safefile.Open(dir.Patch(), MaxDiff)
	var tl *safefile.TooLargeError
	switch {
	case errors.Is(err, os.ErrNotExist):
		// A job that changed nothing has no diff.patch: its diff is empty.
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		return
	case errors.As(err, &tl):
		writeError(w, http.StatusRequestEntityTooLarge, "the job's diff is larger than the %d bytes this route answers: its branch holds the changes", MaxDiff)
		return
	case err != nil:
		s.cfg.Logf("%s %s: %v", r.Method, r.URL.Path, err)
		writeError(w, http.StatusInternalServerError, "the job's diff could not be read (the server's log says why)")
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Length", strconv.FormatInt(st.Size(), 10))
	_, _ = io.Copy(w, io.LimitReader(f, st.Size())) // a client gone mid-answer has nothing more to hear
}

// jobTranscript exports a job's archived transcript as HTML.
func (s *Server) jobTranscript(w http.ResponseWriter, r *http.Request) {
	dir, ok := s.jobDir(w, r)
	if !ok {
		return
	}
	matches, _ := filepath.Glob(filepath.Join(dir.Transcript(), "*.jsonl"))
	if len(matches) == 0 {
		writeError(w, http.StatusNotFound, "no archived transcript for this job")
		return
	}
	slices.Sort(matches)
	if f, ok := exportFormat(w, r); ok {
		s.export(w, r, matches[0], f)
	}
}

// exportFormat reads ?format=html|json|md|text (default html); a bad one is
// answered 400.
func exportFormat(w http.ResponseWriter, r *http.Request) (history.Format, bool) {
	fs := r.URL.Query().Get("format")
	if fs == "" {
		fs = "html"
	}
	f, err := history.ParseFormat(fs)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, apiError{Error: "invalid query", Problems: []Problem{{Field: "format", Message: err.Error()}}})
		return "", false
	}
	return f, true
}

// export streams a transcript in a format, as it is read (a transcript can
// be hundreds of MB); HTML is sandboxed by the route's CSP.
func (s *Server) export(w http.ResponseWriter, r *http.Request, path string, f history.Format) {
	if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
		writeError(w, http.StatusNotFound, "no transcript") // nothing of the path or why
		return
	}
	ctype := map[history.Format]string{
		history.FormatHTML: "text/html; charset=utf-8", history.FormatJSON: "application/x-ndjson",
		history.FormatMarkdown: "text/markdown; charset=utf-8", history.FormatText: "text/plain; charset=utf-8",
	}[f]
	w.Header().Set("Content-Type", ctype)
	if err := history.Export(r.Context(), w, path, history.ExportOptions{Format: f}); err != nil && r.Context().Err() == nil {
		// The status is sent already; the client sees a cut export, and the log says why.
		s.cfg.Logf("export %s: %v", path, err)
	}
}

func (s *Server) configDir() string { return history.ConfigDir(s.cfg.Getenv) }

// historyError answers a history that could not be read with a 500 that
// names no file (paths and link targets stay in the server's log).
func (s *Server) historyError(w http.ResponseWriter, r *http.Request, err error) {
	s.cfg.Logf("%s %s: %v", r.Method, r.URL.Path, err)
	writeError(w, http.StatusInternalServerError, "the history could not be read (the server's log says why)")
}

// historySessions is like `pneuma history list --json`, filtered by ?q=
// (a substring of the id, project or first prompt).
func (s *Server) historySessions(w http.ResponseWriter, r *http.Request) {
	corpus, err := history.Scan(r.Context(), s.configDir(), history.ScanOptions{Summary: true})
	if err != nil {
		s.historyError(w, r, err)
		return
	}
	q := strings.ToLower(r.URL.Query().Get("q"))
	out := []*history.SessionSummary{}
	for _, ss := range corpus.Sessions() {
		if q == "" || strings.Contains(strings.ToLower(ss.ID+"\x00"+ss.Project+"\x00"+ss.FirstPrompt), q) {
			out = append(out, ss)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// historySession exports one session (?format=html|json|md, default html).
// {id} is a session id or a unique prefix of one, never a path; an id that
// is not one, no such session and an unreadable transcript are one 404
// that says nothing of the files behind it.
func (s *Server) historySession(w http.ResponseWriter, r *http.Request) {
	f, ok := exportFormat(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	sf, err := history.ResolveID(r.Context(), s.configDir(), id)
	var amb *history.AmbiguousError
	switch {
	case errors.As(err, &amb):
		writeError(w, http.StatusConflict, "%v", err) // only ids of the history
		return
	case err != nil && r.Context().Err() == nil && !errors.Is(err, history.ErrNotFound) && history.IsSessionID(id):
		s.cfg.Logf("history session %q: %v", id, err) // the operator sees why; the client does not
		fallthrough
	case err != nil && !history.IsSessionID(id):
		writeError(w, http.StatusNotFound, "no history session with that id (an id is a session id, never a path)")
		return
	case err != nil:
		writeError(w, http.StatusNotFound, "no history session %q", id)
		return
	}
	s.export(w, r, sf.Path, f)
}

// historyUsage is `pneuma history usage --by day|session|model|project --json`.
func (s *Server) historyUsage(w http.ResponseWriter, r *http.Request) {
	by := r.URL.Query().Get("by")
	if by == "" {
		by = history.ByDay
	}
	if !slices.Contains([]string{history.ByDay, history.BySession, history.ByModel, history.ByProject}, by) {
		writeJSON(w, http.StatusBadRequest, apiError{Error: "invalid query", Problems: []Problem{{Field: "by", Message: "must be day, session, model or project"}}})
		return
	}
	corpus, err := history.Scan(r.Context(), s.configDir(), history.ScanOptions{})
	if err != nil {
		s.historyError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"by": by, "rows": corpus.UsageBy(by, time.Local), "total": corpus.Total()})
}
