package jobfile

import (
	"bytes"
	"regexp"
	"strings"
	"text/template"
)

// PullRequest is a job's pull_request field. Title and Body are
// text/template texts over TemplateData.
type PullRequest struct {
	Title  string   `yaml:"title" json:"title,omitempty"`
	Body   string   `yaml:"body" json:"body,omitempty"`
	Draft  bool     `yaml:"draft" json:"draft,omitempty"`
	Base   string   `yaml:"base" json:"base,omitempty"`
	Labels []string `yaml:"labels" json:"labels,omitempty"`
}

// TemplateData is what the title and body templates of a pull request see.
type TemplateData struct {
	Name, Result, Branch, Base, RunID   string
	FilesChanged, Insertions, Deletions int
	CostUSD                             float64
}

const (
	defaultPRTitle = "pneuma: {{.Name}}"
	defaultPRBody  = "{{.Result}}\n\n---\n{{.FilesChanged}} files changed, {{.Insertions}} insertions(+), {{.Deletions}} deletions(-) on `{{.Branch}}`, job `{{.Name}}` of pneuma run {{.RunID}}.\n"
)

// Text renders the pull request's title (on one line) and body for data,
// from the job's templates or the defaults where it wrote none.
func (pr *PullRequest) Text(data TemplateData) (title, body string, err error) {
	title, body = pr.Title, pr.Body
	if title == "" {
		title = defaultPRTitle
	}
	if body == "" {
		body = defaultPRBody
	}
	if title, err = prText("title", title, data); err != nil {
		return "", "", err
	}
	if body, err = prText("body", body, data); err != nil {
		return "", "", err
	}
	return strings.Join(strings.Fields(title), " "), body, nil
}

// remoteRE is what a remote name may look like (git check-ref-format is
// laxer; this keeps option-like and odd names out of argv).
var remoteRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]*$`)

// validatePublish checks push, remote and pull_request of a job.
func (d *decoder) validatePublish(j *Job) {
	if j.set["remote"] && !remoteRE.MatchString(j.Remote) {
		d.errorAt(j.pos["remote"], "remote %q is not a git remote name", j.Remote)
	}
	wants := (j.set["push"] && j.Push != nil && *j.Push) || (j.set["pull_request"] && j.PullRequest != nil)
	if wants && j.Worktree != nil && !*j.Worktree {
		d.errorAt(j.PosOf("worktree"), "push and pull_request need a job branch: they cannot be used with worktree: false")
	}
	pr := j.PullRequest
	if !j.set["pull_request"] || pr == nil {
		return
	}
	for _, t := range []struct{ field, text string }{{"title", pr.Title}, {"body", pr.Body}} {
		if _, err := prText(t.field, t.text, TemplateData{}); err != nil {
			d.errorAt(j.pos["pull_request"], "pull_request.%s: %v", t.field, err)
		}
	}
	if pr.Base != "" && strings.HasPrefix(pr.Base, "-") {
		d.errorAt(j.pos["pull_request"], "pull_request.base %q is not a branch name", pr.Base)
	}
}

// prText renders a title or body template.
func prText(name, text string, data TemplateData) (string, error) {
	t, err := template.New(name).Option("missingkey=error").Parse(text)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return "", err
	}
	return b.String(), nil
}
