package claude

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pneuma-cli/pneuma/internal/proc"
)

// DefaultMaxLineBytes is the longest stdout line decoded when
// Config.MaxLineBytes is zero. Real lines reach several MB (one content block
// is one line); longer ones are counted and skipped, never fatal.
const DefaultMaxLineBytes = 64 << 20

// drainTimeout bounds the wait for stdout and stderr to reach EOF once the
// process group is dead. Only a descendant that left the group (setsid) can
// keep a pipe open that long; its output is then abandoned.
const drainTimeout = 2 * time.Second

// MarkerEnv is the variable Start adds to the CLI's environment, with a
// value unique to the process. Wait kills every process still carrying it
// once the CLI has exited: the tools' background processes, which Claude
// Code starts in sessions of their own, out of reach of the process group.
const MarkerEnv = "PNEUMA_CLAUDE_MARKER"

// ErrInputClosed is returned by writes to stdin after CloseInput, Stop or the
// process's exit.
var ErrInputClosed = errors.New("claude stdin is closed")

// Config describes one CLI process.
type Config struct {
	// Binary is the CLI to run (see Find); Dir its working directory.
	Binary string
	Dir    string
	// Launch, when set, is the argv that runs the CLI: Launch, then Binary
	// and its arguments (a sandbox).
	Launch []string
	// Signal, when set, delivers the stop ladder's SIGINT and SIGTERM
	// (given the started process's pid) instead of signalling its process
	// group: a launcher that passes no signal on (a sandbox) is reached
	// past. If it fails, the group is signalled. SIGKILL always goes to
	// the group.
	Signal func(pid int, sig syscall.Signal) error
	// Env is the child's complete environment, built by the caller; nil
	// inherits pneuma's own, as os/exec does. Start adds MarkerEnv.
	Env     []string
	Options Options
	// Stream receives every stdout byte verbatim (stream.jsonl); may be nil.
	// A write error stops the copy and is reported by Wait.
	Stream io.Writer
	// Stderr receives the CLI's stderr; may be nil (discarded). The caller
	// bounds what it keeps.
	Stderr io.Writer
	// MaxLineBytes is the longest line decoded (DefaultMaxLineBytes if 0).
	// Longer lines become TypeOversized events and are still copied to Stream.
	MaxLineBytes int
	// OnControl answers the CLI's control requests (can_use_tool,
	// hook_callback, ...). It runs on its own goroutine per request, must
	// return once ctx is done (the CLI cancelled the request or exited), and
	// its answer is sent exactly once. nil answers every request with the
	// zero ControlResponse: can_use_tool is denied, anything else gets an
	// error reply.
	OnControl func(ctx context.Context, req *ControlRequest) ControlResponse
	// Parts keeps the parts of assistant, user and stream_event lines that
	// are passed on as written in Event.Parts (DecodeParts), for callers
	// that pass lines on (a server session's clients); jobs need none.
	Parts bool
}

// ExitStatus is how a process ended and what its stdout held.
type ExitStatus struct {
	// Code is the exit code, or -1 when a signal ended the process.
	Code int
	// Signal names the signal that ended the process ("SIGKILL"), if any.
	Signal string
	// Lines counts every non-empty stdout line, including SkippedLines
	// (oversized) and InvalidLines (not JSON, or torn at EOF).
	Lines        int
	SkippedLines int
	InvalidLines int
}

// Process is a running CLI in stream-json mode. Its methods are safe for
// concurrent use. The caller must drain Events and call Wait.
type Process struct {
	cmd       *exec.Cmd
	signal    func(pid int, sig syscall.Signal) error // Config.Signal
	marker    string                                  // MarkerEnv=value, in the environment of every descendant
	born      time.Time                               // just before the start: killMarked reads the pids allocated since
	onControl func(ctx context.Context, req *ControlRequest) ControlResponse
	stream    io.Writer
	maxLine   int
	parts     bool

	stdin       *os.File
	writeSem    chan struct{} // one slot: one stdin line at a time
	inputClosed atomic.Bool
	closeOnce   sync.Once
	closeErr    error

	stdout, stderr *os.File
	stderrDst      io.Writer

	events     chan Event
	exited     chan struct{} // the main process has exited
	readerDone chan struct{} // stdout reached EOF and events is closed
	stderrDone chan struct{}
	done       chan struct{} // everything is released; status is final

	mu       sync.Mutex
	pending  map[string]chan *ControlReply // requests pneuma sent, by request_id
	cancels  map[string]context.CancelFunc // running OnControl calls, by request_id
	finished bool                          // no new OnControl calls
	handlers sync.WaitGroup

	// Owned by the reader goroutine until readerDone.
	status    ExitStatus
	streamErr error

	waitErr error
}

