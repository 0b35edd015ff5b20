package dash

import (
	"crypto/subtle"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"time"
)

//go:embed assets
var assets embed.FS

// Options configure a Server.
type Options struct {
	// Runs are the run folders to show (each a run folder with
	// metrics.jsonl, or a sweep folder whose sub-folders are runs).
	Runs []string
	// Token, when set, is required of every request (Authorization: Bearer,
	// or ?token= which sets a cookie). Required when Addr is not loopback.
	Token string
	// Play configures the live play page (nil: the page says play is off).
	Play *PlayOptions
	// PollInterval is how often pages poll for new metrics (default 2 s).
	PollInterval time.Duration
}

// Server is the dashboard's http.Handler.
type Server struct {
	opt  Options
	runs *runSet
	play *player
	mux  *http.ServeMux
	// loopbackOnly rejects non-loopback Host headers (set by Listen for
	// loopback addresses).
	loopbackOnly bool
}

// New checks the run folders and returns the server.
func New(opt Options) (*Server, error) {
	if len(opt.Runs) == 0 {
		return nil, errors.New("dash: no run folders given")
	}
	rs, err := newRunSet(opt.Runs)
	if err != nil {
		return nil, err
	}
	if opt.PollInterval <= 0 {
		opt.PollInterval = 2 * time.Second
	}
	s := &Server{opt: opt, runs: rs, mux: http.NewServeMux()}
	if opt.Play != nil {
		if s.play, err = newPlayer(*opt.Play); err != nil {
			return nil, err
		}
	}
	static, _ := fs.Sub(assets, "assets")
	fileServer := http.FileServer(http.FS(static))
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", fileServer))
	for _, p := range []string{"/", "/runs", "/trajectories", "/ragen2", "/play"} {
		s.mux.HandleFunc("GET "+p, s.page)
	}
	s.mux.HandleFunc("GET /api/config", s.apiConfig)
	s.mux.HandleFunc("GET /api/runs", s.apiRuns)
	s.mux.HandleFunc("GET /api/metrics", s.apiMetrics)
	s.mux.HandleFunc("GET /api/rollouts", s.apiRollouts)
	s.mux.HandleFunc("GET /api/trajectories", s.apiTrajectories)
	s.mux.HandleFunc("GET /api/filter", s.apiFilter)
	s.mux.HandleFunc("GET /api/sweep", s.apiSweep)
	s.mux.HandleFunc("GET /api/play/options", s.apiPlayOptions)
	s.mux.HandleFunc("POST /api/play/start", s.apiPlayStart)
	s.mux.HandleFunc("GET /api/play/events", s.apiPlayEvents)
	s.mux.HandleFunc("POST /api/play/step", s.apiPlayStep)
	s.mux.HandleFunc("POST /api/play/auto", s.apiPlayAuto)
	s.mux.HandleFunc("POST /api/play/stop", s.apiPlayStop)
	return s, nil
}

// Close stops every play session.
func (s *Server) Close() error {
	if s.play != nil {
		s.play.closeAll()
	}
	return nil
}

// IsLoopback reports whether addr (host:port) binds only loopback.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckBind refuses a non-loopback address without a token.
func CheckBind(addr, token string) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("dash: --addr %q: want host:port (e.g. 127.0.0.1:8090): %w", addr, err)
	}
	if !IsLoopback(addr) && token == "" {
		return fmt.Errorf("dash: --addr %s is not a loopback address: pass --token (or RAGEN_DASH_TOKEN) so that only people with the token can read the runs", addr)
	}
	return nil
}

// Handler returns the server as a handler for addr: with a loopback addr,
// requests must also name a loopback host.
func (s *Server) Handler(addr string) http.Handler {
	s.loopbackOnly = IsLoopback(addr)
	return s
}

const tokenCookie = "ragen_dash_token"

// ServeHTTP implements http.Handler: host and token checks, then the routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.loopbackOnly && !loopbackHost(r.Host) {
		http.Error(w, "dash: this server answers only to localhost (Host "+r.Host+")", http.StatusMisdirectedRequest)
		return
	}
	if s.opt.Token != "" {
		ok := false
		if h, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); found && eq(h, s.opt.Token) {
			ok = true
		} else if c, err := r.Cookie(tokenCookie); err == nil && eq(c.Value, s.opt.Token) {
			ok = true
		} else if q := r.URL.Query().Get("token"); q != "" && eq(q, s.opt.Token) {
			ok = true
			http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: q, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		}
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ragen dash"`)
			http.Error(w, "dash: a token is required (Authorization: Bearer TOKEN, or open /?token=TOKEN once)", http.StatusUnauthorized)
			return
		}
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:")
	w.Header().Set("Referrer-Policy", "no-referrer")
	if r.Method == http.MethodPost && !sameOrigin(r) {
		http.Error(w, "dash: cross-origin request refused", http.StatusForbidden)
		return
	}
	s.mux.ServeHTTP(w, r)
}

func eq(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// sameOrigin accepts a POST without Origin (non-browser clients) or with
// an Origin whose host is the request's Host.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	_, rest, ok := strings.Cut(o, "://")
	return ok && rest == r.Host
}

// page serves the single-page app for every page path.
func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/", "/runs", "/trajectories", "/ragen2", "/play":
	default:
		http.NotFound(w, r)
		return
	}
	b, err := assets.ReadFile("assets/index.html")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(b)
}

func (s *Server) apiConfig(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, map[string]any{"poll_ms": s.opt.PollInterval.Milliseconds(), "play": s.play != nil})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		// the client went away or v is not encodable: nothing to tell anyone
		return
	}
}

// httpError is an error with a status code.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, a ...any) error {
	return &httpError{http.StatusBadRequest, fmt.Sprintf(format, a...)}
}

func notFound(format string, a ...any) error {
	return &httpError{http.StatusNotFound, fmt.Sprintf(format, a...)}
}

func writeErr(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	var he *httpError
	if errors.As(err, &he) {
		code = he.code
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
}
