package httpenv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"ragen/env"
)

func init() {
	env.Register("http", func(m map[string]any) (env.BaseEnv, error) {
		cfg, err := configFromEnvConfig(m)
		if err != nil {
			return nil, err
		}
		return New(cfg)
	})
}

// Config says where a remote env lives and how to talk to it.
type Config struct {
	URL       string         `yaml:"url"`        // server base URL, e.g. http://127.0.0.1:8100
	EnvType   string         `yaml:"env_type"`   // env type on the server ("sokoban", ...)
	EnvConfig map[string]any `yaml:"env_config"` // its env_config (nil: defaults)
	// Timeout bounds each HTTP call (each attempt); the caller's ctx
	// deadline applies as well. 0 means DefaultTimeout. In a YAML file
	// decoded straight into Config write a duration string ("30s"); the
	// registry's env_config also takes seconds as a number.
	Timeout time.Duration `yaml:"timeout"`
	// Retries is the number of extra attempts of a call that failed on a
	// connection error or an HTTP 5xx. Only idempotent calls (reset,
	// render, close) are retried after the request may have reached the
	// server; create and step are retried only when the connection could
	// not be made at all.
	Retries int `yaml:"retries"`
	// Backoff is the wait before the first retry, doubled on each further
	// one. 0 means DefaultBackoff. YAML as for Timeout.
	Backoff time.Duration `yaml:"backoff"`
	// Token is the server's bearer token ("" means the RAGEN_ENV_TOKEN
	// environment variable, if set).
	Token string `yaml:"token"`
}

// Defaults of Config.
const (
	DefaultTimeout = 30 * time.Second
	DefaultRetries = 2
	DefaultBackoff = 100 * time.Millisecond
)

// DefaultConfig returns a Config with the default timeout, retries and
// backoff; URL and EnvType are left to fill in.
func DefaultConfig() Config {
	return Config{Timeout: DefaultTimeout, Retries: DefaultRetries, Backoff: DefaultBackoff}
}

// Validate reports every unusable field at once.
func (c Config) Validate() error {
	var errs []error
	if c.URL == "" {
		errs = append(errs, errors.New(`httpenv: url is empty`))
	} else if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf(`httpenv: url %q: want http://host:port or https://host:port`, c.URL))
	}
	if c.EnvType == "" {
		errs = append(errs, errors.New("httpenv: env_type is empty"))
	}
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("httpenv: timeout %s: must not be negative", c.Timeout))
	}
	if c.Retries < 0 {
		errs = append(errs, fmt.Errorf("httpenv: retries %d: must not be negative", c.Retries))
	}
	if c.Backoff < 0 {
		errs = append(errs, fmt.Errorf("httpenv: backoff %s: must not be negative", c.Backoff))
	}
	return errors.Join(errs...)
}

// Error is a failed call to an env server.
type Error struct {
	Call   string // create, reset, step, render, close
	URL    string // the request URL
	EnvID  string // "" for create
	Status int    // HTTP status; 0 when no reply came
	Msg    string // the server's error message, or what went wrong
}

func (e *Error) Error() string {
	id := e.EnvID
	if id == "" {
		id = "-"
	}
	if e.Status != 0 {
		return fmt.Sprintf("httpenv: %s (env %s, %s): HTTP %d: %s", e.Call, id, e.URL, e.Status, e.Msg)
	}
	return fmt.Sprintf("httpenv: %s (env %s, %s): %s", e.Call, id, e.URL, e.Msg)
}

// Client is an env served by a Server: it implements env.BaseEnv,
// env.ActionLookup and env.Gridder by calls to the server.
//
// Render, ActionLookup and Grid answer from the state the server sent with
// the last create, reset or step reply (taken right after that call, as
// the manager would read it), so they cost no round trip and cannot fail;
// RenderContext asks the server.
type Client struct {
	cfg    Config
	base   string
	hc     *http.Client
	id     string
	render string
	lookup map[int]string
	grid   [][]int
	closed bool
}

var (
	_ env.BaseEnv      = (*Client)(nil)
	_ env.ActionLookup = (*Client)(nil)
	_ env.Gridder      = (*Client)(nil)
)

