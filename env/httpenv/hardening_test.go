package httpenv_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ragen/env"
	"ragen/env/httpenv"
)

// createErr creates an env and returns the server's error (nil on success).
func createErr(t *testing.T, url, envType string, cfg map[string]any) *httpenv.Error {
	t.Helper()
	c, err := httpenv.New(httpenv.Config{URL: url, EnvType: envType, EnvConfig: cfg, Timeout: 10 * time.Second, Retries: -0})
	if err == nil {
		c.Close()
		return nil
	}
	var he *httpenv.Error
	if !errors.As(err, &he) {
		t.Fatalf("create %s %v: %v", envType, cfg, err)
	}
	return he
}

// Regression (issue 14): {"level_file": "/dev/zero"} grew the server to
// 15+ GB, and errors told which files exist. Without allowed folders no
// file key is accepted, with the same answer for files that exist and
// files that do not.
func TestFileKeysRefusedByDefault(t *testing.T) {
	_, url := newServer(t, httpenv.Options{})
	var msgs []string
	for _, p := range []string{"/dev/zero", "/etc/passwd", "/no/such/file"} {
		he := createErr(t, url, "sokoban", map[string]any{"level_file": p})
		if he == nil || he.Status != http.StatusForbidden || !strings.Contains(he.Msg, "env_config.level_file: file access is off on this server") {
			t.Fatalf("level_file %s: %v", p, he)
		}
		msgs = append(msgs, he.Msg)
	}
	if msgs[0] != msgs[1] || msgs[1] != msgs[2] {
		t.Errorf("answers differ by file, telling which exist: %q", msgs)
	}
	for _, c := range []struct {
		typ  string
		cfg  map[string]any
		want string
	}{
		{"metamathqa", map[string]any{"dataset_path": "/etc/passwd"}, "env_config.dataset_path: file access is off"},
		{"countdown", map[string]any{"train_path": "../../secret.parquet"}, "env_config.train_path: file access is off"},
		{"http", map[string]any{"url": "http://169.254.169.254/", "env_type": "bandit"}, "env_config.url: this server does not let clients name URLs"},
		{"deepcoder", map[string]any{"python_path": "/bin/sh"}, "env_config.python_path: programs to run are the server operator's choice"},
		{"deepcoder", map[string]any{"sandbox_mode": "unsafe_rlimits_only"}, "env_config.sandbox_mode: sandbox settings are the server operator's choice"},
		{"sokoban", map[string]any{"nested": map[string]any{"cache_dir": "/"}}, "env_config.nested.cache_dir: file access is off"},
	} {
		he := createErr(t, url, c.typ, c.cfg)
		if he == nil || he.Status != http.StatusForbidden || !strings.Contains(he.Msg, c.want) {
			t.Errorf("%s %v: got %v, want 403 %q", c.typ, c.cfg, he, c.want)
		}
	}
}

// With --allow-dir, files under the folder are read (resolved, size-capped,
// regular files only); paths outside, and symlinks out of it, are refused
// without touching the file system.
func TestAllowedDirs(t *testing.T) {
	dir := t.TempDir()
	level := "; 0\n#####\n#@$.#\n#####\n"
	if err := os.WriteFile(filepath.Join(dir, "levels.txt"), []byte(level), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), bytes.Repeat([]byte("#"), 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(dir, "etc")); err != nil {
		t.Fatal(err)
	}
	s, url := newServer(t, httpenv.Options{AllowedDirs: []string{dir}, MaxFileBytes: 1024})
	c, err := httpenv.New(httpenv.Config{URL: url, EnvType: "sokoban", EnvConfig: map[string]any{"level_file": filepath.Join(dir, "levels.txt")}})
	if err != nil {
		t.Fatalf("a level file under the allowed folder: %v", err)
	}
	obs, err := c.Reset(context.Background(), 0, env.ModeVal)
	if err != nil || !strings.Contains(obs, "P") {
		t.Fatalf("reset from the level file: %q, %v", obs, err)
	}
	c.Close()
	for _, tc := range []struct{ path, want string }{
		{"/etc/passwd", `"/etc/passwd" is not under a folder this server allows`},
		{"/etc/no-such", `"/etc/no-such" is not under a folder this server allows`},
		{filepath.Join(dir, "..", "x"), "is not under a folder this server allows"},
		{filepath.Join(dir, "zero"), "is not under a folder this server allows"}, // symlink out
		{filepath.Join(dir, "etc", "passwd"), "is not under a folder this server allows"},
		{filepath.Join(dir, "big.txt"), "is 4096 bytes, over this server's cap of 1024"},
		{filepath.Join(dir, "missing.txt"), "no such file or folder under the allowed folders"},
	} {
		he := createErr(t, url, "sokoban", map[string]any{"level_file": tc.path})
		if he == nil || he.Status != http.StatusForbidden || !strings.Contains(he.Msg, tc.want) {
			t.Errorf("level_file %s: got %v, want %q", tc.path, he, tc.want)
		}
	}
	if s.Len() != 0 {
		t.Errorf("%d envs live after refused creates", s.Len())
	}
	if _, err := httpenv.NewServerChecked(httpenv.Options{AllowedDirs: []string{filepath.Join(dir, "levels.txt")}}); err == nil {
		t.Error("an allowed folder that is a file: no error")
	}
}

