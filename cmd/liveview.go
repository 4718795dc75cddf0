package cmd

import (
	"bytes"
	"fmt"
	stdio "io"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/pneuma-cli/pneuma/live"
	"github.com/pneuma-cli/pneuma/runner"
)

// liveView draws a run on a terminal (issue 24): finished jobs printed
// above as they finish, then a region redrawn in place: one line per
// running job and progressbar's footer. live turns events into lines; this
// only puts them on the terminal, at most once per throttle.
type liveView struct {
	w        stdio.Writer
	size     func() (int, int, error)
	color    bool
	throttle time.Duration
	now      func() time.Time

	mu      sync.Mutex
	state   *live.State
	bar     *progressbar.ProgressBar
	barAt   int // the count the bar was last set to
	dirty   bool
	printed int   // finished jobs already printed above the region
	notes   int   // notes already printed
	region  []int // display widths of the region's lines as last drawn
	cols    int   // the width the region was drawn at
	buf     bytes.Buffer
	stop    chan struct{}
	done    chan struct{}
	resized chan struct{}
}

// newLiveView draws to w (a terminal) every throttle while something
// changed, and each second for the clocks.
func newLiveView(w stdio.Writer, size func() (int, int, error), color bool, budget float64, throttle time.Duration) *liveView {
	st := live.NewState()
	st.BudgetUSD = budget
	return newLiveViewOf(w, size, color, st, throttle)
}

// newLiveViewOf draws st, a run's state read so far (pneuma status --watch).
func newLiveViewOf(w stdio.Writer, size func() (int, int, error), color bool, st *live.State, throttle time.Duration) *liveView {
	v := &liveView{w: w, size: size, color: color, throttle: throttle, now: time.Now, state: st,
		stop: make(chan struct{}), done: make(chan struct{}), resized: make(chan struct{}, 1)}
	go v.loop()
	return v
}

// Event is runner.Reporter: the event changes the model; the next tick draws it.
func (v *liveView) Event(e runner.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.state.Apply(e)
	v.dirty = true
}

// feed applies what src has new.
func (v *liveView) feed(src *live.Source) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	n, err := src.Read(v.state)
	if n > 0 {
		v.dirty = true
	}
	return err
}

// ended says whether the run the view shows has ended.
func (v *liveView) ended() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.state.Ended
}

// loop draws at most once per throttle, only when something changed or a
// second passed (the clocks) or the terminal was resized.
func (v *liveView) loop() {
	defer close(v.done)
	stopWinch := notifyResize(v.resized)
	defer stopWinch()
	t := time.NewTicker(v.throttle)
	defer t.Stop()
	var last time.Time
	for {
		select {
		case <-v.stop:
			return
		case <-v.resized:
			v.mu.Lock()
			v.dirty = true
			v.mu.Unlock()
		case now := <-t.C:
			v.mu.Lock()
			if v.dirty || now.Sub(last) >= time.Second {
				v.draw()
				last = now
			}
			v.mu.Unlock()
		}
	}
}

// termSize is the terminal's columns and rows (80×24 when unknown).
func (v *liveView) termSize() (int, int) {
	if v.size != nil {
		if c, r, err := v.size(); err == nil && c > 0 && r > 0 {
			return c, r
		}
	}
	return 80, 24
}

// draw writes one frame in one write; the caller holds mu.
func (v *liveView) draw() {
	v.dirty = false
	cols, rows := v.termSize()
	now := v.now()
	st := live.Style{Width: cols, Color: v.color}
	v.buf.Reset()
	v.erase(cols)
	v.printed = min(v.printed, len(v.state.Done))
	for ; v.printed < len(v.state.Done); v.printed++ {
		v.buf.WriteString(live.FinishedLine(v.state.Done[v.printed], st))
		v.buf.WriteString("\n")
	}
	for ; v.notes < len(v.state.Notes); v.notes++ {
		v.buf.WriteString(live.Fit("pneuma: "+v.state.Notes[v.notes], cols))
		v.buf.WriteString("\n")
	}
	lines := v.state.RunningLines(now, max(1, rows-2), st)
	if v.state.Total > 0 {
		lines = append(lines, v.footer(now, cols))
	}
	v.region, v.cols = v.region[:0], cols
	for _, l := range lines {
		v.buf.WriteString(l)
		v.buf.WriteString("\n")
		v.region = append(v.region, live.Width(stripANSI(l)))
	}
	// A terminal gone away must not stop the run: the log holds it all.
	_, _ = v.w.Write(v.buf.Bytes())
}

// erase moves up over the region last drawn and clears to the end of the
// screen. A line the terminal has since rewrapped (narrower now) counts
// for the rows it takes.
func (v *liveView) erase(cols int) {
	up := 0
	for _, w := range v.region {
		up += max(1, (w+cols-1)/cols)
	}
	v.buf.WriteString("\r")
	if up > 0 {
		fmt.Fprintf(&v.buf, "\x1b[%dA", up)
	}
	v.buf.WriteString("\x1b[J")
}

// footer is progressbar's line: the summary (with live's estimate of the
// rest), the bar, done/total and elapsed.
func (v *liveView) footer(now time.Time, cols int) string {
	if v.bar == nil {
		v.bar = progressbar.NewOptions(v.state.Total,
			progressbar.OptionSetWriter(stdio.Discard), // the view writes its String
			progressbar.OptionSetWidth(20),
			progressbar.OptionShowCount(),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionSetPredictTime(false), // live's estimate is in the description
			progressbar.OptionThrottle(0),
		)
	}
	if done := len(v.state.Done); done != v.barAt {
		_ = v.bar.Set(done) // errors only from writing to Discard
		v.barAt = done
	}
	v.bar.Describe(v.state.Summary(now))
	return live.Fit(strings.TrimSpace(strings.TrimLeft(v.bar.String(), "\r")), cols)
}

// Close draws the last frame and erases the region: the finished lines
// stay, and the final table follows them.
func (v *liveView) Close() {
	close(v.stop)
	<-v.done
	v.mu.Lock()
	defer v.mu.Unlock()
	v.draw()
	v.buf.Reset()
	v.erase(v.cols)
	v.region = nil
	_, _ = v.w.Write(v.buf.Bytes())
}

// stripANSI drops the colour codes live adds.
func stripANSI(s string) string {
	for strings.Contains(s, "\x1b[") {
		i := strings.Index(s, "\x1b[")
		j := strings.IndexByte(s[i:], 'm')
		if j < 0 {
			break
		}
		s = s[:i] + s[i+j+1:]
	}
	return s
}