// Start spawns the CLI in its own process group with cfg.Options.Args() and
// starts decoding its stdout. ctx bounds only the start: the process
// outlives it and ends through CloseInput, Stop or Kill.
func Start(ctx context.Context, cfg Config) (*Process, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("start claude: %w", err)
	}
	if cfg.Binary == "" {
		return nil, fmt.Errorf("start claude: %w: no binary given", ErrNotFound)
	}
	argv := append(append(slices.Clone(cfg.Launch), cfg.Binary), cfg.Options.Args()...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = cfg.Dir
	env := cfg.Env
	if env == nil {
		env = os.Environ()
	}
	marker := MarkerEnv + "=" + newRequestID()
	cmd.Env = append(slices.Clip(env), marker)
	// Its own group, so signals reach the tools it spawned (Bash children)
	// and none of them outlives the job; also keeps the terminal's Ctrl-C
	// from reaching it directly: pneuma decides how to stop it. Tied: if
	// pneuma itself dies (even by SIGKILL) the kernel kills the CLI, so no
	// job outlives pneuma; a run resumed with --resume continues its session.
	proc.NewGroupTied(cmd)
	born := time.Now()
	pp, err := startPiped(cmd, cfg.Stderr != nil)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", cfg.Binary, err)
	}
	p := &Process{
		cmd:        cmd,
		signal:     cfg.Signal,
		marker:     marker,
		born:       born,
		onControl:  cfg.OnControl,
		stream:     cfg.Stream,
		maxLine:    cfg.MaxLineBytes,
		parts:      cfg.Parts,
		stdin:      pp.stdin,
		writeSem:   make(chan struct{}, 1),
		stdout:     pp.stdout,
		stderr:     pp.stderr,
		stderrDst:  cfg.Stderr,
		events:     make(chan Event, 32),
		exited:     make(chan struct{}),
		readerDone: make(chan struct{}),
		stderrDone: make(chan struct{}),
		done:       make(chan struct{}),
		pending:    make(map[string]chan *ControlReply),
		cancels:    make(map[string]context.CancelFunc),
	}
	if p.maxLine <= 0 {
		p.maxLine = DefaultMaxLineBytes
	}
	go p.read()
	go p.copyStderr()
	go p.wait()
	return p, nil
}

// pipes are pneuma's ends of a started CLI's stdin, stdout and stderr
// (stderr nil when not captured).
type pipes struct {
	stdin, stdout, stderr *os.File
}

