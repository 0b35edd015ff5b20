package httpenv

import (
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/metrics"
	"sort"
	"strings"
	"sync"
	"time"
)

// TokenEnv is the environment variable holding the bearer token, read by
// `ragen serve-envs` when --token is not given and by Client when its
// config has no token.
const TokenEnv = "RAGEN_ENV_TOKEN"

// Key classes of env_config a client may not set freely. Env configs name
// files and folders in keys ending in _file, _path or _dir (level_file,
// train_path, dataset_path, corpus_path, cache_dir, ...), URLs in keys
// ending in url, and programs in keys naming one (python_path, ...).
func isPathKey(k string) bool {
	k = strings.ToLower(k)
	for _, s := range []string{"file", "path", "dir", "files", "paths", "dirs", "folder", "root"} {
		if k == s || strings.HasSuffix(k, "_"+s) {
			return true
		}
	}
	return false
}

func isURLKey(k string) bool {
	k = strings.ToLower(k)
	return k == "url" || k == "urls" || strings.HasSuffix(k, "_url") || strings.HasSuffix(k, "_urls") || strings.HasSuffix(k, "endpoint")
}

func isProgramKey(k string) bool {
	k = strings.ToLower(k)
	for _, s := range []string{"python", "exe", "executable", "binary", "command", "cmd", "program", "interpreter"} {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}

// isSandboxKey names settings that weaken or loosen a code sandbox
// (deepcoder's sandbox_mode, and any sandbox_* limit): like programs, they
// are the server operator's choice.
func isSandboxKey(k string) bool {
	return strings.HasPrefix(strings.ToLower(k), "sandbox")
}

// filePolicy decides which server-side files a client's env_config may
// name.
type filePolicy struct {
	dirs     []string // allowed folders, absolute with symlinks resolved
	maxBytes int64
	urls     bool
}

func newFilePolicy(o Options) (*filePolicy, error) {
	p := &filePolicy{maxBytes: o.MaxFileBytes, urls: o.AllowURLs}
	for _, d := range o.AllowedDirs {
		abs, err := filepath.Abs(d)
		if err == nil {
			abs, err = filepath.EvalSymlinks(abs)
		}
		if err != nil {
			return nil, fmt.Errorf("httpenv: allowed folder %s: %w", d, err)
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("httpenv: allowed folder %s is not a folder", d)
		}
		p.dirs = append(p.dirs, abs)
	}
	return p, nil
}

// errRefused is a config the policy refuses (answered 403).
type errRefused struct{ msg string }

func (e errRefused) Error() string { return e.msg }

// check walks an env_config and returns it with every path value replaced
// by its resolved absolute form, or an error naming the first refused key.
// Paths outside the allowed folders are refused before the file system is
// touched, so the error says nothing about whether they exist.
func (p *filePolicy) check(cfg map[string]any) (map[string]any, error) {
	out, err := p.walk("env_config", "", cfg)
	if err != nil {
		return nil, err
	}
	m, _ := out.(map[string]any)
	return m, nil
}

func (p *filePolicy) walk(key, leaf string, v any) (any, error) {
	if isSandboxKey(leaf) {
		return nil, errRefused{fmt.Sprintf("httpenv: %s: sandbox settings are the server operator's choice; a client may not set them", key)}
	}
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			w, err := p.walk(key+"."+k, k, x[k])
			if err != nil {
				return nil, err
			}
			out[k] = w
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			w, err := p.walk(fmt.Sprintf("%s[%d]", key, i), leaf, e)
			if err != nil {
				return nil, err
			}
			out[i] = w
		}
		return out, nil
	case string:
		switch {
		case x == "":
			return x, nil
		case isProgramKey(leaf):
			return nil, errRefused{fmt.Sprintf("httpenv: %s: programs to run are the server operator's choice; a client may not set them", key)}
		case isURLKey(leaf):
			if !p.urls {
				return nil, errRefused{fmt.Sprintf("httpenv: %s: this server does not let clients name URLs (serve-envs --allow-urls)", key)}
			}
			return x, nil
		case isPathKey(leaf):
			r, err := p.resolve(key, x)
			if err != nil {
				return nil, err
			}
			return r, nil
		}
	}
	return v, nil
}

// resolve returns the absolute, symlink-free form of a path inside an
// allowed folder, checking that it is a folder or a regular file of at
// most maxBytes.
func (p *filePolicy) resolve(key, path string) (string, error) {
	if len(p.dirs) == 0 {
		return "", errRefused{fmt.Sprintf("httpenv: %s: file access is off on this server (start it with serve-envs --allow-dir DIR to let clients name files under DIR)", key)}
	}
	outside := errRefused{fmt.Sprintf("httpenv: %s: %q is not under a folder this server allows", key, path)}
	abs, err := filepath.Abs(path)
	if err != nil || !p.inside(abs) {
		return "", outside
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", errRefused{fmt.Sprintf("httpenv: %s: %q: no such file or folder under the allowed folders", key, path)}
	}
	if !p.inside(real) {
		return "", outside // a symlink out of the allowed folders
	}
	st, err := os.Stat(real)
	if err != nil {
		return "", errRefused{fmt.Sprintf("httpenv: %s: %q: no such file or folder under the allowed folders", key, path)}
	}
	switch {
	case st.IsDir():
	case !st.Mode().IsRegular():
		return "", errRefused{fmt.Sprintf("httpenv: %s: %q is not a regular file", key, path)}
	case st.Size() > p.maxBytes:
		return "", errRefused{fmt.Sprintf("httpenv: %s: %q is %d bytes, over this server's cap of %d (serve-envs --max-file-bytes)", key, path, st.Size(), p.maxBytes)}
	}
	return real, nil
}