// Regression (issue 14): frozen_lake size=2000 ran the server out of
// memory and Sokoban 60x60 took 6.6 s and 1.4 GB per reset. Size-like
// settings have upper bounds, checked before anything is built.
func TestSizeBoundsOverHTTP(t *testing.T) {
	s, url := newServer(t, httpenv.Options{})
	for _, c := range []struct {
		typ  string
		cfg  map[string]any
		want string
	}{
		{"frozen_lake", map[string]any{"size": 2000}, "size 2000: must be in [2, 64]"},
		{"sokoban", map[string]any{"dim_room": []any{60, 60}}, "room 60x60: both dimensions must be at most 20"},
		{"sokoban", map[string]any{"num_boxes": 500}, "num_boxes 500: must be at most 10"},
		{"sokoban", map[string]any{"search_depth": 1 << 30}, "must be at most 10000"},
		{"rubikscube", map[string]any{"scramble_depth": 1 << 30}, "outside [0, 10000]"},
		{"game_2048", map[string]any{"size": 5000}, "too large"},
	} {
		he := createErr(t, url, c.typ, c.cfg)
		if he == nil || he.Status != http.StatusUnprocessableEntity || !strings.Contains(he.Msg, c.want) {
			t.Errorf("%s %v: got %v, want 422 %q", c.typ, c.cfg, he, c.want)
		}
	}
	if s.Len() != 0 {
		t.Errorf("%d envs live", s.Len())
	}
}

// hogEnv allocates and keeps n bytes per reset.
type hogEnv struct {
	n    int
	keep [][]byte
}

func (h *hogEnv) Reset(context.Context, int64, env.Mode) (string, error) {
	b := make([]byte, h.n)
	for i := range b {
		b[i] = 1
	}
	h.keep = append(h.keep, b)
	return "s", nil
}
func (h *hogEnv) Step(context.Context, env.Action) (env.StepResult, error) {
	return env.StepResult{Observation: "s", Info: env.Info{}}, nil
}
func (h *hogEnv) Render() string { return "r" }
func (h *hogEnv) Close() error   { h.keep = nil; return nil }

// An env that allocates past the per-env cap is closed and answered 507;
// over the total cap creates are answered 503.
func TestMemoryCaps(t *testing.T) {
	newHog := func(string, map[string]any) (env.BaseEnv, error) { return &hogEnv{n: 64 << 20}, nil }
	s, url := newServer(t, httpenv.Options{New: newHog, MaxEnvBytes: 16 << 20})
	c := dial(t, url, "hog", nil)
	_, err := c.Reset(context.Background(), 0, env.ModeTrain)
	var he *httpenv.Error
	if !errors.As(err, &he) || he.Status != http.StatusInsufficientStorage || !strings.Contains(he.Msg, "over the server's per-env cap of 16777216; the env was closed") {
		t.Fatalf("reset of a hog: %v", err)
	}
	if s.Len() != 0 {
		t.Errorf("the hog is still live (%d envs)", s.Len())
	}
	_, url2 := newServer(t, httpenv.Options{New: newHog, MaxMemoryBytes: 1})
	he = createErr(t, url2, "hog", nil)
	if he == nil || he.Status != http.StatusServiceUnavailable || !strings.Contains(he.Msg, "server memory cap reached") {
		t.Errorf("create over the total cap: %v", he)
	}
}

