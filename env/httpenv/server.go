package httpenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"ragen/env"
)

// Options configures a Server. The zero value means all defaults.
type Options struct {
	// MaxEnvs caps the live envs; a create beyond it is answered 429.
	// 0 means DefaultMaxEnvs.
	MaxEnvs int
	// IdleTimeout closes an env that has seen no request for this long
	// (abandoned by a crashed client). 0 means DefaultIdleTimeout; a
	// negative value disables expiry.
	IdleTimeout time.Duration
	// MaxBodyBytes caps a request body; larger bodies are answered 413.
	// 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// New builds an env; nil means env.New (the registry: import
	// ragen/env/all, or only the env packages to serve).
	New func(envType string, envConfig map[string]any) (env.BaseEnv, error)

	// AllowedDirs are the folders whose files a client's env_config may
	// name (keys ending in _file, _path, _dir, ...). None (the default)
	// refuses every such key: a client cannot make the server read
	// anything. Paths are resolved (symlinks too) and must stay inside;
	// a path outside is refused without touching the file system, so
	// errors do not tell which files exist.
	AllowedDirs []string
	// MaxFileBytes caps a file a client names (and refuses devices and
	// pipes). 0 means DefaultMaxFileBytes.
	MaxFileBytes int64
	// AllowURLs lets a client's env_config name URLs (keys ending in
	// url); off by default, so a client cannot make the server connect
	// elsewhere. Keys naming programs (python_path, ...) are always
	// refused.
	AllowURLs bool
	// Token, when set, is the bearer token every request but GET
	// /v1/health must carry (Authorization: Bearer TOKEN).
	Token string
	// MaxMemoryBytes caps the server's Go heap: creates and resets are
	// answered 503 while it is above, and Serve sets it as the runtime's
	// soft memory limit. 0 means DefaultMaxMemoryBytes; negative, no cap.
	MaxMemoryBytes int64
	// MaxEnvBytes caps what one create, reset or step may allocate; an
	// env that goes over is closed and the call answered 507. It is
	// measured as the process's allocation during the call, so calls
	// that overlap count each other's (conservative). 0 means
	// DefaultMaxEnvBytes; negative, no cap.
	MaxEnvBytes int64
	// MaxConns caps the open connections of Serve. At the cap a new
	// client takes the place of the connection idle the longest (between
	// keep-alive requests, or silent for a second since it connected);
	// with none idle it waits in the listen backlog. Replies to requests
	// without the token close their connection. 0 means DefaultMaxConns.
	MaxConns int
	// ReadTimeout bounds reading a request (headers and body), WriteTimeout
	// the handling and reply, ConnIdleTimeout a keep-alive connection
	// between requests. 0 means the defaults below.
	ReadTimeout, WriteTimeout, ConnIdleTimeout time.Duration
	// ShutdownTimeout bounds how long Serve waits, after ctx is done, for
	// calls in progress and env Close calls. 0 means DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
}

// Defaults of Options.
const (
	DefaultMaxEnvs         = 1024
	DefaultIdleTimeout     = 10 * time.Minute
	DefaultMaxBodyBytes    = 1 << 20
	DefaultMaxFileBytes    = 256 << 20
	DefaultMaxMemoryBytes  = 8 << 30
	DefaultMaxEnvBytes     = 1 << 30
	DefaultMaxConns        = 512
	DefaultReadTimeout     = 10 * time.Second
	DefaultWriteTimeout    = 5 * time.Minute
	DefaultConnIdleTimeout = 2 * time.Minute
	DefaultShutdownTimeout = 3 * time.Second
)