// sharedTransport pools connections across every Client of the process.
var sharedTransport = func() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 1024
	t.MaxIdleConnsPerHost = 256
	return t
}()

// maxReply caps a reply body.
const maxReply = 64 << 20

// New creates the env on the server, within cfg.Timeout.
func New(cfg Config) (*Client, error) { return NewContext(context.Background(), cfg) }

// NewContext is New under ctx.
func NewContext(ctx context.Context, cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Backoff == 0 {
		cfg.Backoff = DefaultBackoff
	}
	if cfg.Token == "" {
		cfg.Token = os.Getenv(TokenEnv)
	}
	c := &Client{cfg: cfg, base: strings.TrimRight(cfg.URL, "/"), hc: &http.Client{Transport: sharedTransport}}
	body, err := marshalValue(map[string]any{"env_type": cfg.EnvType, "env_config": cfg.EnvConfig})
	if err != nil {
		return nil, &Error{Call: "create", URL: c.base + "/v1/envs", Msg: "env_config: " + err.Error()}
	}
	var rep createReply
	if err := c.call(ctx, "create", http.MethodPost, "/v1/envs", body, false, &rep); err != nil {
		return nil, err
	}
	if rep.ID == "" || strings.ContainsAny(rep.ID, "/?#%") {
		return nil, c.errorf("create", "/v1/envs", 0, "bad reply: env id %q", rep.ID)
	}
	if err := c.setState("create", "/v1/envs", rep.envState); err != nil {
		return nil, err
	}
	c.id = rep.ID
	return c, nil
}

// ID returns the server's id of the env.
func (c *Client) ID() string { return c.id }

// Config returns the client's config (with defaults applied).
func (c *Client) Config() Config { return c.cfg }

// Reset implements env.BaseEnv.
func (c *Client) Reset(ctx context.Context, seed int64, mode env.Mode) (string, error) {
	path := c.path("reset")
	if err := c.usable("reset", path); err != nil {
		return "", err
	}
	body, _ := json.Marshal(resetRequest{Seed: &seed, Mode: string(mode)})
	var rep resetReply
	if err := c.call(ctx, "reset", http.MethodPost, path, body, true, &rep); err != nil {
		return "", err
	}
	if rep.Observation == nil {
		return "", c.errorf("reset", path, 0, `bad reply: missing field "observation"`)
	}
	if err := c.setState("reset", path, rep.envState); err != nil {
		return "", err
	}
	return *rep.Observation, nil
}

// Step implements env.BaseEnv.
func (c *Client) Step(ctx context.Context, a env.Action) (env.StepResult, error) {
	path := c.path("step")
	if err := c.usable("step", path); err != nil {
		return env.StepResult{}, err
	}
	body, _ := json.Marshal(stepRequest{Action: &wireAction{ID: a.ID, Text: a.Text}})
	var rep stepReply
	if err := c.call(ctx, "step", http.MethodPost, path, body, false, &rep); err != nil {
		return env.StepResult{}, err
	}
	for _, m := range []struct {
		name    string
		missing bool
	}{{"observation", rep.Observation == nil}, {"reward", rep.Reward == nil}, {"reward_is_int", rep.RewardIsInt == nil},
		{"done", rep.Done == nil}, {"info", rep.Info == nil}} {
		if m.missing {
			return env.StepResult{}, c.errorf("step", path, 0, "bad reply: missing field %q", m.name)
		}
	}
	reward, err := parseReward(rep.Reward)
	if err != nil {
		return env.StepResult{}, c.errorf("step", path, 0, "bad reply: reward %s: %v", rep.Reward, err)
	}
	info, err := infoFromWire(rep.Info)
	if err != nil {
		return env.StepResult{}, c.errorf("step", path, 0, "bad reply: %v", err)
	}
	if err := c.setState("step", path, rep.envState); err != nil {
		return env.StepResult{}, err
	}
	return env.StepResult{Observation: *rep.Observation, Reward: reward, RewardIsInt: *rep.RewardIsInt,
		Done: *rep.Done, Info: info}, nil
}

