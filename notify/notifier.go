package notify

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// Options are a Notifier's delivery settings; zero values take defaults.
type Options struct {
	// Queue bounds the notifications waiting per target (default 64); one
	// more is dropped and counted.
	Queue int
	// Attempts is the most deliveries of one notification (default 4).
	Attempts int
	// Backoff is the wait before the first retry (default 1s); it doubles
	// per retry, with jitter, up to 30s.
	Backoff time.Duration
	// Timeout bounds one delivery (default 10s).
	Timeout time.Duration
	// Client sends the requests (default: a client of its own, no redirects).
	Client *http.Client
	// Logf logs a target's first failure and the counts at Close.
	Logf func(format string, args ...any)
	// Now is the clock of signatures (default time.Now).
	Now func() time.Time
	// ReadFile reads secret files (default os.ReadFile); a server reads a
	// client's with its root and size checks.
	ReadFile func(string) ([]byte, error)
}

func (o *Options) defaults() {
	if o.Queue <= 0 {
		o.Queue = 64
	}
	if o.Attempts <= 0 {
		o.Attempts = 4
	}
	if o.Backoff <= 0 {
		o.Backoff = time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Client == nil {
		// A redirect would send the signed body and its headers elsewhere.
		o.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ReadFile == nil {
		o.ReadFile = os.ReadFile
	}
}

// maxBackoff caps the wait between two deliveries.
const maxBackoff = 30 * time.Second

// Notifier sends notifications to its targets, each through a bounded
// queue drained by one goroutine, so that Notify never waits on a
// receiver. Create it with New; Close it once.
type Notifier struct {
	o       Options
	targets []*sender
	ctx     context.Context // ends deliveries at Close's deadline
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	closed  bool
}

// Stats are a target's counts.
type Stats struct {
	Target    string `json:"target"` // Name of its URL
	Delivered int64  `json:"delivered"`
	Failed    int64  `json:"failed"`  // given up after the last attempt, or refused with 4xx
	Dropped   int64  `json:"dropped"` // the queue was full
}

type sender struct {
	t      Target
	secret []byte
	queue  chan delivery

	mu     sync.Mutex
	stats  Stats
	logged bool // the first failure was logged
}

// delivery is one notification on its way: the body is built once.
type delivery struct {
	event, id string
	body      []byte
}

// New checks the targets, reads their secrets and starts one sender per
// target. Its error lists every problem, each with the target's index.
func New(targets []Target, o Options) (*Notifier, error) {
	o.defaults()
	n := &Notifier{o: o}
	var errs []error
	for i, t := range targets {
		for _, p := range t.Check() {
			errs = append(errs, fmt.Errorf("notify[%d]: %s", i, p))
		}
		secret, err := t.readSecret(o.ReadFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("notify[%d]: %w", i, err))
		}
		n.targets = append(n.targets, &sender{t: t, secret: secret, queue: make(chan delivery, o.Queue), stats: Stats{Target: Name(t.URL)}})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	for _, s := range n.targets {
		n.wg.Add(1)
		go n.drain(s)
	}
	return n, nil
}

// Enabled says whether n has a target: a nil Notifier or one without
// targets notifies nothing, and callers skip building notifications.
func (n *Notifier) Enabled() bool { return n != nil && len(n.targets) > 0 }

// Wants says whether some target takes event.
func (n *Notifier) Wants(event string) bool {
	if n == nil {
		return false
	}
	for _, s := range n.targets {
		if s.t.wants(event) {
			return true
		}
	}
	return false
}

// Notify queues nt for every target that wants its event, redacted. It
// never blocks: a full queue drops nt for that target and counts it.
func (n *Notifier) Notify(nt Notification) {
	if !n.Wants(nt.Event) {
		return
	}
	if nt.Time.IsZero() {
		nt.Time = n.o.Now()
	}
	nt = nt.redacted()
	id := deliveryID()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	for _, s := range n.targets {
		if !s.t.wants(nt.Event) {
			continue
		}
		b, err := body(s.t.format(), s.t.URL, nt)
		if err != nil {
			s.fail(n.o.Logf, fmt.Errorf("encode %s: %w", nt.Event, err))
			continue
		}
		select {
		case s.queue <- delivery{event: nt.Event, id: id, body: b}:
		default:
			s.mu.Lock()
			s.stats.Dropped++
			s.mu.Unlock()
			s.fail(n.o.Logf, fmt.Errorf("queue full (%d waiting): %s dropped", cap(s.queue), nt.Event))
		}
	}
}

// Stats returns each target's counts, in the targets' order.
func (n *Notifier) Stats() []Stats {
	if n == nil {
		return nil
	}
	out := make([]Stats, len(n.targets))
	for i, s := range n.targets {
		s.mu.Lock()
		out[i] = s.stats
		s.mu.Unlock()
	}
	return out
}

// Close stops taking notifications and delivers what is queued until ctx
// ends; then it abandons the rest. It logs each target that failed.
func (n *Notifier) Close(ctx context.Context) {
	if n == nil {
		return
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return
	}
	n.closed = true
	for _, s := range n.targets {
		close(s.queue)
	}
	n.mu.Unlock()
	done := make(chan struct{})
	go func() { n.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		n.cancel()
		<-done
	}
	n.cancel()
	for _, st := range n.Stats() {
		if st.Failed+st.Dropped > 0 {
			n.o.Logf("notify: %s: %d delivered, %d failed, %d dropped", st.Target, st.Delivered, st.Failed, st.Dropped)
		}
	}
}

// drain delivers s's queue until it is closed; after Close's deadline it
// only empties it.
func (n *Notifier) drain(s *sender) {
	defer n.wg.Done()
	for d := range s.queue {
		if n.ctx.Err() != nil {
			s.mu.Lock()
			s.stats.Dropped++
			s.mu.Unlock()
			continue
		}
		err := n.deliver(s, d)
		s.mu.Lock()
		if err == nil {
			s.stats.Delivered++
		} else {
			s.stats.Failed++
		}
		s.mu.Unlock()
		if err != nil {
			s.fail(n.o.Logf, err)
		}
	}
}

// fail logs a target's first failure only: a dead target would otherwise
// fill the log with one line per event.
func (s *sender) fail(logf func(string, ...any), err error) {
	s.mu.Lock()
	first := !s.logged
	s.logged = true
	s.mu.Unlock()
	if first {
		logf("notify: %s: %v (further failures of this target are counted, not logged)", s.stats.Target, err)
	}
}

// deliver posts d, retrying on 5xx answers and transport errors (a timeout,
// a refused connection) with backoff; a 4xx is the receiver's final word.
func (n *Notifier) deliver(s *sender, d delivery) error {
	var err error
	for attempt := 0; attempt < n.o.Attempts; attempt++ {
		if attempt > 0 && !n.sleep(backoff(n.o.Backoff, attempt)) {
			return fmt.Errorf("%s: abandoned at shutdown: %w", d.event, err)
		}
		var retry bool
		retry, err = n.post(s, d)
		if err == nil || !retry {
			return err
		}
	}
	return fmt.Errorf("%s: gave up after %d attempts: %w", d.event, n.o.Attempts, err)
}

// sleep waits d or until Close's deadline; false at the deadline.
func (n *Notifier) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-n.ctx.Done():
		return false
	}
}