func (o Options) withDefaults() Options {
	if o.MaxEnvs <= 0 {
		o.MaxEnvs = DefaultMaxEnvs
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = DefaultMaxFileBytes
	}
	if o.MaxMemoryBytes == 0 {
		o.MaxMemoryBytes = DefaultMaxMemoryBytes
	}
	if o.MaxEnvBytes == 0 {
		o.MaxEnvBytes = DefaultMaxEnvBytes
	}
	if o.MaxConns <= 0 {
		o.MaxConns = DefaultMaxConns
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = DefaultReadTimeout
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.ConnIdleTimeout <= 0 {
		o.ConnIdleTimeout = DefaultConnIdleTimeout
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = DefaultShutdownTimeout
	}
	if o.New == nil {
		o.New = env.New
	}
	return o
}

// Server serves envs over the protocol of the package doc. It is an
// http.Handler; Close closes every live env.
type Server struct {
	opts   Options
	mux    *http.ServeMux
	files  *filePolicy
	gcMu   sync.Mutex
	lastGC time.Time

	mu      sync.Mutex
	envs    map[string]*entry
	expired map[string]time.Time // recently expired ids, for clearer 404s
	closed  bool

	stop chan struct{}
	done chan struct{}
}

// entry is one live env. mu serialises calls on it (a BaseEnv is used by
// one goroutine at a time); lastUsed and busy are guarded by Server.mu.
type entry struct {
	mu       sync.Mutex
	env      env.BaseEnv
	envType  string
	lastUsed time.Time
	busy     int
	closed   bool // guarded by mu
}

// NewServer returns a Server. It starts a goroutine that expires idle envs;
// Close stops it. An allowed folder that is not one panics; use
// NewServerChecked to get an error instead.
func NewServer(opts Options) *Server {
	s, err := NewServerChecked(opts)
	if err != nil {
		panic(err)
	}
	return s
}

// NewServerChecked is NewServer returning an error for unusable Options.
func NewServerChecked(opts Options) (*Server, error) {
	opts = opts.withDefaults()
	files, err := newFilePolicy(opts)
	if err != nil {
		return nil, err
	}
	s := &Server{
		files:   files,
		opts:    opts,
		mux:     http.NewServeMux(),
		envs:    map[string]*entry{},
		expired: map[string]time.Time{},
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	s.mux.HandleFunc("GET /v1/health", s.health)
	s.mux.HandleFunc("POST /v1/envs", s.create)
	s.mux.HandleFunc("POST /v1/envs/{id}/reset", s.reset)
	s.mux.HandleFunc("POST /v1/envs/{id}/step", s.step)
	s.mux.HandleFunc("GET /v1/envs/{id}/render", s.render)
	s.mux.HandleFunc("DELETE /v1/envs/{id}", s.delete)
	go s.janitor()
	return s, nil
}

// ServeHTTP implements http.Handler. Unknown routes are answered 404 and
// method mismatches 405, with JSON errors like every other failure.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	authed := authorized(r, s.opts.Token)
	if !authed {
		// No keep-alive without the token: idle unauthenticated
		// connections would hold the connection cap.
		w.Header().Set("Connection", "close")
	}
	if !authed && !(r.Method == http.MethodGet && r.URL.Path == "/v1/health") {
		w.Header().Set("WWW-Authenticate", `Bearer realm="ragen-envs"`)
		writeError(w, http.StatusUnauthorized, "httpenv: missing or wrong bearer token (set token in the http env's config, or "+TokenEnv+")")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes)
	s.mux.ServeHTTP(&errorJSONWriter{ResponseWriter: w, method: r.Method, path: r.URL.Path}, r)
}

// Len reports the number of live envs.
func (s *Server) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.envs)
}

// Close stops idle expiry and closes every live env (waiting for calls in
// progress on each), returning their Close errors joined. Later requests
// are answered 503.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	envs := s.envs
	s.envs = map[string]*entry{}
	s.mu.Unlock()
	close(s.stop)
	<-s.done
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for id, e := range envs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := e.close(); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("httpenv: close env %s (%s): %w", id, e.envType, err))
				mu.Unlock()
			}
		}()
	}
	all := make(chan struct{})
	go func() { wg.Wait(); close(all) }()
	t := time.NewTimer(s.opts.ShutdownTimeout)
	defer t.Stop()
	select {
	case <-all:
	case <-t.C:
		mu.Lock()
		errs = append(errs, fmt.Errorf("httpenv: gave up on envs still busy after %s (a call in progress holds them)", s.opts.ShutdownTimeout))
		mu.Unlock()
	}
	mu.Lock()
	defer mu.Unlock()
	return errors.Join(errs...)
}