// parseReward accepts a JSON number only (not a string holding one).
func parseReward(raw json.RawMessage) (float64, error) {
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return 0, errors.New("not a number")
	}
	return strconv.ParseFloat(string(raw), 64)
}

// Render returns the env's Render() text as of the last create, reset or
// step reply.
func (c *Client) Render() string { return c.render }

// RenderContext asks the server for the env's current Render() text.
func (c *Client) RenderContext(ctx context.Context) (string, error) {
	path := c.path("render")
	if err := c.usable("render", path); err != nil {
		return "", err
	}
	var rep renderReply
	if err := c.call(ctx, "render", http.MethodGet, path, nil, true, &rep); err != nil {
		return "", err
	}
	if rep.Observation == nil {
		return "", c.errorf("render", path, 0, `bad reply: missing field "observation"`)
	}
	return *rep.Observation, nil
}

// ActionLookup returns the env's action lookup as of the last reply (nil
// when the remote env has none).
func (c *Client) ActionLookup() map[int]string { return c.lookup }

// Grid returns the env's grid as of the last reply (nil when the remote
// env has none).
func (c *Client) Grid() [][]int { return c.grid }

// Close deletes the env on the server, within the configured timeout and
// retries. An env the server no longer knows (expired, already deleted) is
// not an error. Closing twice is a no-op.
func (c *Client) Close() error { return c.CloseContext(context.Background()) }

// CloseContext is Close under ctx: cancelling ctx or passing its deadline
// ends the attempts (and their backoff waits) at once.
func (c *Client) CloseContext(ctx context.Context) error {
	if c.closed {
		return nil
	}
	c.closed = true
	path := "/v1/envs/" + c.id
	err := c.call(ctx, "close", http.MethodDelete, path, nil, true, nil)
	var he *Error
	if errors.As(err, &he) && he.Status == http.StatusNotFound {
		return nil
	}
	return err
}

func (c *Client) path(call string) string { return "/v1/envs/" + c.id + "/" + call }

func (c *Client) usable(call, path string) error {
	if c.closed {
		return c.errorf(call, path, 0, "env is closed")
	}
	return nil
}

func (c *Client) setState(call, path string, st envState) error {
	if st.Render == nil {
		return c.errorf(call, path, 0, `bad reply: missing field "render"`)
	}
	c.render, c.lookup, c.grid = *st.Render, st.ActionLookup, st.Grid
	return nil
}

func (c *Client) errorf(call, path string, status int, format string, args ...any) *Error {
	return &Error{Call: call, URL: c.base + path, EnvID: c.id, Status: status, Msg: fmt.Sprintf(format, args...)}
}

// call sends one request (with retries) and decodes a 2xx reply strictly
// into out (nil: the body is ignored).
func (c *Client) call(ctx context.Context, call, method, path string, body []byte, idempotent bool, out any) error {
	backoff := c.cfg.Backoff
	for attempt := 0; ; attempt++ {
		status, reply, err := c.once(ctx, method, path, body)
		retry := false
		switch {
		case err != nil:
			retry = ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) && (idempotent || isDialError(err))
			if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				err = fmt.Errorf("no reply within the %s timeout", c.cfg.Timeout)
			}
			err = c.errorf(call, path, 0, "%v", err)
		case status >= 500:
			retry = idempotent
			err = c.errorf(call, path, status, "%s", errorMessage(reply))
		case status >= 300:
			err = c.errorf(call, path, status, "%s", errorMessage(reply))
		}
		if err == nil {
			if out == nil {
				return nil
			}
			if derr := decodeStrict(bytes.NewReader(reply), out); derr != nil {
				return c.errorf(call, path, 0, "bad reply (HTTP %d): %v: %s", status, derr, snippet(reply))
			}
			return nil
		}
		if !retry || attempt >= c.cfg.Retries {
			if attempt > 0 {
				err.(*Error).Msg += fmt.Sprintf(" (after %d attempts)", attempt+1)
			}
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return c.errorf(call, path, 0, "%v while retrying after: %v", ctx.Err(), err)
		case <-t.C:
		}
		backoff *= 2
	}
}

