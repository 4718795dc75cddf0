package sandbox

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Config is what a job's sandbox is built from.
type Config struct {
	Spec Spec
	// Bwrap is bubblewrap's path (from Check).
	Bwrap string
	// Self is pneuma's executable ("": os.Executable). Inside, the
	// forwarder is ForwarderName beside it when there is one, else Self.
	Self string
	// Dir is the job's working directory (writable); Repo the repository
	// root it belongs to (read-only, its .pneuma hidden).
	Dir, Repo string
	// Binary is the CLI; its installation is bound read-only.
	Binary string
	// Home is $HOME (hidden); ConfigSrc the CLI's config dir
	// ($CLAUDE_CONFIG_DIR or ~/.claude) and ConfigJSON ~/.claude.json when
	// CLAUDE_CONFIG_DIR is unset.
	Home, ConfigSrc, ConfigJSON string
	// StateDir holds the job's private copy of the config dir.
	StateDir string
	// APIURL is ANTHROPIC_BASE_URL ("": api.anthropic.com).
	APIURL string
	// GitName and GitEmail are the git identity the repository resolves to
	// outside (the user's ~/.gitconfig is hidden inside); "" sets none.
	GitName, GitEmail string
}

// Box is a job's sandbox: its proxy, its private config dir and the
// bubblewrap command line that confines a command.
type Box struct {
	cfg       Config
	sockDir   string
	proxy     *Proxy
	configDir string
	port      int   // the forwarder's proxy port inside
	raw       []int // loopback ports carried raw
	allowed   []string
	mu        sync.Mutex
	syncMu    sync.Mutex           // one sync at a time (see sync)
	refs      map[string]*ownRef   // by working directory
	objs      map[string]*objStore // by the repository's git dir
	refErrs   []string
	denied    denials
}

// Sandbox paths inside.
const (
	insideSocket = "/run/pneuma/proxy.sock"
	proxyPort    = 3128
)

// Open prepares a job's sandbox: the private config dir copy and a running
// proxy. Close it when the job ends.
func Open(cfg Config) (*Box, error) {
	if cfg.Self == "" {
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("sandbox: find pneuma's executable: %w", err)
		}
		cfg.Self = self
	}
	if err := checkWrite(cfg); err != nil {
		return nil, err
	}
	cfg.Self = forwarder(cfg.Self)
	host, port, loop, err := apiHost(cfg.APIURL)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	b := &Box{cfg: cfg}
	b.allowed = append([]string{net.JoinHostPort(host, strconv.Itoa(port))}, cfg.Spec.Network...)
	// Without capabilities nothing inside may bind a port below 1024: those
	// are reachable through the proxy only.
	if loop && port >= 1024 {
		b.raw = append(b.raw, port)
	}
	for _, n := range cfg.Spec.Network {
		if hp, err := parseHost(n); err == nil && loopback(hp.host) && hp.port >= 1024 && !slices.Contains(b.raw, hp.port) {
			b.raw = append(b.raw, hp.port)
		}
	}
	b.port = proxyPort
	for slices.Contains(b.raw, b.port) {
		b.port++
	}
	if b.configDir, err = copyConfig(cfg); err != nil {
		return nil, err
	}
	// A short path of its own: unix socket paths are limited to 108 bytes.
	if b.sockDir, err = os.MkdirTemp("", "pneuma-sandbox-"); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	if b.proxy, err = NewProxy(filepath.Join(b.sockDir, "proxy.sock"), b.allowed); err != nil {
		_ = os.RemoveAll(b.sockDir)
		return nil, err
	}
	return b, nil
}

// forwarder is the small forwarder binary beside self, or else self.
func forwarder(self string) string {
	small := filepath.Join(filepath.Dir(self), ForwarderName)
	if fi, err := os.Stat(small); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
		return small
	}
	return self
}

// ConfigDir is the job's private CLAUDE_CONFIG_DIR (the same path inside
// and outside): its transcripts are read from there.
func (b *Box) ConfigDir() string { return b.configDir }

// gitArgs are the git binds of a command run in dir: the objects git
// wrote inside moved out and its branch carried in first (see objStore
// and ownRef).
func (b *Box) gitArgs(dir string) []string {
	state := filepath.Join(b.cfg.StateDir, "git")
	args, own, record, common := gitBinds(dir, state, b.cfg.Repo)
	var objs *objStore
	if common != "" {
		objs = b.objStore(common, state)
		objs.use(dir, record)
	}
	if own != nil {
		b.mu.Lock()
		if prev := b.refs[dir]; prev != nil && prev.ref == own.ref {
			own = prev
		} else {
			if b.refs == nil {
				b.refs = map[string]*ownRef{}
			}
			b.refs[dir] = own
		}
		b.mu.Unlock()
	}
	b.sync([]*objStore{objs}, []*ownRef{own})
	if objs != nil {
		args = append(args, objs.binds()...)
	}
	if own != nil {
		args = append(args, own.binds()...)
	}
	return args
}

// sync moves the objects of stores, then carries refs (nil entries are
// skipped), one sync of the box at a time: the refs' values inside are
// read first, so that what a ref names was written before the objects
// moved, and a commit inside during the sync waits for the next.
func (b *Box) sync(stores []*objStore, refs []*ownRef) {
	b.syncMu.Lock()
	defer b.syncMu.Unlock()
	type value struct {
		v  string
		ok bool
	}
	values := make([]value, len(refs))
	for i, o := range refs {
		if o != nil {
			values[i].v, values[i].ok = o.inside()
		}
	}
	for _, s := range stores {
		if s != nil {
			b.noteRefErr(s.sync())
		}
	}
	for i, o := range refs {
		if o != nil {
			b.noteRefErr(o.sync(values[i].v, values[i].ok))
		}
	}
	for _, s := range stores { // against HEAD as carried in
		if s != nil {
			b.noteRefErr(s.repair())
		}
	}
}

