// Package fakecli is a scripted stand-in for the Claude Code CLI, for tests
// of faults the real CLI will not produce on demand: crashes mid-line, huge
// or garbage lines, hangs, ignored signals, grandchildren holding stdout.
//
// It uses the re-exec helper pattern. A test package's TestMain calls
// RunIfRequested first; Install writes a Scenario into a temp dir next to a
// symlink named "claude" that points at the test binary. When the test runs
// that symlink, RunIfRequested finds the scenario beside it, plays the CLI
// and exits, so parallel tests need no environment variables.
//
// What the fake received is recorded beside it: read it with Calls.
package fakecli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Name is the fake binary's file name; RunIfRequested reacts only to it.
const Name = "claude"

const (
	scenarioFile  = Name + ".scenario.json"
	callsFile     = Name + ".calls.jsonl"
	grandchildArg = "--fakecli-sleep-forever"
)

// DefaultVersion is what --version prints unless Scenario.Version is set.
const DefaultVersion = "2.1.197 (Claude Code)"

// DefaultSessionID is the session id used when neither --session-id nor
// --resume is given.
const DefaultSessionID = "00000000-0000-4000-8000-000000000001"

// Scenario scripts one fake CLI.
type Scenario struct {
	// Version is printed by --version (DefaultVersion if empty).
	Version string `json:"version,omitempty"`
	// Start runs once at startup, before any stdin is read (for example an
	// usage error: Stderr then Exit 1, or IgnoreSignals).
	Start []Step `json:"start,omitempty"`
	// Turns run in order, one per user message read from stdin. A user
	// message beyond the last Turn plays DefaultTurn.
	Turns []Turn `json:"turns,omitempty"`
	// Env lists the environment variables to record in Calls.
	Env []string `json:"env,omitempty"`
}

// Turn is what the fake writes in answer to one user message.
type Turn struct {
	// When, if set, plays this turn for any user message containing it
	// (so one fake can answer several jobs differently); such turns are
	// not part of the sequence.
	When  string `json:"when,omitempty"`
	Steps []Step `json:"steps"`
}

// Step is one action; set exactly one action field (Detached only
// qualifies Grandchild). Text fields have {{session}}
// replaced by the session id (--session-id, --resume, else
// DefaultSessionID) and {{response}} by the last control_response received
// for an AwaitResponse step.
type Step struct {
	// Line is written to stdout followed by a newline (need not be JSON).
	Line string `json:"line,omitempty"`
	// Raw is written to stdout as is, with no newline.
	Raw string `json:"raw,omitempty"`
	// BigLine writes a valid JSON assistant text line of exactly this many
	// bytes, plus a newline.
	BigLine int `json:"bigLine,omitempty"`
	// Stderr is written to stderr as is.
	Stderr string `json:"stderr,omitempty"`
	// SleepMS sleeps; an interrupt control request ends the turn early.
	SleepMS int `json:"sleepMS,omitempty"`
	// Hang blocks for ever, answering nothing, until killed.
	Hang bool `json:"hang,omitempty"`
	// IgnoreSignals ignores the named signals ("SIGINT", "SIGTERM") from
	// now on.
	IgnoreSignals []string `json:"ignoreSignals,omitempty"`
	// Grandchild starts a process that inherits stdout and stderr, ignores
	// SIGINT and SIGTERM, sleeps (two minutes) and outlives the fake. Its pid
	// is recorded (Call.Grandchildren).
	Grandchild bool `json:"grandchild,omitempty"`
	// Detached puts a Grandchild in a session of its own, out of the fake's
	// process group, as Claude Code's Bash tool does with its commands.
	Detached bool `json:"detached,omitempty"`
	// AwaitResponse waits for the control_response with this request_id
	// (write the control_request with a Line first), as the real CLI waits
	// for a can_use_tool answer. Stdin EOF ends the wait.
	AwaitResponse string `json:"awaitResponse,omitempty"`
	// Exit exits with this code now.
	Exit *int `json:"exit,omitempty"`
}