// once sends one request under the per-call timeout and reads the reply.
func (c *Client) once(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, unwrapURLError(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxReply+1))
	if err != nil {
		return 0, nil, fmt.Errorf("reading the reply: %w", err)
	}
	if len(b) > maxReply {
		return 0, nil, fmt.Errorf("reply over %d bytes", maxReply)
	}
	return resp.StatusCode, b, nil
}

// unwrapURLError drops *url.Error's "Post URL:" prefix; Error names the URL.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// isDialError reports a failure to connect, after which the request
// certainly did not reach the server.
func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// errorMessage extracts the server's {"error": ...} message, or shows the
// start of a body that is not one.
func errorMessage(b []byte) string {
	var e errorReply
	if err := decodeStrict(bytes.NewReader(b), &e); err == nil && e.Error != "" {
		return e.Error
	}
	return "reply without a JSON error: " + snippet(b)
}

func snippet(b []byte) string {
	const n = 200
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		s = s[:n] + "..."
	}
	return fmt.Sprintf("%q", s)
}

// configFromEnvConfig maps a registry entry's env_config (url, env_type,
// env_config, timeout, retries, backoff) onto a Config. timeout and backoff
// are seconds (a number) or a Go duration string ("500ms"). The inner
// env_config is taken verbatim, so ints stay ints and floats floats.
func configFromEnvConfig(m map[string]any) (Config, error) {
	var rc struct {
		URL     string `yaml:"url"`
		EnvType string `yaml:"env_type"`
		// EnvConfig is read from m directly; the field makes it a valid key.
		EnvConfig any    `yaml:"env_config"`
		Timeout   any    `yaml:"timeout"`
		Retries   *int   `yaml:"retries"`
		Backoff   any    `yaml:"backoff"`
		Token     string `yaml:"token"`
	}
	rest := make(map[string]any, len(m))
	for k, v := range m {
		if k != "env_config" {
			rest[k] = v
		}
	}
	var errs []error
	if err := env.DecodeConfig(rest, &rc); err != nil {
		errs = append(errs, fmt.Errorf("httpenv: %w", err))
	}
	cfg := DefaultConfig()
	cfg.URL, cfg.EnvType, cfg.Token = rc.URL, rc.EnvType, rc.Token
	switch inner := m["env_config"].(type) {
	case nil:
	case map[string]any:
		cfg.EnvConfig = inner
	case map[any]any:
		cfg.EnvConfig = make(map[string]any, len(inner))
		for k, v := range inner {
			cfg.EnvConfig[fmt.Sprint(k)] = v
		}
	default:
		errs = append(errs, fmt.Errorf("httpenv: env_config: want a map, got %T", inner))
	}
	if rc.Retries != nil {
		cfg.Retries = *rc.Retries
	}
	var err error
	if cfg.Timeout, err = seconds("timeout", rc.Timeout, DefaultTimeout); err != nil {
		errs = append(errs, err)
	}
	if cfg.Backoff, err = seconds("backoff", rc.Backoff, DefaultBackoff); err != nil {
		errs = append(errs, err)
	}
	if err := cfg.Validate(); err != nil {
		errs = append(errs, err)
	}
	return cfg, errors.Join(errs...)
}

func seconds(key string, v any, def time.Duration) (time.Duration, error) {
	var d time.Duration
	switch x := v.(type) {
	case nil:
		return def, nil
	case int:
		d = time.Duration(x) * time.Second
	case float64:
		d = time.Duration(x * float64(time.Second))
	case string:
		var err error
		if d, err = time.ParseDuration(x); err != nil {
			return 0, fmt.Errorf("httpenv: %s %q: want seconds or a duration like \"500ms\"", key, x)
		}
	default:
		return 0, fmt.Errorf("httpenv: %s: want seconds or a duration like \"500ms\", got %T", key, v)
	}
	if d < 0 {
		return 0, fmt.Errorf("httpenv: %s %v: must not be negative", key, v)
	}
	return d, nil
}