// startPiped starts cmd with its standard streams on pipes. Stdout is an
// *os.File so that cmd.Wait returns when the process exits, even while a
// grandchild still holds the pipe: Wait then kills the group and drains the
// pipe itself.
func startPiped(cmd *exec.Cmd, withStderr bool) (pipes, error) {
	var files []*os.File // every pipe end, closed on failure
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	fail := func(err error) (pipes, error) {
		// Start already failed; a close error on a pipe nobody used adds nothing.
		for _, f := range files {
			_ = f.Close()
		}
		return pipes{}, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return fail(err)
	}
	outR, outW, err := pipe()
	if err != nil {
		return fail(err)
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	var errR, errW *os.File
	if withStderr {
		if errR, errW, err = pipe(); err != nil {
			return fail(err)
		}
		cmd.Stderr = errW
	}
	if err := cmd.Start(); err != nil {
		return fail(err)
	}
	// The child holds its own copies of these ends; pneuma's are closed so
	// that EOF arrives when the child exits. Closing an unused pipe end
	// cannot lose data.
	_ = inR.Close()
	_ = outW.Close()
	if errW != nil {
		_ = errW.Close()
	}
	return pipes{stdin: inW, stdout: outR, stderr: errR}, nil
}

// Pid is the CLI's process id, which is also its process group id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Events delivers every stdout line, decoded, in order. It is closed after
// stdout reaches EOF. The caller must drain it: an undrained channel stalls
// the CLI once its stdout pipe fills.
func (p *Process) Events() <-chan Event { return p.events }

// Exited is closed when the main process has exited (its tools may still be
// running until Wait kills them).
func (p *Process) Exited() <-chan struct{} { return p.exited }

// SendUser writes a user message (a new turn, or queued behind the running
// one) to stdin.
func (p *Process) SendUser(text string) error {
	if err := p.writeLine(newUserLine(text), time.Time{}); err != nil {
		return fmt.Errorf("send user message: %w", err)
	}
	return nil
}

// Interrupt asks the CLI to abort the running turn. The process stays alive;
// the turn ends with a result of subtype error_during_execution.
func (p *Process) Interrupt() error {
	if err := p.writeLine(interruptLine(), time.Time{}); err != nil {
		return fmt.Errorf("send interrupt: %w", err)
	}
	return nil
}

func interruptLine() []byte {
	return mustMarshal(controlRequestLine{
		Type:      TypeControlRequest,
		RequestID: newRequestID(),
		Request:   map[string]string{"subtype": "interrupt"},
	})
}

// Initialize sends the initialize control request (registering hooks) and
// waits for the CLI's answer, returning its success payload. Send it before
// the first user message.
func (p *Process) Initialize(ctx context.Context, req InitializeRequest) (json.RawMessage, error) {
	body := struct {
		Subtype string `json:"subtype"`
		InitializeRequest
	}{"initialize", req}
	reply, err := p.request(ctx, body)
	if err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	if reply.Subtype != "success" {
		return nil, fmt.Errorf("initialize: claude answered %s: %s", reply.Subtype, reply.Error)
	}
	return reply.Response, nil
}

// MCPStatus asks the CLI how the starts of its MCP servers went (the
// mcp_status control request). The CLI answers before the first user
// message, without an API call; a server still starting is "pending".
func (p *Process) MCPStatus(ctx context.Context) ([]MCPServer, error) {
	reply, err := p.request(ctx, map[string]string{"subtype": "mcp_status"})
	if err != nil {
		return nil, fmt.Errorf("mcp_status: %w", err)
	}
	if reply.Subtype != "success" {
		return nil, fmt.Errorf("mcp_status: claude answered %s: %s", reply.Subtype, reply.Error)
	}
	var body struct {
		MCPServers []MCPServer `json:"mcpServers"`
	}
	if err := json.Unmarshal(reply.Response, &body); err != nil {
		return nil, fmt.Errorf("mcp_status: decode the answer: %w", err)
	}
	return body.MCPServers, nil
}

// SetModel switches the model of the running session (the set_model
// control request) from the next API call on; "" returns to the session's
// default model. It returns the CLI's acknowledgement.
func (p *Process) SetModel(ctx context.Context, model string) (*ControlReply, error) {
	body := struct {
		Subtype string  `json:"subtype"`
		Model   *string `json:"model"`
	}{Subtype: "set_model"}
	if model != "" {
		body.Model = &model
	}
	return p.ack(ctx, "set_model", body)
}

// SetPermissionMode changes the permission mode of the running session (the
// set_permission_mode control request). The CLI's acknowledgement names
// the mode now in effect, which can differ from the one asked for.
func (p *Process) SetPermissionMode(ctx context.Context, mode string) (*ControlReply, error) {
	return p.ack(ctx, "set_permission_mode", map[string]string{"subtype": "set_permission_mode", "mode": mode})
}

// ack sends a control request and returns the CLI's reply; an error reply
// is an error that carries the CLI's message.
func (p *Process) ack(ctx context.Context, subtype string, body any) (*ControlReply, error) {
	reply, err := p.request(ctx, body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", subtype, err)
	}
	if reply.Subtype != "success" {
		return reply, fmt.Errorf("%s: claude answered %s: %s", subtype, reply.Subtype, reply.Error)
	}
	return reply, nil
}

// request sends a control request and waits for the control_response with
// the same request_id.
func (p *Process) request(ctx context.Context, body any) (*ControlReply, error) {
	id := newRequestID()
	ch := make(chan *ControlReply, 1)
	p.mu.Lock()
	p.pending[id] = ch
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.pending, id)
		p.mu.Unlock()
	}()
	line := mustMarshal(controlRequestLine{Type: TypeControlRequest, RequestID: id, Request: body})
	if err := p.writeLine(line, time.Time{}); err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-p.readerDone:
		select {
		case r := <-ch:
			return r, nil
		default:
			return nil, errors.New("claude closed its output before answering")
		}
	}
}

