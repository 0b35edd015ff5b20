package httpenv_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ragen/env"
	_ "ragen/env/all"
	"ragen/env/bandit"
	"ragen/env/httpenv"
)

// newServer starts a loopback server; the test closes it.
func newServer(t testing.TB, opts httpenv.Options) (*httpenv.Server, string) {
	t.Helper()
	s := httpenv.NewServer(opts)
	hs := httptest.NewServer(s)
	t.Cleanup(func() {
		hs.Close()
		if err := s.Close(); err != nil {
			t.Errorf("server close: %v", err)
		}
	})
	return s, hs.URL
}

func dial(t testing.TB, url, envType string, envConfig map[string]any) *httpenv.Client {
	t.Helper()
	c, err := httpenv.New(httpenv.Config{URL: url, EnvType: envType, EnvConfig: envConfig, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// recorder remembers the envs a server built, so that a test can build a
// local twin with the same hidden state (Bandit's internal seed).
type recorder struct {
	mu   sync.Mutex
	envs []env.BaseEnv
}

func (r *recorder) New(t string, m map[string]any) (env.BaseEnv, error) {
	e, err := env.New(t, m)
	if err == nil {
		r.mu.Lock()
		r.envs = append(r.envs, e)
		r.mu.Unlock()
	}
	return e, err
}

func (r *recorder) last() env.BaseEnv {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.envs[len(r.envs)-1]
}

type twinCase struct {
	name    string
	envType string
	cfg     map[string]any
	seeds   []int64
	actions [][]int // per seed index (cycled); nil: random ids in [0, 6)
}

var twinCases = []twinCase{
	{"sokoban", "sokoban", map[string]any{"dim_room": []any{6, 6}, "num_boxes": 1, "max_steps": 100},
		[]int64{0, 1, 42, 10000}, [][]int{{1, 2, 3, 4, 4, 4, 1, 1}, {0, 9, -1, 2, 2, 3}, nil}},
	{"sokoban_coord", "sokoban", map[string]any{"dim_room": []any{6, 6}, "num_boxes": 1, "observation_format": "grid_coord",
		"search_depth": 30}, []int64{7, 8}, [][]int{nil}},
	{"frozen_lake", "frozen_lake", map[string]any{"success_rate": 0.8}, []int64{0, 1, 2, 3, 99},
		[][]int{{2, 2, 3, 3, 2, 3}, {1, 1, 1, 1, 5, 0}, nil}},
	{"frozen_lake_coord", "frozen_lake", map[string]any{"observation_format": "grid_coord", "success_rate": 1},
		[]int64{5, 6}, [][]int{nil}},
	// Int scores are printed "1 points", float ones "1.0 points": the
	// type must survive the trip.
	{"bandit_float", "bandit", map[string]any{"hi_arm_hiscore": 1.0, "split": "test"}, []int64{0, 1, 2, 3, 4, 5},
		[][]int{{1}, {2}, {3, 1}}},
	{"bandit_int", "bandit", map[string]any{"lo_arm_score": 0, "hi_arm_hiscore": 2, "hi_arm_hiscore_prob": 0.5},
		[]int64{0, 1, 2, 3, 4, 5, 6, 7}, [][]int{{1}, {2}}},
}

// A remote env driven through the client gives exactly what the local env
// gives for the same seeds and actions: observations, Render, rewards and
// their int-ness, done flags, info (types included), action lookups.
func TestRemoteMatchesLocal(t *testing.T) {
	rec := &recorder{}
	_, url := newServer(t, httpenv.Options{New: rec.New})
	ctx := context.Background()
	for _, tc := range twinCases {
		t.Run(tc.name, func(t *testing.T) {
			remote := dial(t, url, tc.envType, tc.cfg)
			local, err := env.New(tc.envType, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if rb, ok := rec.last().(*bandit.Env); ok {
				lb := local.(*bandit.Env)
				if !reflect.DeepEqual(rb.Config(), lb.Config()) {
					t.Fatalf("bandit config differs:\nremote %+v\nlocal  %+v", rb.Config(), lb.Config())
				}
				if local, err = bandit.NewWithInternalSeed(lb.Config(), rb.InternalSeed()); err != nil {
					t.Fatal(err)
				}
			}
			compareLookup(t, "create", remote, local)
			rng := rand.New(rand.NewPCG(1, 2))
			for i, seed := range tc.seeds {
				mode := env.ModeTrain
				if i%2 == 1 {
					mode = env.ModeVal
				}
				ro, rerr := remote.Reset(ctx, seed, mode)
				lo, lerr := local.Reset(ctx, seed, mode)
				if rerr != nil || lerr != nil || ro != lo {
					t.Fatalf("seed %d reset: remote %q, %v; local %q, %v", seed, ro, rerr, lo, lerr)
				}
				where := fmt.Sprintf("seed %d reset", seed)
				compareState(t, where, remote, local)
				acts := tc.actions[i%len(tc.actions)]
				if acts == nil {
					for range 12 {
						acts = append(acts, rng.IntN(6))
					}
				}
				for j, a := range acts {
					act := env.Action{ID: a, Text: fmt.Sprint(a)}
					rr, rerr := remote.Step(ctx, act)
					lr, lerr := local.Step(ctx, act)
					where := fmt.Sprintf("seed %d step %d (id %d)", seed, j, a)
					if (rerr == nil) != (lerr == nil) {
						t.Fatalf("%s: remote err %v, local err %v", where, rerr, lerr)
					}
					if !reflect.DeepEqual(rr, lr) {
						t.Fatalf("%s:\nremote %#v\nlocal  %#v", where, rr, lr)
					}
					compareState(t, where, remote, local)
					if lr.Done {
						break
					}
				}
			}
		})
	}
}

func compareState(t *testing.T, where string, remote *httpenv.Client, local env.BaseEnv) {
	t.Helper()
	if r, l := remote.Render(), local.Render(); r != l {
		t.Fatalf("%s: render:\nremote %q\nlocal  %q", where, r, l)
	}
	live, err := remote.RenderContext(context.Background())
	if err != nil || live != local.Render() {
		t.Fatalf("%s: live render %q, %v; want %q", where, live, err, local.Render())
	}
	compareLookup(t, where, remote, local)
}

func compareLookup(t *testing.T, where string, remote *httpenv.Client, local env.BaseEnv) {
	t.Helper()
	l := local.(env.ActionLookup).ActionLookup()
	if r := remote.ActionLookup(); !reflect.DeepEqual(r, l) {
		t.Fatalf("%s: action lookup: remote %v, local %v", where, r, l)
	}
}

// The registry's "http" type builds a client from env_config; its own keys
// are checked like any env's, and the inner env's errors come through.
func TestRegistryHTTP(t *testing.T) {
	_, url := newServer(t, httpenv.Options{})
	e, err := env.New("http", map[string]any{"url": url, "env_type": "frozen_lake",
		"env_config": map[string]any{"observation_format": "coord"}, "timeout": 5, "retries": 1, "backoff": "10ms"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	c := e.(*httpenv.Client)
	if cfg := c.Config(); cfg.Timeout != 5*time.Second || cfg.Retries != 1 || cfg.Backoff != 10*time.Millisecond {
		t.Errorf("config %+v", cfg)
	}
	obs, err := e.Reset(context.Background(), 0, env.ModeTrain)
	if err != nil || !strings.HasPrefix(obs, "Board size: 4 rows x 4 cols") {
		t.Errorf("reset: %q, %v", obs, err)
	}

	for _, tc := range []struct {
		cfg  map[string]any
		want []string
	}{
		{map[string]any{"url": url, "env_typ": "sokoban"}, []string{`unknown key "env_typ"`, `did you mean "env_type"`, "env_type is empty"}},
		{map[string]any{"url": "127.0.0.1:1", "env_type": "sokoban"}, []string{`url "127.0.0.1:1"`}},
		{map[string]any{"url": url, "env_type": "sokoban", "timeout": "soon"}, []string{`timeout "soon"`}},
		{map[string]any{"url": url, "env_type": "sokoban", "env_config": []any{1}}, []string{"env_config: want a map"}},
		{map[string]any{"url": url, "env_type": "sokoban", "env_config": map[string]any{"dim_roomx": 6}},
			[]string{"HTTP 422", `unknown key "dim_roomx"`, `did you mean "dim_room"`}},
	} {
		_, err := env.New("http", tc.cfg)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%v: err = %v, want it to contain %q", tc.cfg, err, w)
			}
		}
	}
}

// Errors from env construction, reset and step come through with the env
// package's own message, the call, the URL and the env id.
func TestServerErrors(t *testing.T) {
	srv, url := newServer(t, httpenv.Options{})
	_, err := httpenv.New(httpenv.Config{URL: url, EnvType: "no_such_env"})
	var he *httpenv.Error
	if !errors.As(err, &he) || he.Status != 422 || he.Call != "create" ||
		!strings.Contains(err.Error(), `unknown env_type "no_such_env"`) || !strings.Contains(err.Error(), "sokoban") ||
		!strings.Contains(err.Error(), url+"/v1/envs") {
		t.Errorf("unknown type: %v", err)
	}
	_, err = httpenv.New(httpenv.Config{URL: url, EnvType: "sokoban", EnvConfig: map[string]any{"num_boxes": 0}})
	if err == nil || !strings.Contains(err.Error(), "num_boxes 0: must be at least 1") {
		t.Errorf("bad config: %v", err)
	}
	_, err = httpenv.New(httpenv.Config{URL: url, EnvType: "bandit", EnvConfig: map[string]any{"split": "dev"}})
	if err == nil || !strings.Contains(err.Error(), `bandit: split "dev"`) {
		t.Errorf("bad bandit config: %v", err)
	}
	if srv.Len() != 0 {
		t.Errorf("%d envs live after failed creates", srv.Len())
	}
	// Step before reset is the env's error, answered 422 and not retried.
	c := dial(t, url, "sokoban", nil)
	_, err = c.Step(context.Background(), env.Action{ID: 1})
	if !errors.As(err, &he) || he.Status != 422 || he.EnvID != c.ID() || !strings.Contains(err.Error(), "sokoban: Step before Reset") ||
		!strings.Contains(err.Error(), "/v1/envs/"+c.ID()+"/step") {
		t.Errorf("step before reset: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if _, err := c.Reset(context.Background(), 1, env.ModeTrain); err == nil || !strings.Contains(err.Error(), "env is closed") {
		t.Errorf("reset after close: %v", err)
	}
}

// brokenEnv returns info values the protocol cannot carry.
type brokenEnv struct{ info env.Info }

func (b *brokenEnv) Reset(context.Context, int64, env.Mode) (string, error) { return "s", nil }
func (b *brokenEnv) Step(context.Context, env.Action) (env.StepResult, error) {
	if b.info == nil {
		panic("boom")
	}
	return env.StepResult{Info: b.info}, nil
}
func (b *brokenEnv) Render() string { return "r" }
func (b *brokenEnv) Close() error   { return nil }

func TestServerRejectsBadInfo(t *testing.T) {
	var next env.Info
	_, url := newServer(t, httpenv.Options{New: func(string, map[string]any) (env.BaseEnv, error) {
		return &brokenEnv{info: next}, nil
	}})
	for _, tc := range []struct {
		info env.Info
		want string
	}{
		{env.Info{"ok": 1, "grid": [][]int{{1}}}, `info key "grid": value of type [][]int is not JSON data`},
		{env.Info{"x": map[int]int{}}, `info key "x"`},
		{env.Info{"x": map[string]any{"y": []any{math.Inf(1)}}}, `info key "x": "y": [0]: +Inf is not representable`},
		{env.Info{"nan": math.NaN()}, `info key "nan": NaN is not representable`},
		{nil, "panic: boom"},
	} {
		next = tc.info
		c := dial(t, url, "broken", nil)
		if _, err := c.Reset(context.Background(), 0, env.ModeTrain); err != nil {
			t.Fatal(err)
		}
		_, err := c.Step(context.Background(), env.Action{})
		var he *httpenv.Error
		if !errors.As(err, &he) || he.Status != 500 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("info %v: err = %v, want HTTP 500 with %q", tc.info, err, tc.want)
		}
	}
	// Allowed kinds arrive as int, float64, bool and string.
	next = env.Info{"i": int64(3), "u": uint8(4), "f": float32(0.5), "g": 2.0, "b": true, "s": "x",
		"n": nil, "l": []string{"a"}, "o": map[string]any{"k": []any{1, 2.0, nil}}, "m": []map[string]any{{"d": "x"}}}
	c := dial(t, url, "broken", nil)
	r, err := c.Step(context.Background(), env.Action{})
	want := env.Info{"i": 3, "u": 4, "f": 0.5, "g": 2.0, "b": true, "s": "x",
		"n": nil, "l": []any{"a"}, "o": map[string]any{"k": []any{1, 2.0, nil}}, "m": []any{map[string]any{"d": "x"}}}
	if err != nil || !reflect.DeepEqual(r.Info, want) {
		t.Errorf("info %#v, %v; want %#v", r.Info, err, want)
	}
}

// fake is a scripted server: route (method + path suffix) → handler.
func fake(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs.URL
}

func createThen(route func(w http.ResponseWriter, r *http.Request) bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "POST" && r.URL.Path == "/v1/envs" {
			io.WriteString(w, `{"id":"e1","render":"start","action_lookup":{"1":"Up"}}`)
			return
		}
		if r.Method == "DELETE" {
			w.WriteHeader(204)
			return
		}
		if !route(w, r) {
			http.Error(w, `{"error":"unexpected"}`, 500)
		}
	}
}

func TestClientRejectsBadReplies(t *testing.T) {
	ok := `"observation":"o","reward":1,"reward_is_int":true,"done":false,"render":"r"`
	for _, tc := range []struct {
		name, reply, want string
		status            int
	}{
		{"garbage", `<html>oops</html>`, `bad reply (HTTP 200): invalid character '<'`, 200},
		{"truncated", `{"observation":"o"`, "bad reply (HTTP 200)", 200},
		{"trailing", `{` + ok + `,"info":{}} {}`, "trailing data", 200},
		{"unknown field", `{` + ok + `,"info":{},"obs":"x"}`, `unknown field "obs"`, 200},
		{"missing done", `{"observation":"o","reward":1,"reward_is_int":true,"info":{},"render":"r"}`, `missing field "done"`, 200},
		{"missing info", `{` + ok + `}`, `missing field "info"`, 200},
		{"missing render", `{"observation":"o","reward":1,"reward_is_int":true,"done":false,"info":{}}`, `missing field "render"`, 200},
		{"wrong type", `{"observation":"o","reward":"1","reward_is_int":true,"done":false,"info":{},"render":"r"}`, "reward", 200},
		{"info huge int in a list", `{` + ok + `,"info":{"a":1,"b":[99999999999999999999]}}`, `info key "b": [0]: integer 99999999999999999999 out of range`, 200},
		{"http error", `{"error":"env exploded"}`, "HTTP 418: env exploded", 418},
		{"http error garbage", `teapot`, `HTTP 400: reply without a JSON error: "teapot"`, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := fake(t, createThen(func(w http.ResponseWriter, r *http.Request) bool {
				if !strings.HasSuffix(r.URL.Path, "/step") {
					return false
				}
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.reply)
				return true
			}))
			c := dial(t, url, "x", nil)
			if c.Render() != "start" || c.ActionLookup()[1] != "Up" {
				t.Fatalf("state after create: %q %v", c.Render(), c.ActionLookup())
			}
			_, err := c.Step(context.Background(), env.Action{ID: 1})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "step (env e1, "+url+"/v1/envs/e1/step)") {
				t.Errorf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
	url := fake(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"id":"e1","render":"x","id2":1}`) })
	if _, err := httpenv.New(httpenv.Config{URL: url, EnvType: "x"}); err == nil || !strings.Contains(err.Error(), `unknown field "id2"`) {
		t.Errorf("create with unknown field: %v", err)
	}
}

// A 500 on reset is retried (reset is idempotent); a 500 on step is not.
func TestRetry(t *testing.T) {
	var resets, steps atomic.Int32
	url := fake(t, createThen(func(w http.ResponseWriter, r *http.Request) bool {
		switch {
		case strings.HasSuffix(r.URL.Path, "/reset"):
			if resets.Add(1) <= 1 {
				w.WriteHeader(500)
				io.WriteString(w, `{"error":"transient"}`)
				return true
			}
			io.WriteString(w, `{"observation":"o","render":"r2"}`)
		case strings.HasSuffix(r.URL.Path, "/step"):
			steps.Add(1)
			w.WriteHeader(503)
			io.WriteString(w, `{"error":"busy"}`)
		default:
			return false
		}
		return true
	}))
	c, err := httpenv.New(httpenv.Config{URL: url, EnvType: "x", Retries: 3, Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	obs, err := c.Reset(context.Background(), 1, env.ModeTrain)
	if err != nil || obs != "o" || c.Render() != "r2" || resets.Load() != 2 {
		t.Errorf("reset: %q %v after %d tries", obs, err, resets.Load())
	}
	if c.ActionLookup() != nil {
		t.Errorf("lookup %v after a reply without one, want nil", c.ActionLookup())
	}
	_, err = c.Step(context.Background(), env.Action{ID: 1})
	if err == nil || !strings.Contains(err.Error(), "HTTP 503: busy") || steps.Load() != 1 {
		t.Errorf("step: %v after %d tries", err, steps.Load())
	}
	// A server that keeps failing: retries are bounded and counted.
	resets.Store(-100)
	_, err = c.Reset(context.Background(), 1, env.ModeTrain)
	if err == nil || !strings.Contains(err.Error(), "(after 4 attempts)") {
		t.Errorf("reset against a failing server: %v", err)
	}
}

// A refused connection is retried for any call, create included, since
// nothing reached the server.
func TestRetryConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	start := time.Now()
	_, err = httpenv.New(httpenv.Config{URL: "http://" + addr, EnvType: "sokoban", Retries: 2, Backoff: 5 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "(after 3 attempts)") {
		t.Errorf("err = %v", err)
	}
	if time.Since(start) < 15*time.Millisecond {
		t.Errorf("no backoff between attempts")
	}
}

// A server that never answers is an error within the per-call timeout, or
// within the caller's deadline when that comes first. Timeouts are not
// retried.
func TestHungServer(t *testing.T) {
	release := make(chan struct{})
	var hits atomic.Int32
	url := fake(t, createThen(func(w http.ResponseWriter, r *http.Request) bool {
		hits.Add(1)
		select {
		case <-r.Context().Done():
		case <-release:
		}
		return true
	}))
	defer close(release)
	c, err := httpenv.New(httpenv.Config{URL: url, EnvType: "x", Timeout: 150 * time.Millisecond, Retries: 3})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = c.Reset(context.Background(), 1, env.ModeTrain)
	if d := time.Since(start); err == nil || !strings.Contains(err.Error(), "no reply within the 150ms timeout") || d > 2*time.Second {
		t.Errorf("reset: %v after %s", err, d)
	}
	if hits.Load() != 1 {
		t.Errorf("%d attempts, want 1 (timeouts are not retried)", hits.Load())
	}
	c2, err := httpenv.New(httpenv.Config{URL: url, EnvType: "x", Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start = time.Now()
	_, err = c2.Step(ctx, env.Action{ID: 1})
	if d := time.Since(start); !errors.Is(err, context.DeadlineExceeded) && (err == nil || !strings.Contains(err.Error(), "deadline exceeded")) || d > 2*time.Second {
		t.Errorf("step under a 100ms deadline: %v after %s", err, d)
	}
}

func TestBodyTooLarge(t *testing.T) {
	_, url := newServer(t, httpenv.Options{MaxBodyBytes: 512})
	_, err := httpenv.New(httpenv.Config{URL: url, EnvType: "sokoban", EnvConfig: map[string]any{"level_file": strings.Repeat("x", 600)}})
	var he *httpenv.Error
	if !errors.As(err, &he) || he.Status != 413 || !strings.Contains(err.Error(), "request body over 512 bytes") {
		t.Errorf("err = %v", err)
	}
}

func TestEnvCap(t *testing.T) {
	srv, url := newServer(t, httpenv.Options{MaxEnvs: 2})
	a := dial(t, url, "frozen_lake", nil)
	dial(t, url, "frozen_lake", nil)
	_, err := httpenv.New(httpenv.Config{URL: url, EnvType: "frozen_lake"})
	var he *httpenv.Error
	if !errors.As(err, &he) || he.Status != 429 || !strings.Contains(err.Error(), "env cap reached (2 live envs)") {
		t.Errorf("third env: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	dial(t, url, "frozen_lake", nil)
	if srv.Len() != 2 {
		t.Errorf("%d live envs, want 2", srv.Len())
	}
}

// closeCounter counts Close calls of the envs a server built.
type closeCounter struct {
	env.BaseEnv
	n *atomic.Int32
}

func (c closeCounter) Close() error { c.n.Add(1); return c.BaseEnv.Close() }

func TestIdleExpiry(t *testing.T) {
	var closed atomic.Int32
	srv, url := newServer(t, httpenv.Options{IdleTimeout: 300 * time.Millisecond, New: func(t string, m map[string]any) (env.BaseEnv, error) {
		e, err := env.New(t, m)
		return closeCounter{e, &closed}, err
	}})
	stale := dial(t, url, "frozen_lake", nil)
	busy := dial(t, url, "frozen_lake", nil)
	deadline := time.Now().Add(5 * time.Second)
	for srv.Len() > 1 && time.Now().Before(deadline) {
		if _, err := busy.Reset(context.Background(), 0, env.ModeTrain); err != nil {
			t.Fatalf("a used env expired: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if srv.Len() != 1 || closed.Load() != 1 {
		t.Fatalf("%d live, %d closed; want the idle env expired and closed", srv.Len(), closed.Load())
	}
	_, err := stale.Reset(context.Background(), 0, env.ModeTrain)
	var he *httpenv.Error
	if !errors.As(err, &he) || he.Status != 404 || !strings.Contains(err.Error(), "expired after 300ms idle") {
		t.Errorf("reset of an expired env: %v", err)
	}
	if err := stale.Close(); err != nil {
		t.Errorf("close of an expired env: %v", err)
	}
}

// Many clients at once, each checked against its local twin; run with
// -race. Several goroutines also hammer one env id, which the server must
// serialise.
func TestConcurrentClients(t *testing.T) {
	_, url := newServer(t, httpenv.Options{})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Go(func() {
			envType := []string{"sokoban", "frozen_lake"}[g%2]
			cfg := map[string]any{"num_boxes": 1}
			if envType == "frozen_lake" {
				cfg = map[string]any{"success_rate": 0.8}
			}
			c, err := httpenv.New(httpenv.Config{URL: url, EnvType: envType, EnvConfig: cfg})
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			local, _ := env.New(envType, cfg)
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			ctx := context.Background()
			for ep := range 3 {
				seed := int64(100*g + ep)
				ro, err := c.Reset(ctx, seed, env.ModeTrain)
				lo, _ := local.Reset(ctx, seed, env.ModeTrain)
				if err != nil || ro != lo {
					errs <- fmt.Errorf("g%d reset %d: %v", g, seed, err)
					return
				}
				for range 10 {
					a := env.Action{ID: 1 + rng.IntN(4)}
					rr, err := c.Step(ctx, a)
					lr, _ := local.Step(ctx, a)
					if err != nil || !reflect.DeepEqual(rr, lr) || c.Render() != local.Render() {
						errs <- fmt.Errorf("g%d seed %d: %v\nremote %#v\nlocal  %#v", g, seed, err, rr, lr)
						return
					}
					if lr.Done {
						break
					}
				}
			}
		})
	}
	shared := dial(t, url, "sokoban", map[string]any{"num_boxes": 1})
	if _, err := shared.Reset(context.Background(), 3, env.ModeTrain); err != nil {
		t.Fatal(err)
	}
	for range 6 {
		wg.Go(func() {
			for range 20 {
				resp, err := http.Post(url+"/v1/envs/"+shared.ID()+"/step", "application/json", strings.NewReader(`{"action":{"id":1,"text":""}}`))
				if err != nil {
					errs <- err
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					errs <- fmt.Errorf("shared step: HTTP %d", resp.StatusCode)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// Raw protocol checks: JSON errors with the right codes for malformed
// requests, unknown routes and wrong methods.
func TestProtocolErrors(t *testing.T) {
	_, url := newServer(t, httpenv.Options{})
	c := dial(t, url, "frozen_lake", nil)
	id := c.ID()
	for _, tc := range []struct {
		method, path, body string
		code               int
		want               string
	}{
		{"GET", "/v1/health", "", 200, `"status":"ok"`},
		{"POST", "/v1/envs", `{"env_type":"sokoban","env_cfg":{}}`, 400, `unknown field \"env_cfg\"`},
		{"POST", "/v1/envs", `{}`, 400, `missing field \"env_type\"`},
		{"POST", "/v1/envs", ``, 400, `empty body`},
		{"POST", "/v1/envs/" + id + "/reset", `{"mode":"train"}`, 400, `missing field \"seed\"`},
		{"POST", "/v1/envs/" + id + "/reset", `{"seed":1}`, 200, `"observation":`},
		{"POST", "/v1/envs/" + id + "/reset", `{"seed":1.5}`, 400, `bad request body`},
		{"POST", "/v1/envs/" + id + "/step", `{}`, 400, `missing field \"action\"`},
		{"POST", "/v1/envs/nope/step", `{"action":{"id":1}}`, 404, `unknown env id \"nope\"`},
		{"GET", "/v1/envs/" + id + "/render", "", 200, `"observation":`},
		{"GET", "/v1/envs", "", 405, `method not allowed`},
		{"GET", "/v2/whatever", "", 404, `no route GET /v2/whatever`},
		{"DELETE", "/v1/envs/nope", "", 404, `unknown env id`},
	} {
		req, _ := http.NewRequest(tc.method, url+tc.path, strings.NewReader(tc.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code || !strings.Contains(string(b), tc.want) || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s %s %s: HTTP %d %s (%s); want %d with %s", tc.method, tc.path, tc.body, resp.StatusCode, b,
				resp.Header.Get("Content-Type"), tc.code, tc.want)
		}
	}
}

// Serve stops on ctx and closes every env it holds.
func TestServeShutdown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var closed atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- httpenv.Serve(ctx, ln, httpenv.Options{New: func(t string, m map[string]any) (env.BaseEnv, error) {
			e, err := env.New(t, m)
			return closeCounter{e, &closed}, err
		}})
	}()
	url := "http://" + ln.Addr().String()
	for range 3 {
		c, err := httpenv.New(httpenv.Config{URL: url, EnvType: "frozen_lake", Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Reset(context.Background(), 0, env.ModeTrain); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
	if closed.Load() != 3 {
		t.Errorf("%d envs closed at shutdown, want 3", closed.Load())
	}
	if err := httpenv.ListenAndServe(context.Background(), "256.0.0.1:0", httpenv.Options{}); err == nil {
		t.Error("ListenAndServe on a bad address: no error")
	}
}

// BenchmarkStepRoundTrip measures step round trips per second on loopback
// (FrozenLake, whose step costs microseconds, so this is the bridge's own
// cost): serially from one client, and in parallel from one client per
// goroutine.
func BenchmarkStepRoundTrip(b *testing.B) {
	_, url := newServer(b, httpenv.Options{})
	run := func(b *testing.B, c *httpenv.Client, next func() bool) {
		ctx := context.Background()
		if _, err := c.Reset(ctx, 0, env.ModeTrain); err != nil {
			b.Fatal(err)
		}
		seed := int64(0)
		for next() {
			r, err := c.Step(ctx, env.Action{ID: 1 + int(seed%4)})
			if err != nil {
				b.Fatal(err)
			}
			if r.Done {
				seed++
				if _, err := c.Reset(ctx, seed, env.ModeTrain); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.Run("serial", func(b *testing.B) {
		c := dial(b, url, "frozen_lake", nil)
		run(b, c, b.Loop)
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
	})
	b.Run("parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			c, err := httpenv.New(httpenv.Config{URL: url, EnvType: "frozen_lake"})
			if err != nil {
				b.Error(err)
				return
			}
			defer c.Close()
			run(b, c, pb.Next)
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
	})
}