// memoryFull reports whether the heap is over MaxMemoryBytes, collecting
// garbage first (at most every 100 ms) when it looks so.
func (s *Server) memoryFull() bool {
	limit := s.opts.MaxMemoryBytes
	if limit < 0 || heapBytes() <= uint64(limit) {
		return false
	}
	s.gcMu.Lock()
	if time.Since(s.lastGC) > 100*time.Millisecond {
		runtime.GC()
		s.lastGC = time.Now()
	}
	s.gcMu.Unlock()
	return heapBytes() > uint64(limit)
}

func (s *Server) refuseIfFull(w http.ResponseWriter) bool {
	if s.memoryFull() {
		writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("httpenv: server memory cap reached (%d bytes); close envs or retry later", s.opts.MaxMemoryBytes))
		return true
	}
	return false
}

// errEnvTooBig is an env call that allocated over MaxEnvBytes.
type errEnvTooBig struct {
	call  string
	bytes uint64
	limit int64
}

func (e errEnvTooBig) Error() string {
	return fmt.Sprintf("%s allocated %d bytes, over the server's per-env cap of %d; the env was closed (use a smaller env config)", e.call, e.bytes, e.limit)
}

// metered runs f and reports errEnvTooBig when the process allocated more
// than MaxEnvBytes meanwhile.
func (s *Server) metered(call string, f func() error) error {
	before := allocBytes()
	err := f()
	if lim := s.opts.MaxEnvBytes; lim > 0 && err == nil {
		if d := allocBytes() - before; d > uint64(lim) {
			return errEnvTooBig{call: call, bytes: d, limit: lim}
		}
	}
	return err
}

// drop removes and closes an env after a call that broke a cap.
func (s *Server) drop(id string, e *entry) {
	s.mu.Lock()
	if s.envs[id] == e {
		delete(s.envs, id)
	}
	s.mu.Unlock()
	e.closed = true // e.mu is held by the caller
	_ = e.env.Close()
}

func (e *entry) close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	return e.env.Close()
}

func (s *Server) janitor() {
	defer close(s.done)
	if s.opts.IdleTimeout < 0 {
		<-s.stop
		return
	}
	tick := max(s.opts.IdleTimeout/4, time.Millisecond)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			s.expire(now)
		}
	}
}

// expire closes envs idle for longer than IdleTimeout.
func (s *Server) expire(now time.Time) {
	var victims []*entry
	s.mu.Lock()
	for id, e := range s.envs {
		if e.busy == 0 && now.Sub(e.lastUsed) > s.opts.IdleTimeout {
			delete(s.envs, id)
			s.expired[id] = now
			victims = append(victims, e)
		}
	}
	// Remember expired ids for a while, for a clear error message.
	for id, at := range s.expired {
		if now.Sub(at) > 10*max(s.opts.IdleTimeout, time.Minute) {
			delete(s.expired, id)
		}
	}
	s.mu.Unlock()
	for _, e := range victims {
		_ = e.close()
	}
}

// acquire finds env id, marks it busy and locks it. The caller must call
// release.
func (s *Server) acquire(w http.ResponseWriter, r *http.Request) (string, *entry, bool) {
	id := r.PathValue("id")
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		writeError(w, http.StatusServiceUnavailable, "httpenv: server closed")
		return id, nil, false
	}
	e, ok := s.envs[id]
	if !ok {
		msg := fmt.Sprintf("httpenv: unknown env id %q", id)
		if _, exp := s.expired[id]; exp {
			msg = fmt.Sprintf("httpenv: env %s expired after %s idle", id, s.opts.IdleTimeout)
		}
		s.mu.Unlock()
		writeError(w, http.StatusNotFound, msg)
		return id, nil, false
	}
	e.busy++
	s.mu.Unlock()
	e.mu.Lock()
	if e.closed { // deleted or closed while we waited
		e.mu.Unlock()
		s.release(e)
		writeError(w, http.StatusNotFound, fmt.Sprintf("httpenv: env %s was closed", id))
		return id, nil, false
	}
	return id, e, true
}