// backoff is the wait before retry number attempt (1-based): base doubled
// per retry, capped, with up to half of it as jitter.
func backoff(base time.Duration, attempt int) time.Duration {
	d := base << (attempt - 1)
	if d > maxBackoff || d <= 0 {
		d = maxBackoff
	}
	return d/2 + rand.N(d/2+1)
}

// post makes one delivery; retry says whether another may succeed.
func (n *Notifier) post(s *sender, d delivery) (retry bool, err error) {
	ctx, cancel := context.WithTimeout(n.ctx, n.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, postURL(s.t), bytes.NewReader(d.body))
	if err != nil {
		return false, fmt.Errorf("%s: %w", d.event, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "pneuma-notify/1")
	req.Header.Set(HeaderEvent, d.event)
	req.Header.Set(HeaderDelivery, d.id)
	if s.secret != nil {
		req.Header.Set(HeaderSignature, Sign(s.secret, d.body, n.o.Now()))
	}
	resp, err := n.o.Client.Do(req)
	if err != nil {
		// The error holds the URL, whose path may be the secret.
		return true, fmt.Errorf("%s: %s", d.event, transportError(err))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch {
	case resp.StatusCode >= 500:
		return true, fmt.Errorf("%s: the receiver answered %s", d.event, resp.Status)
	case resp.StatusCode >= 300:
		return false, fmt.Errorf("%s: the receiver answered %s (not retried)", d.event, resp.Status)
	}
	return false, nil
}

// transportError says what went wrong without the request's URL.
func transportError(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "no answer in time"
	case errors.Is(err, context.Canceled):
		return "abandoned at shutdown"
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	return msg
}

// deliveryID is a random id per notification.
func deliveryID() string {
	var b [12]byte
	_, _ = crand.Read(b[:])
	return hex.EncodeToString(b[:])
}
