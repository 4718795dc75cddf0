package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/fakeapi"
)

// The agent plays one believable, scripted Claude per job of
// jobs.example.yaml. It recognises the job by its first prompt, learns its
// working directory from the CLI's system prompt (or, for the job that
// replaces the system prompt, from a `pwd` it runs) and acts on what its
// tool calls return, so the changes it makes are real.
type agent struct {
	sharedDocs string        // absolute path of the shared docs directory (add_dirs)
	delay      time.Duration // pause before each streamed event
}

// Markers of the jobs' first prompts in jobs.example.yaml and the demo's
// prompts/fix-lint.md.
const (
	licensePrompt  = "Add an MIT license header"
	fixLintPrompt  = "Run go vet on this module in your head"
	releasePrompt  = "Read the git log since the last tag"
	releaseWrite   = "Write RELEASE_NOTES.md"
	auditPrompt    = "List outdated dependencies"
	licenseHeader  = "// Copyright (c) 2026 Example Corp.\n// SPDX-License-Identifier: MIT\n\n"
	licenseMarker  = "SPDX-License-Identifier"
	vetBad         = `fmt.Println("app version %s", version)`
	vetGood        = `fmt.Printf("app version %s\n", version)`
	vetBadServe    = `fmt.Printf("listening on %d\n", addr)`
	vetGoodServe   = `fmt.Printf("listening on %s\n", addr)`
	tidyPrompt     = "Remove the dead tests under internal/legacy"
	releaseNotesMD = "RELEASE_NOTES.md"
	dependenciesMD = "DEPENDENCIES.md"
)

// handle answers one request of any job.
func (a *agent) handle(r *fakeapi.Request) fakeapi.Response {
	prompt := r.FirstUser().Text()
	var resp fakeapi.Response
	switch {
	case strings.Contains(prompt, licensePrompt):
		resp = a.license(r)
	case strings.Contains(prompt, fixLintPrompt):
		resp = a.fixLint(r)
	case strings.Contains(prompt, releasePrompt):
		resp = a.releaseNotes(r)
	case strings.Contains(prompt, tidyPrompt):
		resp = a.tidyTests(r)
	case strings.Contains(prompt, auditPrompt):
		resp = a.audit(r)
	default:
		resp = fakeapi.Text("The demo agent has no script for this prompt, so it does nothing.")
	}
	turn := r.Turn()
	return resp.WithDelay(a.delay).WithUsage(fakeapi.Usage{Input: 1200 + 350*turn, Output: 90 + 40*turn, CacheRead: 8000 * min(turn, 1), CacheWrite: 6000 * (1 - min(turn, 1))})
}

// license adds the header to each Go file under cmd/ that lacks one.
func (a *agent) license(r *fakeapi.Request) fakeapi.Response {
	dir := r.WorkingDir()
	if dir == "" {
		return fakeapi.Text("I cannot tell which directory I am working in, so I changed nothing.")
	}
	files := []string{"cmd/root.go", "cmd/serve.go", "cmd/version.go"}
	k := learn(r)
	switch r.Turn() {
	case 0:
		var reads []fakeapi.Call
		for _, f := range files {
			reads = append(reads, fakeapi.Read(filepath.Join(dir, f)))
		}
		return fakeapi.ToolUse(reads...).WithText("I'll check each Go file under cmd/ for a license header.")
	case 1:
		var edits []fakeapi.Call
		var names []string
		for _, f := range files {
			res, ok := k.result("Read", filepath.Join(dir, f))
			if ok && !res.IsError && !strings.Contains(res.Content, licenseMarker) {
				edits = append(edits, fakeapi.Edit(filepath.Join(dir, f), "package cmd\n", licenseHeader+"package cmd\n"))
				names = append(names, f)
			}
		}
		if len(edits) == 0 {
			return fakeapi.Text("Every Go file under cmd/ already has a license header.")
		}
		return fakeapi.ToolUse(edits...).WithText(strings.Join(names, " and ") + " lack the header; adding it.")
	}
	var done []string
	for _, f := range files {
		if res, ok := k.result("Edit", filepath.Join(dir, f)); ok && !res.IsError {
			done = append(done, f)
		}
	}
	return fakeapi.Text(fmt.Sprintf("Added an MIT license header (SPDX) to %s. The other Go files under cmd/ already had one.", strings.Join(done, ", ")))
}