func (s *Server) release(e *entry) {
	s.mu.Lock()
	e.busy--
	e.lastUsed = time.Now()
	s.mu.Unlock()
}

func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	n, closed := len(s.envs), s.closed
	s.mu.Unlock()
	if closed {
		writeError(w, http.StatusServiceUnavailable, "httpenv: server closed")
		return
	}
	writeJSON(w, http.StatusOK, healthReply{Status: "ok", Envs: n, Types: env.Types()})
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	var req createRequest
	if !readRequest(w, r, &req) {
		return
	}
	if req.EnvType == "" {
		writeError(w, http.StatusBadRequest, `httpenv: create: missing field "env_type"`)
		return
	}
	cfg, err := fromWire(req.EnvConfig)
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("httpenv: create: env_config: %v", err))
		return
	}
	req.EnvConfig, _ = cfg.(map[string]any)
	if req.EnvConfig, err = s.files.check(req.EnvConfig); err != nil {
		writeError(w, http.StatusForbidden, err.Error())
		return
	}
	if s.refuseIfFull(w) {
		return
	}
	// Reserve a slot first so that a burst of creates cannot overshoot
	// the cap while envs are being built.
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		writeError(w, http.StatusServiceUnavailable, "httpenv: server closed")
		return
	}
	if len(s.envs) >= s.opts.MaxEnvs {
		s.mu.Unlock()
		writeError(w, http.StatusTooManyRequests, fmt.Sprintf("httpenv: env cap reached (%d live envs); close some first", s.opts.MaxEnvs))
		return
	}
	id := newID()
	e := &entry{envType: req.EnvType, lastUsed: time.Now(), busy: 1}
	e.mu.Lock()
	s.envs[id] = e
	s.mu.Unlock()

	var st envStateOut
	err = s.metered("create", func() error {
		return protect(func() error {
			var err error
			if e.env, err = s.opts.New(req.EnvType, req.EnvConfig); err != nil {
				return err
			}
			st, err = stateOf(e.env)
			return err
		})
	})
	if err != nil {
		if e.env != nil {
			_ = e.env.Close()
		}
		e.closed = true
		e.mu.Unlock()
		s.mu.Lock()
		delete(s.envs, id)
		s.mu.Unlock()
		writeEnvError(w, err)
		return
	}
	e.mu.Unlock()
	s.release(e)
	writeJSON(w, http.StatusOK, createOut{ID: id, envStateOut: st})
}