// Exit returns a step that exits with code.
func Exit(code int) Step { return Step{Exit: &code} }

// DefaultTurn answers a user message with init, one assistant text line and
// a success result.
func DefaultTurn() Turn {
	return Turn{Steps: []Step{
		{Line: InitLine("{{session}}")},
		{Line: AssistantText("{{session}}", "msg_fake_default", "ok")},
		{Line: ResultLine("{{session}}", ResultOpts{Text: "ok", NumTurns: 1, CostUSD: 0.001})},
	}}
}

// Install writes s into a new temp dir beside a "claude" symlink to the
// running test binary and returns the symlink's path: the binary to run.
// The test package's TestMain must call RunIfRequested.
func Install(t testing.TB, s Scenario) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("fakecli: find test binary: %v", err)
	}
	dir := t.TempDir()
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatalf("fakecli: encode scenario: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, scenarioFile), data, 0o644); err != nil {
		t.Fatalf("fakecli: %v", err)
	}
	bin := filepath.Join(dir, Name)
	if err := os.Symlink(exe, bin); err != nil {
		t.Fatalf("fakecli: %v", err)
	}
	return bin
}

// Call is one run of an installed fake, as recorded by it.
type Call struct {
	Pid  int      `json:"pid"`
	Args []string `json:"args"` // without argv[0]
	// Dir is the directory the fake ran in (a job's worktree).
	Dir string `json:"dir"`
	// Env holds the Scenario.Env variables that were set.
	Env map[string]string `json:"env"`
	// Stdin is every line read from stdin, without newlines.
	Stdin []string `json:"-"`
	// Grandchildren are the pids of Grandchild steps.
	Grandchildren []int `json:"-"`
}

// Calls returns every run of the fake at bin (from Install), in start order.
func Calls(t testing.TB, bin string) []Call {
	t.Helper()
	dir := filepath.Dir(bin)
	data, err := os.ReadFile(filepath.Join(dir, callsFile))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("fakecli: %v", err)
	}
	// A record is complete once its newline is written: a fake that is
	// starting while the test polls may have created the file but not yet
	// written its line, so only newline-terminated lines count.
	text := string(data)
	if i := strings.LastIndexByte(text, '\n'); i >= 0 {
		text = text[:i]
	} else {
		text = ""
	}
	var calls []Call
	for _, line := range strings.Split(text, "\n") {
		if line == "" {
			continue
		}
		var c Call
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("fakecli: decode call record %q: %v", line, err)
		}
		if in, err := os.ReadFile(stdinPath(dir, c.Pid)); err == nil && len(in) > 0 {
			c.Stdin = strings.Split(strings.TrimSuffix(string(in), "\n"), "\n")
		}
		if gc, err := os.ReadFile(grandchildPath(dir, c.Pid)); err == nil {
			for _, f := range strings.Fields(string(gc)) {
				if pid, err := strconv.Atoi(f); err == nil {
					c.Grandchildren = append(c.Grandchildren, pid)
				}
			}
		}
		calls = append(calls, c)
	}
	return calls
}

func stdinPath(dir string, pid int) string {
	return filepath.Join(dir, fmt.Sprintf("%s.%d.stdin.jsonl", Name, pid))
}

func grandchildPath(dir string, pid int) string {
	return filepath.Join(dir, fmt.Sprintf("%s.%d.grandchildren", Name, pid))
}

