package serve

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"slices"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/pneuma-cli/pneuma/internal/redact"
	"github.com/pneuma-cli/pneuma/internal/safefile"
	"github.com/pneuma-cli/pneuma/internal/text"
	"github.com/pneuma-cli/pneuma/runner"
)

// The approval page: GET shows the request, POST (from the page's form)
// decides it. Both need no bearer token, only the link's token; the host
// check, the body limit and the security headers still apply (mount).

// approvePage is the page's view of a request.
type approvePage struct {
	Error    string
	Done     string
	Token    string
	CSRF     string
	Session  string
	Name     string
	Repo     string
	Branch   string
	Model    string
	Tool     string
	Path     string
	Diff     []diffLine
	Input    string
	Expires  string
	Editable bool
}

// diffLine is a line of an Edit's or a Write's change.
type diffLine struct {
	Op, Text string
}

var approveTmpl = template.Must(template.New("approve").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin"><title>pneuma: permission request</title><link rel="stylesheet" href="/app.css"></head>
<body><main id="main" class="approve">
<h1>Permission request</h1>
{{if .Error}}<p class="error" role="alert" id="link-error">{{.Error}}</p>
{{else if .Done}}<p role="status" id="link-done">{{.Done}}</p>
{{else}}
<dl>
<dt>Who asks</dt><dd>session <code>{{.Session}}</code>{{if .Name}} ({{.Name}}){{end}}{{if .Repo}}, {{.Repo}}{{end}}{{if .Branch}} on <code>{{.Branch}}</code>{{end}}{{if .Model}}, {{.Model}}{{end}}</dd>
<dt>Tool</dt><dd><code id="tool">{{.Tool}}</code>{{if .Path}} on <code>{{.Path}}</code>{{end}}</dd>
<dt>Link expires</dt><dd>{{.Expires}}</dd>
</dl>
{{if .Diff}}<h2>Change</h2><pre class="diff" id="diff">{{range .Diff}}<span class="diff-{{.Op}}">{{if eq .Op "add"}}+{{else if eq .Op "del"}}-{{else}} {{end}} {{.Text}}</span>
{{end}}</pre>{{end}}
<form method="post" action="/approve/{{.Token}}">
<input type="hidden" name="csrf" value="{{.CSRF}}">
<h2>Input</h2>
<textarea name="updated_input" rows="12" cols="80" spellcheck="false" aria-label="tool input">{{.Input}}</textarea>
<p>The input is shown with secrets redacted. <strong>Allow</strong> runs the tool as asked; <strong>Allow with edit</strong> runs it with the input above.</p>
<p><button type="submit" name="decision" value="allow" id="allow">Allow</button>
{{if .Editable}}<button type="submit" name="decision" value="edit" id="allow-edit">Allow with edit</button>{{end}}
<button type="submit" name="decision" value="deny" id="deny">Deny</button></p>
</form>
{{end}}
</main></body></html>
`))

// renderApprove writes the page with status.
func renderApprove(w http.ResponseWriter, status int, p approvePage) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	// With no-referrer, browsers send the form's POST with Origin: null;
	// same-origin lets them name this server, and still sends the link
	// (in the Referer) to no one else.
	h.Set("Referrer-Policy", "same-origin")
	w.WriteHeader(status)
	_ = approveTmpl.Execute(w, p)
}

// linkStatus is the HTTP status of a refused link.
func linkStatus(err error) int {
	switch {
	case errors.Is(err, errLinkExpired), errors.Is(err, errLinkUsed):
		return http.StatusGone
	case errors.Is(err, errLinkAnswered):
		return http.StatusConflict
	case errors.Is(err, errLinkInvalid):
		return http.StatusForbidden
	}
	return http.StatusNotFound
}

// linkRequest finds the pending request a token names, or why it cannot.
func (s *Server) linkRequest(tok string) (linkClaims, *entry, PendingPermission, error) {
	if s.links == nil {
		return linkClaims{}, nil, PendingPermission{}, errors.New("this server makes no approval links (it has no --public-url)")
	}
	c, err := s.links.parse(tok)
	if err != nil {
		return c, nil, PendingPermission{}, err
	}
	if s.links.wasUsed(c) {
		return c, nil, PendingPermission{}, errLinkUsed
	}
	e := s.sessions.get(c.session)
	if e == nil {
		return c, nil, PendingPermission{}, errLinkAnswered
	}
	st := e.snapshot()
	i := slices.IndexFunc(st.PendingPermissions, func(p PendingPermission) bool { return p.RequestID == c.request })
	if i < 0 {
		return c, nil, PendingPermission{}, errLinkAnswered
	}
	return c, e, st.PendingPermissions[i], nil
}

// approveGet shows the request; it decides nothing.
func (s *Server) approveGet(w http.ResponseWriter, r *http.Request) {
	tok := r.PathValue("token")
	c, e, p, err := s.linkRequest(tok)
	if err != nil {
		renderApprove(w, linkStatus(err), approvePage{Error: err.Error()})
		return
	}
	st := e.snapshot()
	page := approvePage{Token: tok, CSRF: s.links.csrf(tok), Session: e.id, Name: st.Name, Repo: st.Repo, Branch: st.Branch,
		Model: st.Model, Tool: p.ToolName, Input: text.Truncate(redact.String(marshalIndent(p.Input)), MaxBody/2),
		Expires: c.expires.UTC().Format("2006-01-02 15:04:05 UTC")}
	page.Path, page.Diff = toolDiff(p.ToolName, p.Input, st.Worktree)
	page.Editable = !strings.Contains(page.Input, redact.Marker)
	renderApprove(w, http.StatusOK, page)
}

// approvePost decides the request: allow, deny, or allow with the page's
// edited input. The form must carry the page's CSRF token and come from
// the server's own origin.
func (s *Server) approvePost(w http.ResponseWriter, r *http.Request) {
	tok := r.PathValue("token")
	if !s.sameOriginForm(r) {
		renderApprove(w, http.StatusForbidden, approvePage{Error: "this form was not sent from the approval page: nothing was decided"})
		return
	}
	if err := r.ParseForm(); err != nil {
		renderApprove(w, http.StatusBadRequest, approvePage{Error: "the form could not be read: nothing was decided"})
		return
	}
	c, e, _, err := s.linkRequest(tok)
	if err != nil {
		renderApprove(w, linkStatus(err), approvePage{Error: err.Error()})
		return
	}
	if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(s.links.csrf(tok))) != 1 {
		renderApprove(w, http.StatusForbidden, approvePage{Error: "this form was not sent from the approval page: nothing was decided"})
		return
	}
	d, msg := linkDecision(r.PostForm)
	if msg != "" {
		renderApprove(w, http.StatusBadRequest, approvePage{Error: msg + ": nothing was decided"})
		return
	}
	if !s.links.use(c) {
		renderApprove(w, http.StatusGone, approvePage{Error: errLinkUsed.Error()})
		return
	}
	sess := e.current()
	if sess == nil {
		renderApprove(w, http.StatusConflict, approvePage{Error: errLinkAnswered.Error()})
		return
	}
	if err := sess.Answer(c.request, d); err != nil {
		if errors.Is(err, ErrPermissionResolved) || errors.Is(err, ErrNoSuchPermission) {
			err = errLinkAnswered
		}
		renderApprove(w, linkStatus(err), approvePage{Error: err.Error()})
		return
	}
	done := "Denied."
	if d.Behavior == "allow" {
		done = "Allowed."
	}
	renderApprove(w, http.StatusOK, approvePage{Done: done + " The session continues; this link is used up."})
}

// linkDecision reads the form's decision; msg says what is wrong.
func linkDecision(f url.Values) (d PermissionDecision, msg string) {
	d.By = runner.ByLink
	switch f.Get("decision") {
	case "allow":
		d.Behavior = "allow"
	case "deny":
		d.Behavior, d.Message = "deny", "The user denied this tool call from a notification's link."
	case "edit":
		in := strings.TrimSpace(f.Get("updated_input"))
		var obj map[string]any
		if json.Unmarshal([]byte(in), &obj) != nil {
			return d, "the edited input is not a JSON object"
		}
		if strings.Contains(in, redact.Marker) {
			return d, "the edited input still holds " + redact.Marker + " in place of a secret"
		}
		d.Behavior, d.UpdatedInput = "allow", json.RawMessage(in)
	default:
		return d, "the decision must be allow, edit or deny"
	}
	return d, ""
}

// sameOriginForm accepts a form POST only from a page of this server: an
// Origin header (browsers send it on POST) must be the server's own, and
// the body must be a plain form.
func (s *Server) sameOriginForm(r *http.Request) bool {
	ct, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";")
	if strings.TrimSpace(ct) != "application/x-www-form-urlencoded" {
		return false
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" || origin == "null" {
		return origin == "" // a non-browser client; the CSRF token still binds it to a rendered page
	}
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	if u.Host == r.Host {
		return true
	}
	if s.links != nil {
		if pu, err := url.Parse(s.links.public); err == nil && strings.EqualFold(pu.Scheme+"://"+pu.Host, origin) {
			return true
		}
	}
	return false
}

// toolDiff is what an Edit, MultiEdit or Write would change, as lines
// (Write: against the file as it is in the session's worktree, see
// writeDiff); none for other tools. Secrets are redacted.
func toolDiff(tool string, input json.RawMessage, worktree string) (path string, lines []diffLine) {
	var in struct {
		FilePath  string `json:"file_path"`
		OldString string `json:"old_string"`
		NewString string `json:"new_string"`
		Content   string `json:"content"`
		Edits     []struct {
			OldString string `json:"old_string"`
			NewString string `json:"new_string"`
		} `json:"edits"`
	}
	if json.Unmarshal(input, &in) != nil {
		return "", nil
	}
	add := func(op, s string) {
		for _, l := range strings.Split(redact.String(s), "\n") {
			if len(lines) < maxDiffLines {
				lines = append(lines, diffLine{op, l})
			}
		}
	}
	switch tool {
	case "Edit":
		add("del", in.OldString)
		add("add", in.NewString)
	case "MultiEdit":
		for _, e := range in.Edits {
			add("del", e.OldString)
			add("add", e.NewString)
		}
	case "Write":
		lines = writeDiff(in.FilePath, in.Content, worktree)
	default:
		return "", nil
	}
	return in.FilePath, lines
}

// maxDiffLines bounds the lines of a change the page shows.
const maxDiffLines = 2000

// writeDiff is a Write's change against the file as it is now: a unified
// diff's hunks (three lines of context) when the file is in the session's
// worktree, its whole new content as added lines when the file is new. A
// file outside the worktree (a symlink in it resolved), over safefile's
// size cap or not a regular file is not read: the page shows the new
// content after a line that says the current one is not shown.
func writeDiff(path, content, worktree string) []diffLine {
	var lines []diffLine
	emit := func(op, s string) {
		if len(lines) < maxDiffLines {
			lines = append(lines, diffLine{op, redact.String(s)})
		}
	}
	whole := func() []diffLine {
		for _, l := range strings.Split(content, "\n") {
			emit("add", l)
		}
		return lines
	}
	if worktree == "" {
		emit("note", "(the file as it is now is not shown: the session has no worktree)")
		return whole()
	}
	old, err := safefile.Read(path, []string{worktree}, safefile.MaxSize)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return whole() // a new file
	case err != nil:
		emit("note", "(the file as it is now is not shown: it is outside the session's worktree, too large or not a regular file)")
		return whole()
	}
	u, err := udiff.ToUnifiedDiff(path, path, string(old), udiff.Lines(string(old), content), udiff.DefaultContextLines)
	if err != nil {
		emit("note", "(the file as it is now is not shown: "+err.Error()+")")
		return whole()
	}
	if len(u.Hunks) == 0 {
		emit("note", "(no change: the file already has this content)")
	}
	for _, h := range u.Hunks {
		emit("hunk", fmt.Sprintf("@@ line %d @@", h.FromLine))
		for _, l := range h.Lines {
			emit(diffOps[l.Kind], strings.TrimSuffix(l.Content, "\n"))
		}
	}
	return lines
}

// diffOps names a diff line's kind as the page's classes do.
var diffOps = map[udiff.OpKind]string{udiff.Delete: "del", udiff.Insert: "add", udiff.Equal: "ctx"}