// CloseInput closes stdin. The CLI finishes the running and queued turns,
// then exits: the graceful end of a job.
func (p *Process) CloseInput() error {
	p.closeOnce.Do(func() {
		p.inputClosed.Store(true)
		if err := p.stdin.Close(); err != nil {
			p.closeErr = fmt.Errorf("close claude stdin: %w", err)
		}
	})
	return p.closeErr
}

// writeLine writes b and a newline to stdin as one line. A zero deadline
// waits as long as it takes (a write can only block while the CLI is alive
// and not reading; its exit closes stdin and fails the write).
func (p *Process) writeLine(b []byte, deadline time.Time) error {
	if p.inputClosed.Load() {
		return ErrInputClosed
	}
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		timeout = t.C
	}
	select {
	case p.writeSem <- struct{}{}:
	case <-timeout:
		return fmt.Errorf("write to claude stdin: %w", os.ErrDeadlineExceeded)
	}
	defer func() { <-p.writeSem }()
	if p.inputClosed.Load() {
		return ErrInputClosed
	}
	if !deadline.IsZero() {
		if err := p.stdin.SetWriteDeadline(deadline); err == nil {
			// Clearing a deadline fails only on a closed pipe, which the
			// next write reports.
			defer func() { _ = p.stdin.SetWriteDeadline(time.Time{}) }()
		}
	}
	line := make([]byte, 0, len(b)+1)
	line = append(append(line, b...), '\n')
	if _, err := p.stdin.Write(line); err != nil {
		if errors.Is(err, os.ErrClosed) {
			return ErrInputClosed
		}
		return fmt.Errorf("write to claude stdin: %w", err)
	}
	return nil
}

// Stop ends the process, gracefully first: an interrupt control request
// followed by closing stdin (when stdin is still open), then SIGINT, SIGTERM
// and SIGKILL to the whole process group, waiting grace for the exit after
// each step. SIGINT comes before SIGTERM because SIGTERM loses the result
// line and the unflushed transcript, and SIGKILL closes the ladder because
// only it cannot be ignored. If ctx ends first, Stop goes straight to
// SIGKILL and returns ctx's error. Stop returns once the main process has
// exited; call Wait for the final status.
//
// Measured on CLI 2.1.197: the interrupt and EOF alone end a turn waiting on
// the API or on a can_use_tool answer (the CLI then sends a
// control_cancel_request, which cancels OnControl's context) within a few
// hundred milliseconds, with a result of subtype error_during_execution and
// exit code 1, the code following the last result.
func (p *Process) Stop(ctx context.Context, grace time.Duration) error {
	if p.hasExited() {
		return nil
	}
	if !p.inputClosed.Load() {
		// An interrupt only ends the turn; the EOF after it lets the CLI write
		// the interrupted result and exit on its own. Either failing (the CLI
		// stopped reading) is what the signals below are for.
		_ = p.writeLine(interruptLine(), time.Now().Add(grace))
		_ = p.CloseInput()
		if p.waitExit(ctx, grace) {
			return nil
		}
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		if ctx.Err() != nil {
			break
		}
		if err := p.signalGroup(sig); err != nil {
			return err
		}
		if p.waitExit(ctx, grace) {
			return nil
		}
	}
	if err := p.signalGroup(syscall.SIGKILL); err != nil {
		return err
	}
	<-p.exited
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("stop claude: %w", err)
	}
	return nil
}