// RunIfRequested plays the fake CLI and exits when the test binary was
// started through an Install symlink; otherwise it returns at once. Call it
// first in TestMain.
func RunIfRequested() {
	arg0 := os.Args[0]
	if filepath.Base(arg0) != Name {
		return
	}
	if !strings.ContainsRune(arg0, filepath.Separator) {
		// Started through PATH: argv[0] is the bare name.
		p, err := exec.LookPath(arg0)
		if err != nil {
			return
		}
		arg0 = p
	}
	dir := filepath.Dir(arg0)
	data, err := os.ReadFile(filepath.Join(dir, scenarioFile))
	if err != nil {
		return
	}
	if len(os.Args) > 1 && os.Args[1] == grandchildArg {
		signal.Ignore(syscall.SIGINT, syscall.SIGTERM)
		// Long enough to outlive any test that checks it is killed, short
		// enough that a test killed by its own timeout leaves nothing behind.
		time.Sleep(grandchildLifetime)
		exit(0)
	}
	var s Scenario
	if err := json.Unmarshal(data, &s); err != nil {
		fmt.Fprintf(os.Stderr, "fakecli: decode scenario: %v\n", err)
		exit(2)
	}
	f := &fake{s: s, dir: dir, exe: arg0, session: DefaultSessionID, lines: make(chan string, 64)}
	exit(f.run(os.Args[1:]))
}

// fake is one run of the fake CLI.
type fake struct {
	s        Scenario
	dir, exe string
	session  string

	outMu sync.Mutex
	out   *bufio.Writer

	lines    chan string // stdin lines; closed at EOF
	queued   []string    // user messages read while a turn ran
	eof      bool        // lines is closed and drained
	response string      // last awaited control_response
	turn     int
	plain    int // sequential (When-less) turns played
	inTurn   atomic.Bool
}

func (f *fake) run(args []string) int {
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-v") {
		v := f.s.Version
		if v == "" {
			v = DefaultVersion
		}
		fmt.Println(v)
		return 0
	}
	for i, a := range args {
		for _, flag := range []string{"--session-id", "--resume"} {
			if a == flag && i+1 < len(args) {
				f.session = args[i+1]
			} else if v, ok := strings.CutPrefix(a, flag+"="); ok {
				f.session = v
			}
		}
	}
	f.out = bufio.NewWriter(os.Stdout)

	// Like the real CLI, SIGINT aborts the turn with an error result and
	// exits 0; SIGTERM keeps Go's default (death by signal, no result).
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT)
	go func() {
		<-sigs
		if !f.inTurn.Load() {
			exit(0)
		}
		f.writeLine(ResultLine(f.session, ResultOpts{Subtype: "error_during_execution", IsError: true, NumTurns: 1}))
		exit(0)
	}()
	go exitWhenOrphaned()
	// Recorded once the signal handler is in place, so a test that saw the
	// call knows SIGINT will be handled like the real CLI's.
	f.record(args)

	if code, stop := f.steps(f.s.Start); stop {
		return code
	}
	go f.readStdin()
	for {
		var line string
		if len(f.queued) > 0 {
			line, f.queued = f.queued[0], f.queued[1:]
		} else {
			l, ok := f.next()
			if !ok {
				return 0 // EOF: every queued turn has run
			}
			line = l
		}
		if code, stop := f.handle(line, true); stop {
			return code
		}
	}
}