// objStore is the private object store of the repository whose git dir is
// common, under state: "objects" for the first repository, a numbered one
// for each other (a job works in one).
func (b *Box) objStore(common, state string) *objStore {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s := b.objs[common]; s != nil {
		return s
	}
	if b.objs == nil {
		b.objs = map[string]*objStore{}
	}
	name := "objects"
	if n := len(b.objs); n > 0 {
		name = fmt.Sprintf("objects-%d", n+1)
	}
	s := newObjStore(common, filepath.Join(state, name))
	b.objs[common] = s
	return s
}

// SyncRefs moves the objects git wrote inside into the repository's
// shared store (see objStore), then carries the commits made inside since
// the last sync out to the job's branch. Call it when a confined command
// ends and before pneuma's own git reads the branch or commits in the
// worktree (whose index may name blobs git add wrote inside); launching a
// command syncs too. A nil box has nothing to sync.
func (b *Box) SyncRefs() {
	if b == nil {
		return
	}
	b.mu.Lock()
	objs := make([]*objStore, 0, len(b.objs))
	for _, s := range b.objs {
		objs = append(objs, s)
	}
	refs := make([]*ownRef, 0, len(b.refs))
	for _, o := range b.refs {
		refs = append(refs, o)
	}
	b.mu.Unlock()
	b.sync(objs, refs)
}

// maxRefErrs bounds the ref errors a report lists.
const maxRefErrs = 10

// noteRefErr notes err for the report, each of a joined error's apart.
func (b *Box) noteRefErr(err error) {
	if err == nil {
		return
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range errs {
		if len(b.refErrs) < maxRefErrs {
			b.refErrs = append(b.refErrs, e.Error())
		}
	}
}

// Close stops the proxy. The config dir stays: it holds the transcripts.
func (b *Box) Close() error {
	b.SyncRefs()
	err := b.proxy.Close()
	_ = os.RemoveAll(b.sockDir) // a temp dir; the socket is already gone
	return err
}

// Report says what the sandbox allowed and refused.
func (b *Box) Report() Report {
	b.mu.Lock()
	refErrs := slices.Clone(b.refErrs)
	b.mu.Unlock()
	return Report{Network: b.allowed, Read: b.cfg.Spec.Read, Write: b.cfg.Spec.Write, Refused: b.proxy.Refused(), Denied: b.denied.list(), RefErrors: refErrs}
}

// Report is a job's sandbox as its report shows it.
type Report struct {
	Network []string  `json:"network"`
	Read    []string  `json:"read,omitempty"`
	Write   []string  `json:"write,omitempty"`
	Refused []Refused `json:"refused,omitempty"`
	// Denied lists the reads and writes the sandbox refused, as the job's
	// tool results show them (see NoteToolResult).
	Denied []Denied `json:"denied,omitempty"`
	// RefErrors are the job's branch updates made inside that were not
	// carried out to the repository, and the objects git wrote inside
	// that the repository refused (see Box.SyncRefs).
	RefErrors []string `json:"ref_errors,omitempty"`
}

// Env returns env for inside the sandbox: the proxy for every scheme, the
// private config dir and tmp, and IS_SANDBOX (the CLI allows
// bypassPermissions as root only in a sandbox). Git's object directory
// variables are dropped: git inside finds the job's private object store
// where the repository's is (see objStore), and needs no variable for it.
func (b *Box) Env(env []string) []string {
	drop := map[string]bool{"NO_PROXY": true, "no_proxy": true, "TMPDIR": true, "CLAUDE_CONFIG_DIR": true, "IS_SANDBOX": true,
		"GIT_OBJECT_DIRECTORY": true, "GIT_ALTERNATE_OBJECT_DIRECTORIES": true, "GIT_QUARANTINE_PATH": true}
	proxy := "http://127.0.0.1:" + strconv.Itoa(b.port)
	set := map[string]string{"CLAUDE_CONFIG_DIR": b.configDir, "TMPDIR": "/tmp", "IS_SANDBOX": "1"}
	for _, k := range []string{"HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"} {
		set[k], set[strings.ToLower(k)] = proxy, proxy
	}
	for k, v := range map[string]string{"GIT_AUTHOR_NAME": b.cfg.GitName, "GIT_COMMITTER_NAME": b.cfg.GitName,
		"GIT_AUTHOR_EMAIL": b.cfg.GitEmail, "GIT_COMMITTER_EMAIL": b.cfg.GitEmail} {
		if v != "" && !hasVar(env, k) {
			set[k] = v
		}
	}
	out := make([]string, 0, len(env)+len(set))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; !ok && !drop[k] {
			out = append(out, kv)
		}
	}
	for k, v := range set {
		out = append(out, k+"="+v)
	}
	return out
}

func hasVar(env []string, k string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, k+"=") {
			return true
		}
	}
	return false
}

// Prefix returns the argv that, followed by a command's, runs that command
// confined with dir as its working directory: bubblewrap, then the
// forwarder.
func (b *Box) Prefix(dir string) []string {
	args := append([]string{b.cfg.Bwrap}, b.bwrapArgs(dir)...)
	args = append(args, "--", b.cfg.Self, ForwardCommand, "--socket", insideSocket, "--listen", strconv.Itoa(b.port))
	for _, p := range b.raw {
		args = append(args, "--raw", strconv.Itoa(p))
	}
	return append(args, "--")
}

// Command returns the argv that runs argv confined in dir.
func (b *Box) Command(dir string, argv []string) []string {
	return append(b.Prefix(dir), argv...)
}