func (s *Server) reset(w http.ResponseWriter, r *http.Request) {
	var req resetRequest
	if !readRequest(w, r, &req) {
		return
	}
	if req.Seed == nil {
		writeError(w, http.StatusBadRequest, `httpenv: reset: missing field "seed"`)
		return
	}
	// Any mode goes to the env as is (envs that care check it); an
	// absent one means train.
	mode := env.Mode(req.Mode)
	if mode == "" {
		mode = env.ModeTrain
	}
	if s.refuseIfFull(w) {
		return
	}
	id, e, ok := s.acquire(w, r)
	if !ok {
		return
	}
	defer s.release(e)
	defer e.mu.Unlock()
	var out resetOut
	err := s.metered("reset", func() error {
		return protect(func() error {
			obs, err := e.env.Reset(r.Context(), *req.Seed, mode)
			if err != nil {
				return err
			}
			out.Observation = obs
			out.envStateOut, err = stateOf(e.env)
			return err
		})
	})
	if tooBig := (errEnvTooBig{}); errors.As(err, &tooBig) {
		s.drop(id, e)
	}
	if err != nil {
		writeEnvError(w, fmt.Errorf("env %s: reset: %w", id, err))
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) step(w http.ResponseWriter, r *http.Request) {
	var req stepRequest
	if !readRequest(w, r, &req) {
		return
	}
	if req.Action == nil {
		writeError(w, http.StatusBadRequest, `httpenv: step: missing field "action"`)
		return
	}
	id, e, ok := s.acquire(w, r)
	if !ok {
		return
	}
	defer s.release(e)
	defer e.mu.Unlock()
	var out stepOut
	err := s.metered("step", func() error { return s.stepOnce(r, e, req, &out) })
	if tooBig := (errEnvTooBig{}); errors.As(err, &tooBig) {
		s.drop(id, e)
	}
	if err != nil {
		writeEnvError(w, fmt.Errorf("env %s: step: %w", id, err))
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) stepOnce(r *http.Request, e *entry, req stepRequest, out *stepOut) error {
	return protect(func() error {
		res, err := e.env.Step(r.Context(), env.Action{ID: req.Action.ID, Text: req.Action.Text})
		if err != nil {
			return err
		}
		out.Observation, out.RewardIsInt, out.Done = res.Observation, res.RewardIsInt, res.Done
		rw, err := pyFloat(res.Reward, 64)
		if err != nil {
			return internalError{fmt.Errorf("reward: %w", err)}
		}
		out.Reward = json.RawMessage(rw)
		if err := checkInfo(res.Info); err != nil {
			return internalError{err}
		}
		if res.Info == nil {
			res.Info = env.Info{}
		}
		if out.Info, err = marshalValue(map[string]any(res.Info)); err != nil {
			return internalError{fmt.Errorf("info: %w", err)}
		}
		out.envStateOut, err = stateOf(e.env)
		return err
	})
}

func (s *Server) render(w http.ResponseWriter, r *http.Request) {
	_, e, ok := s.acquire(w, r)
	if !ok {
		return
	}
	defer s.release(e)
	defer e.mu.Unlock()
	var obs string
	if err := protect(func() error { obs = e.env.Render(); return nil }); err != nil {
		writeEnvError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, renderReply{Observation: &obs})
}

func (s *Server) delete(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	e, ok := s.envs[id]
	delete(s.envs, id)
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("httpenv: unknown env id %q", id))
		return
	}
	if err := e.close(); err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("httpenv: env %s: close: %v", id, err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// Replies as the server writes them: reward and info are pre-encoded with
// Python's number convention; action_lookup and grid are present exactly
// when the env implements env.ActionLookup / env.Gridder (null when the
// env's value is nil).
type envStateOut struct {
	Render       string          `json:"render"`
	ActionLookup json.RawMessage `json:"action_lookup,omitempty"`
	Grid         json.RawMessage `json:"grid,omitempty"`
}

type createOut struct {
	ID string `json:"id"`
	envStateOut
}

type resetOut struct {
	Observation string `json:"observation"`
	envStateOut
}

type stepOut struct {
	Observation string          `json:"observation"`
	Reward      json.RawMessage `json:"reward"`
	RewardIsInt bool            `json:"reward_is_int"`
	Done        bool            `json:"done"`
	Info        json.RawMessage `json:"info"`
	envStateOut
}

func stateOf(e env.BaseEnv) (envStateOut, error) {
	st := envStateOut{Render: e.Render()}
	var err error
	if l, ok := e.(env.ActionLookup); ok {
		if st.ActionLookup, err = json.Marshal(l.ActionLookup()); err != nil {
			return st, internalError{fmt.Errorf("action_lookup: %w", err)}
		}
	}
	if g, ok := e.(env.Gridder); ok {
		if st.Grid, err = json.Marshal(g.Grid()); err != nil {
			return st, internalError{fmt.Errorf("grid: %w", err)}
		}
	}
	return st, nil
}

// internalError marks a failure of the server or of an env's contract
// (a panic, an info value that cannot be sent): answered 500. Errors the
// env returns are answered 422.
type internalError struct{ err error }

func (e internalError) Error() string { return e.err.Error() }
func (e internalError) Unwrap() error { return e.err }

// protect runs f, turning a panic into an internalError.
func protect(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = internalError{fmt.Errorf("panic: %v\n%s", p, debug.Stack())}
		}
	}()
	return f()
}