// record appends this call to the calls file.
func (f *fake) record(args []string) {
	c := Call{Pid: os.Getpid(), Args: args, Env: map[string]string{}}
	c.Dir, _ = os.Getwd() // empty if the directory is gone
	for _, k := range f.s.Env {
		if v, ok := os.LookupEnv(k); ok {
			c.Env[k] = v
		}
	}
	data, _ := json.Marshal(c)
	fl, err := os.OpenFile(filepath.Join(f.dir, callsFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err == nil {
		fl.Write(append(data, '\n'))
		fl.Close()
	}
}

func (f *fake) readStdin() {
	defer close(f.lines)
	rec, _ := os.OpenFile(stdinPath(f.dir, os.Getpid()), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	br := bufio.NewReaderSize(os.Stdin, 1<<20)
	for {
		line, err := br.ReadString('\n')
		line = strings.TrimSuffix(line, "\n")
		if line != "" {
			if rec != nil {
				rec.WriteString(line + "\n") // unbuffered: visible even if the fake is killed
			}
			f.lines <- line
		}
		if err != nil {
			return
		}
	}
}

// turnFor picks the Turn that answers a user message line: the first whose
// When occurs in it, else the next Turn without a When, else DefaultTurn.
func (f *fake) turnFor(line string) Turn {
	for _, t := range f.s.Turns {
		if t.When != "" && strings.Contains(line, t.When) {
			return t
		}
	}
	n := 0
	for _, t := range f.s.Turns {
		if t.When != "" {
			continue
		}
		if n == f.plain {
			f.plain++
			return t
		}
		n++
	}
	return DefaultTurn()
}

// handle reacts to one stdin line. idle is true outside a turn. It reports
// whether the fake must exit, and with which code.
func (f *fake) handle(line string, idle bool) (code int, stop bool) {
	var msg struct {
		Type      string          `json:"type"`
		RequestID string          `json:"request_id"`
		Request   json.RawMessage `json:"request"`
	}
	if err := json.Unmarshal([]byte(line), &msg); err != nil {
		fmt.Fprintf(os.Stderr, "Error parsing streaming input line: %s: SyntaxError: %v\n", line, err)
		return 1, true
	}
	switch msg.Type {
	case "user":
		if !idle {
			f.queued = append(f.queued, line)
			return 0, false
		}
		t := f.turnFor(line)
		f.turn++
		f.inTurn.Store(true)
		defer f.inTurn.Store(false)
		return f.steps(t.Steps)
	case "control_request":
		var req struct {
			Subtype string `json:"subtype"`
		}
		_ = json.Unmarshal(msg.Request, &req)
		switch req.Subtype {
		case "interrupt":
			f.writeLine(fmt.Sprintf(`{"type":"control_response","response":{"subtype":"success","request_id":%q}}`, msg.RequestID))
		case "initialize":
			f.writeLine(fmt.Sprintf(`{"type":"control_response","response":{"subtype":"success","request_id":%q,"response":{"commands":[],"output_style":"default","pid":%d}}}`, msg.RequestID, os.Getpid()))
		default:
			f.writeLine(fmt.Sprintf(`{"type":"control_response","response":{"subtype":"error","request_id":%q,"error":"Unsupported control request subtype: %s"}}`, msg.RequestID, req.Subtype))
		}
	}
	return 0, false
}

// steps runs a list of steps. It reports whether the fake must exit.
func (f *fake) steps(steps []Step) (code int, stop bool) {
	for _, st := range steps {
		switch {
		case st.Line != "":
			f.writeLine(f.expand(st.Line))
		case st.Raw != "":
			f.write(f.expand(st.Raw))
		case st.BigLine > 0:
			f.writeLine(bigLine(f.session, st.BigLine))
		case st.Stderr != "":
			os.Stderr.WriteString(f.expand(st.Stderr))
		case st.SleepMS > 0:
			if f.sleep(time.Duration(st.SleepMS) * time.Millisecond) {
				return f.interrupted()
			}
		case st.Hang:
			select {}
		case len(st.IgnoreSignals) > 0:
			for _, name := range st.IgnoreSignals {
				switch name {
				case "SIGINT":
					signal.Reset(syscall.SIGINT)
					signal.Ignore(syscall.SIGINT)
				case "SIGTERM":
					signal.Ignore(syscall.SIGTERM)
				}
			}
		case st.Grandchild:
			f.grandchild(st.Detached)
		case st.AwaitResponse != "":
			if f.await(st.AwaitResponse) {
				return f.interrupted()
			}
		case st.Exit != nil:
			f.flush()
			return *st.Exit, true
		}
	}
	return 0, false
}

// interrupted ends the running turn the way the real CLI does after an
// interrupt.
func (f *fake) interrupted() (int, bool) {
	f.writeLine(fmt.Sprintf(`{"type":"user","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user]"}]},"parent_tool_use_id":null,"session_id":%q}`, f.session))
	f.writeLine(ResultLine(f.session, ResultOpts{Subtype: "error_during_execution", IsError: true, NumTurns: 2}))
	return 0, false
}

// sleep waits d while serving stdin; it reports an interrupt.
func (f *fake) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	lines := f.lines
	if f.eof {
		lines = nil
	}
	for {
		select {
		case <-t.C:
			return false
		case line, ok := <-lines:
			if !ok {
				f.eof, lines = true, nil // EOF: finish the turn, then exit
				continue
			}
			if f.serve(line) {
				return true
			}
		}
	}
}

// next returns the next stdin line, or false at EOF.
func (f *fake) next() (string, bool) {
	if f.eof {
		return "", false
	}
	line, ok := <-f.lines
	if !ok {
		f.eof = true
	}
	return line, ok
}

// await waits for a control_response to id while serving stdin; it reports
// an interrupt.
func (f *fake) await(id string) bool {
	for {
		line, ok := f.next()
		if !ok {
			f.response = ""
			return false
		}
		var msg struct {
			Type     string `json:"type"`
			Response struct {
				RequestID string `json:"request_id"`
			} `json:"response"`
		}
		if json.Unmarshal([]byte(line), &msg) == nil && msg.Type == "control_response" && msg.Response.RequestID == id {
			f.response = line
			return false
		}
		if f.serve(line) {
			return true
		}
	}
}

// serve handles a stdin line that arrives during a turn; it reports an
// interrupt.
func (f *fake) serve(line string) bool {
	var msg struct {
		Type    string `json:"type"`
		Request struct {
			Subtype string `json:"subtype"`
		} `json:"request"`
	}
	_ = json.Unmarshal([]byte(line), &msg)
	if code, stop := f.handle(line, false); stop {
		f.flush()
		exit(code)
	}
	return msg.Type == "control_request" && msg.Request.Subtype == "interrupt"
}

func (f *fake) grandchild(detached bool) {
	cmd := exec.Command(f.exe, grandchildArg)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if detached {
		cmd.SysProcAttr = newSession()
	}
	f.flush()
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "fakecli: start grandchild: %v\n", err)
		return
	}
	fl, err := os.OpenFile(grandchildPath(f.dir, os.Getpid()), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err == nil {
		fmt.Fprintln(fl, cmd.Process.Pid)
		fl.Close()
	}
	// Not waited for: it must outlive the fake.
}

func (f *fake) expand(s string) string {
	s = strings.ReplaceAll(s, "{{session}}", f.session)
	return strings.ReplaceAll(s, "{{response}}", f.response)
}

func (f *fake) writeLine(s string) { f.write(s + "\n") }

// write writes and flushes at once, so every line is out before the next
// step (a crash, a hang) happens.
func (f *fake) write(s string) {
	f.outMu.Lock()
	defer f.outMu.Unlock()
	f.out.WriteString(s)
	f.out.Flush()
}

func (f *fake) flush() {
	f.outMu.Lock()
	defer f.outMu.Unlock()
	f.out.Flush()
}

// grandchildLifetime bounds a Grandchild step's process.
const grandchildLifetime = 2 * time.Minute

// exitWhenOrphaned ends the fake when the process that started it dies (a
// test binary killed by -timeout), so no hung fake lingers on the machine.
func exitWhenOrphaned() {
	parent := os.Getppid()
	for {
		time.Sleep(250 * time.Millisecond)
		if os.Getppid() != parent {
			exit(3)
		}
	}
}

// exit ends the fake at once. It skips the runtime's exit hooks on purpose:
// under -race, os.Exit from one goroutine while another is blocked for ever
// (Hang) can wait in the race detector's finaliser and never return.
func exit(code int) {
	syscall.Exit(code)
}