// fixLint fixes the finding its prompt names in cmd/version.go, then, when
// pneuma's verify step (go vet) sends back the one it missed in cmd/serve.go,
// fixes that too.
func (a *agent) fixLint(r *fakeapi.Request) fakeapi.Response {
	dir := r.WorkingDir()
	if dir == "" {
		return fakeapi.Text("I cannot tell which directory I am working in, so I changed nothing.")
	}
	k := learn(r)
	version, serve := filepath.Join(dir, "cmd", "version.go"), filepath.Join(dir, "cmd", "serve.go")
	if userSaid(r, "serve.go") { // go vet output, sent back by the verify step
		res, read := k.result("Read", serve)
		_, edited := k.result("Edit", serve)
		switch {
		case !read:
			return fakeapi.ToolUse(fakeapi.Read(serve)).WithText("go vet still fails, now on cmd/serve.go; reading it.")
		case !edited && strings.Contains(res.Content, vetBadServe):
			return fakeapi.ToolUse(fakeapi.Edit(serve, vetBadServe, vetGoodServe)).WithText("addr is a string: %s, not %d.")
		}
		return fakeapi.Text("Fixed cmd/serve.go as well: addr is a string, so %d became %s. go vet should pass now.")
	}
	res, read := k.result("Read", version)
	_, edited := k.result("Edit", version)
	switch {
	case !read:
		return fakeapi.ToolUse(fakeapi.Read(version)).WithText("The prompt names cmd/version.go; reading it.")
	case !edited && strings.Contains(res.Content, vetBad):
		return fakeapi.ToolUse(fakeapi.Edit(version, vetBad, vetGood)).WithText("Println does not format; Printf with a newline prints the same line.")
	case !edited:
		return fakeapi.Text("cmd/version.go has nothing for go vet to report.")
	}
	return fakeapi.Text("Fixed cmd/version.go: fmt.Println with a %s directive is now fmt.Printf with the same output.")
}

// tidyTests tries to delete the dead tests, which the job's policy refuses
// (deny "Bash(rm -rf *)"), runs the tests (allowed), and leaves a note inside
// internal/ (Write(internal/**) is allowed) instead.
func (a *agent) tidyTests(r *fakeapi.Request) fakeapi.Response {
	dir := r.WorkingDir()
	if dir == "" {
		return fakeapi.Text("I cannot tell which directory I am working in, so I changed nothing.")
	}
	const rm, test = "rm -rf internal/legacy", "go test ./internal/..."
	note := filepath.Join(dir, "internal", "legacy", "README.md")
	k := learn(r)
	removal, triedRm := k.result("Bash", rm)
	tests, tested := k.result("Bash", test)
	_, noted := k.result("Write", note)
	switch {
	case !triedRm:
		return fakeapi.ToolUse(fakeapi.Bash(rm)).WithText("internal/legacy only holds skipped tests of a loader that is gone; deleting it.")
	case removal.IsError && !tested:
		return fakeapi.ToolUse(fakeapi.Bash(test)).WithText("The policy refuses the deletion. Checking that the tests under internal/ pass as they are.")
	case removal.IsError && !noted:
		return fakeapi.ToolUse(fakeapi.Write(note, "# internal/legacy\n\nDead: its only test is skipped since v1.0 and tests a loader that is gone.\nDelete this directory (`git rm -r internal/legacy`); the CI agent may not.\n")).
			WithText("Leaving a note for a human instead.")
	case removal.IsError:
		verdict := "pass"
		if tests.IsError {
			verdict = "fail"
		}
		return fakeapi.Text("The job's policy denied `" + rm + "`, so the dead tests are still there; I left internal/legacy/README.md asking a human to delete them. `" + test + "`: the tests " + verdict + ".")
	}
	return fakeapi.Text("Deleted internal/legacy, whose only test was skipped.")
}