func writeEnvError(w http.ResponseWriter, err error) {
	code := http.StatusUnprocessableEntity
	var ie internalError
	if errors.As(err, &ie) {
		code = http.StatusInternalServerError
	}
	if errors.As(err, new(errEnvTooBig)) {
		code = http.StatusInsufficientStorage
	}
	writeError(w, code, err.Error())
}

// readRequest decodes a request body strictly; on failure it answers 400
// (413 for a body over the limit) and returns false.
func readRequest(w http.ResponseWriter, r *http.Request, dst any) bool {
	err := decodeStrict(r.Body, dst)
	if err == nil {
		return true
	}
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("httpenv: request body over %d bytes", tooBig.Limit))
		return false
	}
	writeError(w, http.StatusBadRequest, fmt.Sprintf("httpenv: %s %s: bad request body: %v", r.Method, r.URL.Path, err))
	return false
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "httpenv: encode reply: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}

func writeError(w http.ResponseWriter, code int, msg string) {
	b, _ := json.Marshal(errorReply{Error: msg})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}

// errorJSONWriter turns ServeMux's plain-text 404 and 405 replies into
// JSON errors.
type errorJSONWriter struct {
	http.ResponseWriter
	method, path string
	plain        bool // swallowing a plain-text error body
}

func (w *errorJSONWriter) WriteHeader(code int) {
	if code >= 400 && !strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") {
		w.plain = true
		msg := fmt.Sprintf("httpenv: no route %s %s", w.method, w.path)
		if code == http.StatusMethodNotAllowed {
			msg = fmt.Sprintf("httpenv: %s %s: method not allowed (allowed: %s)", w.method, w.path, w.Header().Get("Allow"))
		}
		writeError(w.ResponseWriter, code, msg)
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *errorJSONWriter) Write(b []byte) (int, error) {
	if w.plain {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ListenAndServe serves envs on addr until ctx is done, then shuts the
// HTTP server down (waiting up to ShutdownTimeout for calls in progress,
// then closing their connections, which cancels their contexts) and closes
// every env (again within ShutdownTimeout). It returns nil after a
// shutdown caused by ctx.
func ListenAndServe(ctx context.Context, addr string, opts Options) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("httpenv: %w", err)
	}
	return Serve(ctx, ln, opts)
}

// Serve is ListenAndServe on an existing listener, which it closes. It
// applies the connection cap and timeouts of opts, and MaxMemoryBytes as
// the Go runtime's soft memory limit (process-wide).
func Serve(ctx context.Context, ln net.Listener, opts Options) error {
	s, err := NewServerChecked(opts)
	if err != nil {
		ln.Close()
		return err
	}
	o := s.opts
	if o.MaxMemoryBytes > 0 {
		debug.SetMemoryLimit(o.MaxMemoryBytes)
	}
	ll := newLimitListener(ln, o.MaxConns)
	hs := &http.Server{Handler: s, ReadHeaderTimeout: min(10*time.Second, o.ReadTimeout), ReadTimeout: o.ReadTimeout,
		WriteTimeout: o.WriteTimeout, IdleTimeout: o.ConnIdleTimeout, MaxHeaderBytes: 64 << 10, ConnState: ll.connState}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ll) }()
	select {
	case err = <-errc:
	case <-ctx.Done():
		// Shutdown closes the listener (once: closing it here as well
		// made Shutdown fail with "use of closed network connection").
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.ShutdownTimeout)
		err = hs.Shutdown(sctx)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			err = hs.Close()
		}
		<-errc
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return errors.Join(err, s.Close())
}
