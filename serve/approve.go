package serve

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Approval links: a permission_request notification carries a link that
// opens a page for that one request without the server's bearer token. The
// link's token is signed by the server (HMAC-SHA256 with a key kept in the
// state directory), bound to the session, the request id and an expiry,
// and good for one decision. Only a POST from the page decides; the link
// alone shows the request and nothing more.

// DefaultLinkTTL is how long an approval link works.
const DefaultLinkTTL = 10 * time.Minute

// linkKeyFile holds the server's link key in the state directory.
const linkKeyFile = "link.key"

// Why a link is refused; the page says so in words.
var (
	errLinkInvalid  = errors.New("this link was not made by this server, or it was changed: it decides nothing")
	errLinkExpired  = errors.New("this link has expired: it decides nothing; open the console to answer the request")
	errLinkUsed     = errors.New("this link was used already: a link decides once")
	errLinkAnswered = errors.New("this request was answered already, or withdrawn: there is nothing left to decide")
)

// links mints and checks approval tokens.
type links struct {
	key    []byte
	ttl    time.Duration
	public string // the server's public URL, without a trailing slash
	now    func() time.Time

	mu   sync.Mutex
	used map[string]time.Time // nonce → expiry, forgotten once expired
}

// linkClaims are what a token binds.
type linkClaims struct {
	session, request, nonce string
	expires                 time.Time
}

// newLinks loads (or makes) the state directory's link key. A key file
// others may read is refused: anyone holding it can mint links.
func newLinks(stateDir, public string, ttl time.Duration) (*links, error) {
	if ttl <= 0 {
		ttl = DefaultLinkTTL
	}
	key, err := linkKey(filepath.Join(stateDir, linkKeyFile))
	if err != nil {
		return nil, err
	}
	return &links{key: key, ttl: ttl, public: strings.TrimRight(public, "/"), now: time.Now, used: map[string]time.Time{}}, nil
}

func linkKey(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		key := make([]byte, 32)
		_, _ = rand.Read(key)
		_, werr := f.Write(key)
		if err := errors.Join(werr, f.Close()); err != nil {
			return nil, fmt.Errorf("write link key %s: %w", path, err)
		}
		return key, nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("create link key %s: %w", path, err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("link key: %w", err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("link key %s: must be a regular file of mode 0600 (it is %s)", path, fi.Mode())
	}
	key, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read link key: %w", err)
	}
	if len(key) < 32 {
		return nil, fmt.Errorf("link key %s: shorter than 32 bytes; remove it to make a new one", path)
	}
	return key, nil
}

// mint returns the link of a session's request and its expiry; "" when the
// ids cannot be bound (they never hold a newline).
func (l *links) mint(session, request string) (string, time.Time) {
	if strings.ContainsAny(session+request, "\n") || session == "" || request == "" {
		return "", time.Time{}
	}
	var n [12]byte
	_, _ = rand.Read(n[:])
	exp := l.clock().Add(l.ttl).Truncate(time.Second)
	payload := strings.Join([]string{session, request, strconv.FormatInt(exp.Unix(), 10), hex.EncodeToString(n[:])}, "\n")
	b64 := base64.RawURLEncoding
	tok := b64.EncodeToString([]byte(payload)) + "." + b64.EncodeToString(l.mac("link", payload))
	return l.public + "/approve/" + tok, exp
}

func (l *links) mac(purpose, s string) []byte {
	m := hmac.New(sha256.New, l.key)
	m.Write([]byte("pneuma-" + purpose + "-v1\n" + s))
	return m.Sum(nil)
}

// parse checks a token's signature and expiry; it does not use it.
func (l *links) parse(tok string) (linkClaims, error) {
	b64 := base64.RawURLEncoding
	p, sig, ok := strings.Cut(tok, ".")
	payload, err1 := b64.DecodeString(p)
	mac, err2 := b64.DecodeString(sig)
	if !ok || err1 != nil || err2 != nil || !hmac.Equal(mac, l.mac("link", string(payload))) {
		return linkClaims{}, errLinkInvalid
	}
	f := strings.Split(string(payload), "\n")
	if len(f) != 4 {
		return linkClaims{}, errLinkInvalid
	}
	sec, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return linkClaims{}, errLinkInvalid
	}
	c := linkClaims{session: f[0], request: f[1], expires: time.Unix(sec, 0), nonce: f[3]}
	if !l.clock().Before(c.expires) {
		return c, errLinkExpired
	}
	return c, nil
}

// clock is the links' time (tests move it).
func (l *links) clock() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.now()
}

// csrf is the page's form token: only a page the server rendered for this
// link can give it back.
func (l *links) csrf(tok string) string { return hex.EncodeToString(l.mac("csrf", tok)) }

// wasUsed says whether c's link decided already.
func (l *links) wasUsed(c linkClaims) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, used := l.used[c.nonce]
	return used
}

// use marks c's link used; false when it was already.
func (l *links) use(c linkClaims) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	for n, exp := range l.used {
		if now.After(exp) {
			delete(l.used, n) // an expired link is refused by parse anyway
		}
	}
	if _, used := l.used[c.nonce]; used {
		return false
	}
	l.used[c.nonce] = c.expires
	return true
}

// marshalIndent is the input's JSON as people read it.
func marshalIndent(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}