// userSaid reports whether a user text block of the conversation (a prompt,
// not a tool result) contains s.
func userSaid(r *fakeapi.Request, s string) bool {
	for _, m := range r.Messages {
		if m.Role == "user" && strings.Contains(m.Text(), s) {
			return true
		}
	}
	return false
}

// releaseNotes answers the two prompts of the release-notes job: read the
// log since the last tag, then write RELEASE_NOTES.md from it. Its system
// prompt is replaced, so it learns its directory with pwd.
func (a *agent) releaseNotes(r *fakeapi.Request) fakeapi.Response {
	k := learn(r)
	pwd, _ := k.result("Bash", "pwd")
	tag, haveTag := k.result("Bash", "git describe --tags --abbrev=0")
	if haveTag && tag.IsError {
		return fakeapi.Text("I could not find the last tag: " + tag.Content)
	}
	logCmd := "git log --oneline " + strings.TrimSpace(tag.Content) + "..HEAD"
	log, haveLog := k.result("Bash", logCmd)

	if strings.Contains(r.Text(), releaseWrite) && !r.HasToolResult() {
		dir := strings.TrimSpace(pwd.Content)
		if !haveLog || log.IsError || pwd.IsError || !filepath.IsAbs(dir) {
			return fakeapi.Text("I have no git log to write release notes from.")
		}
		notes := formatNotes(strings.TrimSpace(tag.Content), log.Content)
		return fakeapi.ToolUse(fakeapi.Write(filepath.Join(dir, releaseNotesMD), notes)).WithText("Writing RELEASE_NOTES.md in the style of shared-docs.")
	}
	summary := "Wrote RELEASE_NOTES.md: the changes since " + strings.TrimSpace(tag.Content) + ", grouped into fixes and changes."
	if _, ok := k.lastCall("StructuredOutput"); ok {
		return fakeapi.Text(summary)
	}
	if _, ok := k.lastCall("Write"); ok {
		// The job's output_schema asks for {"summary": ...} (--json-schema).
		return fakeapi.ToolUse(fakeapi.Tool("StructuredOutput", map[string]any{"summary": summary}))
	}
	switch {
	case !haveTag:
		return fakeapi.ToolUse(
			fakeapi.Bash("pwd"),
			fakeapi.Bash("git describe --tags --abbrev=0"),
			fakeapi.Read(filepath.Join(a.sharedDocs, "release-notes-style.md")),
		).WithText("Finding the last tag and the release notes style.")
	case !haveLog:
		return fakeapi.ToolUse(fakeapi.Bash(logCmd))
	case log.IsError:
		return fakeapi.Text("I could not read the git log: " + log.Content)
	}
	n := len(nonEmptyLines(log.Content))
	return fakeapi.Text(fmt.Sprintf("%d commits since %s:\n%s", n, strings.TrimSpace(tag.Content), strings.TrimSpace(log.Content)))
}