// Optional bearer token: required on every call but health; the client
// sends it from its config or RAGEN_ENV_TOKEN.
func TestBearerToken(t *testing.T) {
	_, url := newServer(t, httpenv.Options{Token: "s3cret"})
	he := createErr(t, url, "bandit", nil)
	if he == nil || he.Status != http.StatusUnauthorized || !strings.Contains(he.Msg, "bearer token") {
		t.Fatalf("no token: %v", he)
	}
	if _, err := httpenv.New(httpenv.Config{URL: url, EnvType: "bandit", Token: "wrong"}); err == nil || !strings.Contains(err.Error(), "HTTP 401") {
		t.Errorf("wrong token: %v", err)
	}
	c, err := httpenv.New(httpenv.Config{URL: url, EnvType: "bandit", Token: "s3cret"})
	if err != nil {
		t.Fatalf("right token: %v", err)
	}
	if _, err := c.Reset(context.Background(), 1, env.ModeTrain); err != nil {
		t.Error(err)
	}
	if err := c.Close(); err != nil {
		t.Error(err)
	}
	t.Setenv(httpenv.TokenEnv, "s3cret")
	c2, err := httpenv.New(httpenv.Config{URL: url, EnvType: "bandit"})
	if err != nil {
		t.Fatalf("token from %s: %v", httpenv.TokenEnv, err)
	}
	c2.Close()
	resp, err := http.Get(url + "/v1/health")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("health without a token: %v %v", resp, err)
	}
	if resp != nil {
		resp.Body.Close()
	}
}

// serve starts Serve on loopback and returns its address and a stop
// function that reports how Serve ended.
func serve(t *testing.T, opts httpenv.Options) (string, func() error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- httpenv.Serve(ctx, ln, opts) }()
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(20 * time.Second):
			return errors.New("Serve did not return 20 s after cancel")
		}
	}
	t.Cleanup(func() { _ = stop() })
	return ln.Addr().String(), stop
}

// Regression (issue 14): 500 partial-body connections were all still open
// after 21 s. A request that does not arrive within the read timeout is
// cut.
func TestSlowClientsAreCut(t *testing.T) {
	addr, _ := serve(t, httpenv.Options{ReadTimeout: 300 * time.Millisecond})
	var conns []net.Conn
	for range 20 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /v1/envs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"env_type\":")
		conns = append(conns, c)
	}
	for i, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(15 * time.Second))
		_, err := io.ReadAll(c) // the server answers (408/400) or just closes
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("connection %d still open after 15 s", i)
		}
	}
}

// stuckEnv's Reset ignores its context and blocks until released.
type stuckEnv struct{ started, release chan struct{} }

func (s stuckEnv) Reset(context.Context, int64, env.Mode) (string, error) {
	close(s.started)
	<-s.release
	return "s", nil
}
func (s stuckEnv) Step(context.Context, env.Action) (env.StepResult, error) {
	return env.StepResult{}, nil
}
func (s stuckEnv) Render() string { return "r" }
func (s stuckEnv) Close() error   { return nil }

// Regression (issue 14): SIGTERM did not stop a server busy in an env.
// Cancelling Serve returns within its shutdown timeouts even when an env
// call never ends.
func TestShutdownWithStuckEnv(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	addr, stop := serve(t, httpenv.Options{ShutdownTimeout: 200 * time.Millisecond,
		New: func(string, map[string]any) (env.BaseEnv, error) { return stuckEnv{started, release}, nil }})
	c, err := httpenv.New(httpenv.Config{URL: "http://" + addr, EnvType: "stuck", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	resetDone := make(chan struct{})
	go func() {
		_, _ = c.Reset(context.Background(), 0, env.ModeTrain)
		close(resetDone)
	}()
	<-started // the reset is in the env now
	err = stop()
	if err == nil || !strings.Contains(err.Error(), "gave up on envs still busy") {
		t.Errorf("Serve: %v, want the give-up note", err)
	}
	<-resetDone // the client's call ended with the connection
}

// Regression (issue 14): closing envs of a dead server took minutes
// (every close retried with the full timeout). CloseContext ends with its
// context, retries and backoff included.
func TestCloseContextHonoursDeadline(t *testing.T) {
	hang := make(chan struct{})
	defer close(hang)
	url := fake(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.Method == "POST" && r.URL.Path == "/v1/envs" {
			io.WriteString(w, `{"id":"e1","render":"start"}`)
			return
		}
		select { // a server that stopped answering
		case <-hang:
		case <-r.Context().Done():
		}
	})
	c, err := httpenv.New(httpenv.Config{URL: url, EnvType: "x", Timeout: time.Minute, Retries: 5})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.CloseContext(ctx) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "close") {
			t.Errorf("CloseContext: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("CloseContext ignored its deadline")
	}
	if err := c.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
}
