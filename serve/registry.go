package serve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/pneuma-cli/pneuma/internal/eventlog"
	"github.com/pneuma-cli/pneuma/runner"
)

// registry holds the server's sessions, live and saved.
type registry struct {
	cfg *Config
	mu  sync.Mutex
	m   map[string]*entry
}

// errTooMany is answered 429.
var errTooMany = errors.New("too many sessions")

// durableTypes are fsync'd as soon as they are in a log.
func durableTypes(typ string) bool {
	switch typ {
	case "result", "cli_exited", "job_finished", "run_finished":
		return true
	}
	return false
}

// loadRegistry reopens every session saved under the state directory. They
// are listed idle (closed ones closed); the next message resumes them.
func loadRegistry(cfg *Config) (*registry, error) {
	g := &registry{cfg: cfg, m: map[string]*entry{}}
	dir := runner.StateDir(cfg.StateDir)
	ents, err := os.ReadDir(dir.Sessions())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read sessions: %w", err)
	}
	for _, de := range ents {
		if !de.IsDir() {
			continue
		}
		e, err := restoreEntry(cfg, de.Name())
		if errors.Is(err, os.ErrNotExist) {
			continue // a session whose create failed half way
		}
		if err != nil {
			// One bad session does not keep the others from starting.
			e = damagedEntry(cfg, de.Name(), err)
			cfg.Logf("session %s is damaged: listed as damaged, its files kept in %s: %v",
				de.Name(), runner.StateDir(cfg.StateDir).Session(de.Name()), err)
		}
		g.m[e.id] = e
	}
	return g, nil
}

// newSessionID is a random id, safe in paths and branch names.
func newSessionID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail
	return hex.EncodeToString(b[:])
}

// validID keeps ids from the URL to the names the server makes.
func validID(id string) bool {
	if id == "" || len(id) > 64 || id == "." || id == ".." {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

func (g *registry) get(id string) *entry {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.m[id]
}

func (g *registry) list() []*entry {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]*entry, 0, len(g.m))
	for _, e := range g.m {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].snapshot(), out[j].snapshot()
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.Before(b.CreatedAt)
		}
		return out[i].id < out[j].id
	})
	return out
}

// active counts the sessions not closed, failed or damaged.
func (g *registry) active() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, e := range g.m {
		if !isTerminal(e.snapshot().Status) {
			n++
		}
	}
	return n
}