// formatNotes turns `git log --oneline` output into release notes.
func formatNotes(tag, log string) string {
	var fixes, changes []string
	for _, l := range nonEmptyLines(log) {
		_, subject, ok := strings.Cut(strings.TrimSpace(l), " ")
		if !ok {
			continue
		}
		if strings.HasPrefix(subject, "Fix") {
			fixes = append(fixes, subject)
		} else {
			changes = append(changes, subject)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Release notes (since %s)\n", tag)
	for _, g := range []struct {
		title string
		items []string
	}{{"Fixes", fixes}, {"Changes", changes}} {
		if len(g.items) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n## %s\n\n", g.title)
		for _, it := range g.items {
			fmt.Fprintf(&b, "- %s\n", it)
		}
	}
	return b.String()
}

// latest is what the demo agent claims the newest versions are. They are
// made up for the demo: the agent has no network.
var latest = map[string]string{
	"github.com/spf13/cobra": "v1.10.1",
	"go.yaml.in/yaml/v3":     "v3.0.4",
	"golang.org/x/sync":      "v0.17.0",
}

// audit reads go.mod, tries to save its findings (which plan mode refuses)
// and answers with the list.
func (a *agent) audit(r *fakeapi.Request) fakeapi.Response {
	dir := r.WorkingDir()
	if dir == "" {
		return fakeapi.Text("I cannot tell which directory I am working in.")
	}
	gomod := filepath.Join(dir, "go.mod")
	k := learn(r)
	res, ok := k.result("Read", gomod)
	if r.Turn() == 0 || !ok {
		return fakeapi.ToolUse(fakeapi.Read(gomod)).WithText("Reading go.mod.")
	}
	list := outdated(res.Content)
	if r.Turn() == 1 {
		return fakeapi.ToolUse(fakeapi.Write(filepath.Join(dir, dependenciesMD), list)).WithText("Saving the list to DEPENDENCIES.md as well.")
	}
	note := "I also saved it to DEPENDENCIES.md."
	if w, ok := k.lastCall("Write"); ok && w.IsError {
		note = "Plan mode refused my write of DEPENDENCIES.md (as it should: this job changes no file), so the list is only in this answer."
	}
	return fakeapi.Text(list + "\n" + note)
}

// outdated lists the requirements of a go.mod (as the Read tool shows it,
// with line numbers) that have a newer version in latest.
func outdated(gomod string) string {
	var rows []string
	for _, l := range nonEmptyLines(gomod) {
		if _, rest, ok := strings.Cut(l, "\t"); ok { // Read's "  5\t" line number prefix
			l = rest
		}
		f := strings.Fields(l)
		if len(f) == 3 && f[0] == "require" {
			f = f[1:]
		}
		if len(f) != 2 || !strings.HasPrefix(f[1], "v") {
			continue
		}
		if v, ok := latest[f[0]]; ok && v != f[1] {
			rows = append(rows, fmt.Sprintf("- %s %s -> %s (changelog: https://pkg.go.dev/%s?tab=versions)", f[0], f[1], v, f[0]))
		}
	}
	sort.Strings(rows)
	if len(rows) == 0 {
		return "No outdated dependencies.\n"
	}
	return "Outdated dependencies (demo data, not looked up):\n" + strings.Join(rows, "\n") + "\n"
}

func nonEmptyLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// knowledge is what the agent's tool calls returned so far in the
// conversation.
type knowledge struct {
	results map[string]fakeapi.Block // tool key -> its tool_result
	last    map[string]fakeapi.Block // tool name -> result of its latest call in the last user message
}

// learn pairs every tool call of the conversation with its result.
func learn(r *fakeapi.Request) knowledge {
	k := knowledge{results: map[string]fakeapi.Block{}, last: map[string]fakeapi.Block{}}
	keys := map[string]string{} // tool_use id -> key
	names := map[string]string{}
	for _, m := range r.Messages {
		for _, b := range m.ToolUses() {
			keys[b.ID] = toolKey(b.Name, b.Input)
			names[b.ID] = b.Name
		}
		for _, b := range m.ToolResults() {
			if key, ok := keys[b.ToolUseID]; ok {
				k.results[key] = b
			}
		}
	}
	for _, b := range r.ToolResults() {
		k.last[names[b.ToolUseID]] = b
	}
	return k
}

// result returns the result of the call of tool on arg (a command or a path).
func (k knowledge) result(tool, arg string) (fakeapi.Block, bool) {
	b, ok := k.results[tool+"\x00"+arg]
	return b, ok
}

// lastCall returns the result of a call of tool answered in the last user
// message.
func (k knowledge) lastCall(tool string) (fakeapi.Block, bool) {
	b, ok := k.last[tool]
	return b, ok
}

func toolKey(name string, input json.RawMessage) string {
	var in struct {
		Command  string `json:"command"`
		FilePath string `json:"file_path"`
	}
	_ = json.Unmarshal(input, &in) // a key without an argument never matches: harmless
	return name + "\x00" + in.Command + in.FilePath
}