func (p *filePolicy) inside(abs string) bool {
	for _, d := range p.dirs {
		if rel, err := filepath.Rel(d, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// authorized checks the bearer token in constant time.
func authorized(r *http.Request, token string) bool {
	if token == "" {
		return true
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

// heapBytes is the Go heap in use by live and not yet swept objects, a
// cheap stand-in for the server's memory (it is what grows when envs
// grow).
func heapBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// allocBytes is the cumulative bytes allocated on the heap.
func allocBytes() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// limitListener accepts at most n connections at once. When all n are
// open, a new connection gets the slot of the one idle the longest:
// between keep-alive requests, or connected and silent for more than
// newGrace. With none idle, Accept waits (holding the one new connection)
// until a connection closes or turns idle, so busy clients are never cut
// and idle ones cannot lock the server.
type limitListener struct {
	net.Listener
	n         int
	newGrace  time.Duration
	done      chan struct{}
	closeOnce sync.Once
	wake      chan struct{} // a connection closed or went idle

	mu    sync.Mutex
	conns map[*limitConn]struct{}
}

// defaultNewGrace is how long a connection may stay silent after
// connecting before it may be shed for a new one at the cap.
const defaultNewGrace = time.Second

func newLimitListener(l net.Listener, n int) *limitListener {
	return &limitListener{Listener: l, n: n, newGrace: defaultNewGrace, done: make(chan struct{}),
		wake: make(chan struct{}, 1), conns: map[*limitConn]struct{}{}}
}

// Close closes the listener, also ending an Accept waiting for a slot.
// Later calls do nothing and return nil (http.Server.Shutdown closes the
// listener it serves; a second close must not turn into an error).
func (l *limitListener) Close() error {
	var err error
	l.closeOnce.Do(func() {
		close(l.done)
		err = l.Listener.Close()
	})
	return err
}

// Open reports the connections open now.
func (l *limitListener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

func (l *limitListener) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (l *limitListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	for {
		now := time.Now()
		l.mu.Lock()
		if len(l.conns) < l.n {
			lc := &limitConn{Conn: c, l: l, state: http.StateNew, since: now}
			l.conns[lc] = struct{}{}
			l.mu.Unlock()
			return lc, nil
		}
		victim, wait := l.idlest(now)
		l.mu.Unlock()
		if victim != nil {
			victim.Close()
			continue
		}
		var timeout <-chan time.Time
		var t *time.Timer
		if wait > 0 {
			t = time.NewTimer(wait)
			timeout = t.C
		}
		closed := false
		select {
		case <-l.wake:
		case <-timeout:
		case <-l.done:
			closed = true
		}
		if t != nil {
			t.Stop()
		}
		if closed {
			c.Close()
			return nil, net.ErrClosed
		}
	}
}

// idlest returns the connection to shed for a new one: the one idle
// between requests the longest, else the one silent since it connected
// the longest, past newGrace. With none, wait is when the next silent one
// passes newGrace (0: none will). l.mu is held.
func (l *limitListener) idlest(now time.Time) (victim *limitConn, wait time.Duration) {
	var idle, silent *limitConn
	for c := range l.conns {
		switch c.state {
		case http.StateIdle:
			if idle == nil || c.since.Before(idle.since) {
				idle = c
			}
		case http.StateNew:
			if silent == nil || c.since.Before(silent.since) {
				silent = c
			}
		}
	}
	switch {
	case idle != nil:
		return idle, 0
	case silent == nil:
		return nil, 0
	case now.Sub(silent.since) >= l.newGrace:
		return silent, 0
	}
	return nil, l.newGrace - now.Sub(silent.since)
}

// connState is the http.Server's ConnState hook: it records what each
// connection is doing, for idlest.
func (l *limitListener) connState(c net.Conn, s http.ConnState) {
	lc, ok := c.(*limitConn)
	if !ok {
		return
	}
	l.mu.Lock()
	if _, open := l.conns[lc]; open && s != http.StateClosed {
		lc.state, lc.since = s, time.Now()
	}
	l.mu.Unlock()
	if s == http.StateIdle {
		l.signal()
	}
}

type limitConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
	// guarded by l.mu
	state http.ConnState
	since time.Time
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
		c.l.signal()
	})
	return err
}