// ownsCLISession reports whether id is the CLI session id of one of the
// server's sessions, live or saved (closed ones included).
func (g *registry) ownsCLISession(id string) bool {
	if id == "" {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, e := range g.m {
		if e.snapshot().CLISessionID == id {
			return true
		}
	}
	return false
}

// reserve adds a new entry if the limit allows.
func (g *registry) reserve() (*entry, error) {
	if g.active() >= g.cfg.MaxSessions {
		return nil, errTooMany
	}
	id := newSessionID()
	log, err := eventlog.Open(runner.StateDir(g.cfg.StateDir).Session(id).Events(), durableTypes)
	if err != nil {
		return nil, err
	}
	e := newEntry(g.cfg, id, log)
	e.state = SessionState{ID: id, Status: StatusStarting, CreatedAt: time.Now().UTC()}
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, o := range g.m {
		if !isTerminal(o.snapshot().Status) {
			n++
		}
	}
	if n >= g.cfg.MaxSessions { // lost a race for the last slot
		log.Close()
		os.RemoveAll(string(runner.StateDir(g.cfg.StateDir).Session(id)))
		return nil, errTooMany
	}
	g.m[id] = e
	return e, nil
}

// drop forgets an entry whose open failed, with its directory.
func (g *registry) drop(e *entry) {
	g.mu.Lock()
	delete(g.m, e.id)
	g.mu.Unlock()
	e.log.Close()
	os.RemoveAll(string(runner.StateDir(g.cfg.StateDir).Session(e.id)))
}

// shutdown shuts every open session down at once and saves them all.
func (g *registry) shutdown(ctx context.Context) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for _, e := range g.list() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := e.shutdown(ctx); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("session %s: %w", e.id, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// saved is session.json.
type saved struct {
	State SessionState
	// Final is the summary of a closed session.
	Final *SessionSummary `json:",omitempty"`
}

// writeAtomic replaces path with data (temp file and rename).
func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, werr := tmp.Write(data)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// restoreEntry reads a session's session.json and events.jsonl.
func restoreEntry(cfg *Config, id string) (*entry, error) {
	dir := runner.StateDir(cfg.StateDir).Session(id)
	data, err := os.ReadFile(dir.SessionFile())
	if err != nil {
		return nil, err
	}
	var sv saved
	if err := json.Unmarshal(data, &sv); err != nil {
		return nil, fmt.Errorf("read %s: %w", dir.SessionFile(), err)
	}
	log, err := eventlog.Open(dir.Events(), durableTypes)
	if err != nil {
		return nil, err
	}
	e := newEntry(cfg, id, log)
	e.state, e.final = sv.State, sv.Final
	e.state.ID = id
	if e.state.Status != StatusClosed && e.state.Status != StatusFailed {
		e.state.Status = StatusIdle
		e.state.PendingPermissions = nil
	}
	if err := e.recount(); err != nil {
		log.Close()
		return nil, err
	}
	return e, nil
}

// recount rebuilds, from the log, what deduplication and wait need.
func (e *entry) recount() error {
	for after := int64(0); ; {
		evs, err := e.log.ReadPage(after, 0, pageBytes)
		if err != nil {
			return err
		}
		if len(evs) == 0 {
			break
		}
		after = evs[len(evs)-1].Seq
		e.countEvents(evs)
	}
	// A turn cut by the stop may have no result: count new turns from the
	// results there are.
	e.sent = len(e.results)
	return nil
}

// countEvents notes the client_msg_ids and results of restored events.
func (e *entry) countEvents(evs []eventlog.Event) {
	for _, ev := range evs {
		switch ev.Type {
		case "user_message":
			var m struct {
				ClientMsgID string `json:"client_msg_id"`
			}
			e.sent++
			if json.Unmarshal(ev.Raw, &m) == nil && m.ClientMsgID != "" {
				e.msgs[m.ClientMsgID] = msgRef{seq: ev.Seq, turn: e.sent}
			}
		case "result":
			e.results = append(e.results, ev.Seq)
		}
	}
}

// isTerminal: a closed, failed or damaged session takes no more messages.
func isTerminal(status string) bool {
	return slices.Contains([]string{StatusClosed, StatusFailed, StatusDamaged}, status)
}

// StatusDamaged is a saved session that cannot be restored (session.json
// unreadable, or its event log damaged): listed with why, its events up to
// the damage readable, its files left as they are; it takes no messages.
const StatusDamaged = "damaged"

// salvageLog is a damaged log, read-only: its events before the damage, or
// none when it cannot be read at all.
func salvageLog(path string) *eventlog.Log {
	log, err := eventlog.Salvage(path)
	if err != nil {
		return eventlog.Empty(path)
	}
	return log
}

// damagedEntry is a session restoreEntry could not restore: what its
// session.json says, if anything, and the events before the damage.
func damagedEntry(cfg *Config, id string, cause error) *entry {
	dir := runner.StateDir(cfg.StateDir).Session(id)
	e := newEntry(cfg, id, salvageLog(dir.Events()))
	var sv saved
	if data, err := os.ReadFile(dir.SessionFile()); err == nil && json.Unmarshal(data, &sv) == nil {
		e.state = sv.State
	}
	if e.state.CreatedAt.IsZero() {
		if fi, err := os.Stat(string(dir)); err == nil {
			e.state.CreatedAt = fi.ModTime().UTC()
		}
	}
	e.state.ID, e.state.Status, e.state.PendingPermissions = id, StatusDamaged, nil
	e.damage = cause.Error()
	return e
}