// Kill sends SIGKILL to the whole process group now.
func (p *Process) Kill() error { return p.signalGroup(syscall.SIGKILL) }

func (p *Process) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// waitExit reports whether the main process exits within d (false when ctx
// ends first).
func (p *Process) waitExit(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return p.hasExited()
}

func (p *Process) signalGroup(sig syscall.Signal) error {
	if p.hasExited() {
		// The group leader is reaped; Wait has already killed the group.
		return nil
	}
	if p.signal != nil && sig != syscall.SIGKILL && p.signal(p.Pid(), sig) == nil {
		return nil
	}
	if err := proc.Signal(p.cmd.Process, sig); err != nil {
		return fmt.Errorf("signal claude process group %d: %w", p.Pid(), err)
	}
	return nil
}

// Wait waits for the process to exit and for its stdout to be drained (every
// event delivered), then returns how it ended. Once the CLI has exited it
// kills what it leaves behind: the rest of its process group and every
// process carrying its MarkerEnv (background tool processes). A non-zero exit is reported in
// ExitStatus, not as an error; the error is for a failed wait or a failed
// write to Config.Stream. Safe to call more than once and concurrently.
func (p *Process) Wait() (ExitStatus, error) {
	<-p.done
	return p.status, p.waitErr
}

// wait reaps the process, kills what is left of its group, drains the pipes
// and releases everything.
func (p *Process) wait() {
	err := p.cmd.Wait()
	close(p.exited)
	// Nothing the CLI started may outlive the job or hold stdout open: kill
	// its group (the group id cannot be reused while a member lives), then
	// the processes that left the group but carry the marker.
	// Signal fails only for a group already gone; CloseInput only if Stop
	// closed stdin first: neither leaves anything to do.
	_ = proc.Signal(p.cmd.Process, syscall.SIGKILL)
	killMarked(p.marker, p.cmd.Process.Pid, p.born)
	p.drain()
	_ = p.CloseInput()

	p.mu.Lock()
	p.finished = true
	for _, cancel := range p.cancels {
		cancel()
	}
	p.mu.Unlock()
	p.handlers.Wait()
	// Both pipes are drained (or abandoned to a setsid descendant): closing
	// our read ends cannot lose output.
	_ = p.stdout.Close()
	if p.stderr != nil {
		_ = p.stderr.Close()
	}

	var exitErr *exec.ExitError
	switch {
	case err == nil || errors.As(err, &exitErr):
		err = nil
	default:
		err = fmt.Errorf("wait for claude: %w", err)
	}
	if st := p.cmd.ProcessState; st != nil {
		p.status.Code = st.ExitCode()
		p.status.Signal = proc.ExitSignal(st)
	}
	if err == nil && p.streamErr != nil {
		err = fmt.Errorf("copy claude output to stream: %w", p.streamErr)
	}
	p.waitErr = err
	close(p.done)
}

// drain waits for stdout and stderr to reach EOF, abandoning them after
// drainTimeout (a descendant that escaped the group still holds them).
func (p *Process) drain() {
	t := time.NewTimer(drainTimeout)
	defer t.Stop()
	for _, ch := range []chan struct{}{p.readerDone, p.stderrDone} {
		select {
		case <-ch:
		case <-t.C:
			now := time.Now()
			// A pipe that takes no deadline is already closed: its reader
			// has returned.
			_ = p.stdout.SetReadDeadline(now)
			if p.stderr != nil {
				_ = p.stderr.SetReadDeadline(now)
			}
			<-p.readerDone
			<-p.stderrDone
			return
		}
	}
}

func (p *Process) copyStderr() {
	defer close(p.stderrDone)
	if p.stderr == nil {
		return
	}
	// A read error is the drain deadline (output abandoned on purpose); a
	// write error is the caller's writer, which bounds and owns what it keeps.
	buf := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(buf)
	// Wrapped so that neither side's WriterTo or ReaderFrom allocates a
	// buffer of its own.
	_, _ = io.CopyBuffer(struct{ io.Writer }{p.stderrDst}, struct{ io.Reader }{p.stderr}, *buf)
}

// stdoutReaders and copyBuffers are the buffers of CLIs that exited, for
// the next ones: a run of 10,000 jobs allocated 640 MB of stdout readers
// and 300 MB of stderr copy buffers, a collection every few MB (issue 27).
var (
	stdoutReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 64<<10) }}
	copyBuffers   = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}
)

// read decodes stdout line by line, copying every byte to the stream first.
func (p *Process) read() {
	defer close(p.readerDone)
	defer close(p.events)
	br := stdoutReaders.Get().(*bufio.Reader)
	br.Reset(p.stdout)
	defer func() { br.Reset(nil); stdoutReaders.Put(br) }() // after the last chunk is copied and emitted
	var (
		line      []byte
		size      int
		oversized bool
	)
	for {
		chunk, err := br.ReadSlice('\n')
		p.copyOut(chunk)
		complete := err == nil
		body := chunk
		if complete {
			body = chunk[:len(chunk)-1]
		}
		size += len(body)
		if !oversized {
			if size > p.maxLine {
				oversized, line = true, line[:0]
			} else {
				line = append(line, body...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if size > 0 {
			p.emit(line, size, oversized, !complete)
		}
		if err != nil {
			return
		}
		size, oversized = 0, false
		if cap(line) > 1<<20 {
			line = nil // do not pin a multi-MB buffer for the rest of the run
		} else {
			line = line[:0]
		}
	}
}

func (p *Process) copyOut(b []byte) {
	if len(b) == 0 || p.stream == nil || p.streamErr != nil {
		return
	}
	if _, err := p.stream.Write(b); err != nil {
		p.streamErr = err
	}
}

func (p *Process) emit(line []byte, size int, oversized, torn bool) {
	var ev Event
	switch {
	case oversized:
		ev = Event{Type: TypeOversized, Size: size,
			Err: fmt.Errorf("line of %d bytes is longer than the %d byte limit", size, p.maxLine)}
		p.status.SkippedLines++
	case torn:
		ev = Event{Type: TypeInvalid, Size: size,
			Err: fmt.Errorf("incomplete last line (%d bytes, no newline at end of output)", size)}
	default:
		ev = decode(line, p.parts)
	}
	p.status.Lines++
	if ev.Type == TypeInvalid {
		p.status.InvalidLines++
	}
	switch {
	case ev.Control != nil:
		p.dispatch(ev.Control)
	case ev.Reply != nil:
		p.mu.Lock()
		ch := p.pending[ev.Reply.RequestID]
		p.mu.Unlock()
		if ch != nil {
			select {
			case ch <- ev.Reply:
			default: // a duplicate answer; the first one counts
			}
		}
	case ev.CancelRequestID != "":
		p.mu.Lock()
		cancel := p.cancels[ev.CancelRequestID]
		p.mu.Unlock()
		if cancel != nil {
			cancel()
		}
	}
	p.events <- ev
}

// dispatch answers a control request on its own goroutine: a can_use_tool
// blocks the CLI until answered, and the answer may take a while (a human, a
// policy), so the reader must keep going.
func (p *Process) dispatch(req *ControlRequest) {
	ctx, cancel := context.WithCancel(context.Background())
	p.mu.Lock()
	if p.finished {
		p.mu.Unlock()
		cancel()
		return
	}
	p.cancels[req.RequestID] = cancel
	p.handlers.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.handlers.Done()
		defer func() {
			p.mu.Lock()
			delete(p.cancels, req.RequestID)
			p.mu.Unlock()
			cancel()
		}()
		var resp ControlResponse
		if p.onControl != nil {
			resp = p.onControl(ctx, req)
		}
		// Fails only once stdin is closed, when nobody is waiting any more.
		_ = p.writeLine(encodeControlResponse(req, resp), time.Time{})
	}()
}
