package ragen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// OpenAIConfig configures OpenAIPolicy (model_config.* of upstream's
// evaluate_api_llm config, plus client behaviour).
type OpenAIConfig struct {
	BaseURL        string        `yaml:"base_url"`        // e.g. https://api.openai.com/v1 (…/chat/completions is appended)
	APIKeyEnv      string        `yaml:"api_key_env"`     // name of the env var holding the key ("" = no auth)
	Model          string        `yaml:"model_name"`      // model name sent to the server
	MaxConcurrency int           `yaml:"max_concurrency"` // requests in flight (upstream 16)
	MaxRetries     int           `yaml:"max_retries"`     // retries after the first try on 429/5xx/timeouts
	InitialBackoff time.Duration `yaml:"initial_backoff"` // first retry delay; doubles per retry
	MaxBackoff     time.Duration `yaml:"max_backoff"`     // cap on a retry delay
	RequestTimeout time.Duration `yaml:"request_timeout"` // per attempt
	// AllowTruncated accepts finish reasons length/max_tokens/content_filter,
	// which upstream treats as errors.
	AllowTruncated bool `yaml:"allow_truncated"`
	// HTTPClient is used if set (tests); default http.DefaultClient.
	HTTPClient *http.Client `yaml:"-"`
}

// DefaultOpenAIConfig returns the client defaults.
func DefaultOpenAIConfig() OpenAIConfig {
	return OpenAIConfig{
		BaseURL:        "https://api.openai.com/v1",
		APIKeyEnv:      "OPENAI_API_KEY",
		Model:          "gpt-4o",
		MaxConcurrency: 16,
		MaxRetries:     3,
		InitialBackoff: 500 * time.Millisecond,
		MaxBackoff:     10 * time.Second,
		RequestTimeout: 60 * time.Second,
	}
}

// Validate reports every problem at once.
func (c OpenAIConfig) Validate() error {
	var errs []error
	bad := func(f string, a ...any) { errs = append(errs, fmt.Errorf("ragen: openai config: "+f, a...)) }
	if c.BaseURL == "" {
		bad("base_url is empty")
	}
	if c.Model == "" {
		bad("model_name is empty")
	}
	if c.MaxConcurrency < 1 {
		bad("max_concurrency = %d, want ≥ 1", c.MaxConcurrency)
	}
	if c.MaxRetries < 0 {
		bad("max_retries = %d, want ≥ 0", c.MaxRetries)
	}
	if c.InitialBackoff < 0 || c.MaxBackoff < 0 {
		bad("backoff must be ≥ 0")
	}
	if c.RequestTimeout <= 0 {
		bad("request_timeout = %v, want > 0", c.RequestTimeout)
	}
	return errors.Join(errs...)
}

// OpenAIPolicy is a Policy backed by an OpenAI-compatible chat-completions
// server. It sends each request's Messages (not its token ids) and returns
// text only (no token ids or log-probs). Safe for concurrent use.
type OpenAIPolicy struct {
	cfg    OpenAIConfig
	key    string
	client *http.Client
	sem    chan struct{}
}

// NewOpenAIPolicy reads the API key from the env var named in cfg.
func NewOpenAIPolicy(cfg OpenAIConfig) (*OpenAIPolicy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &OpenAIPolicy{cfg: cfg, client: cfg.HTTPClient, sem: make(chan struct{}, cfg.MaxConcurrency)}
	if p.client == nil {
		p.client = http.DefaultClient
	}
	if cfg.APIKeyEnv != "" {
		p.key = os.Getenv(cfg.APIKeyEnv)
		if p.key == "" {
			return nil, fmt.Errorf("ragen: openai: environment variable %s (api_key_env) is not set", cfg.APIKeyEnv)
		}
	}
	return p, nil
}

type chatRequest struct {
	Model       string        `json:"model"`
	Messages    []chatMessage `json:"messages"`
	Temperature float64       `json:"temperature"`
	TopP        float64       `json:"top_p,omitempty"`
	MaxTokens   int           `json:"max_tokens,omitempty"`
	Stop        []string      `json:"stop,omitempty"`
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatResponse struct {
	Choices []struct {
		Message      chatMessage `json:"message"`
		FinishReason string      `json:"finish_reason"`
	} `json:"choices"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// Generate implements Policy: requests run concurrently (at most
// max_concurrency in flight); the first failure cancels the rest.
func (p *OpenAIPolicy) Generate(ctx context.Context, reqs []GenRequest) ([]Generation, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out, errs := p.generate(ctx, reqs, cancel)
	var first error
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return nil, err
		}
		if err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		return nil, fmt.Errorf("ragen: openai: %w", first)
	}
	return out, nil
}

// GenerateEach implements PartialPolicy: every request runs to its own
// end, and errs[i] is request i's failure (nil when out[i] is its answer),
// so one bad reply fails one episode, not the batch.
func (p *OpenAIPolicy) GenerateEach(ctx context.Context, reqs []GenRequest) ([]Generation, []error) {
	return p.generate(ctx, reqs, nil)
}

// generate runs the requests concurrently; onFail (if set) is called on
// the first failure.
func (p *OpenAIPolicy) generate(ctx context.Context, reqs []GenRequest, onFail func()) ([]Generation, []error) {
	out := make([]Generation, len(reqs))
	errs := make([]error, len(reqs))
	var wg sync.WaitGroup
	for i := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case p.sem <- struct{}{}:
			case <-ctx.Done():
				errs[i] = ctx.Err()
				return
			}
			defer func() { <-p.sem }()
			g, err := p.one(ctx, reqs[i])
			if err != nil {
				errs[i] = fmt.Errorf("ragen: openai: env %d turn %d: %w", reqs[i].EnvID, reqs[i].Turn, err)
				if onFail != nil {
					onFail()
				}
				return
			}
			out[i] = g
		}()
	}
	wg.Wait()
	return out, errs
}

// retryable marks errors worth another attempt.
type retryable struct {
	err   error
	after time.Duration // server's Retry-After, if any
}

func (r *retryable) Error() string { return r.err.Error() }
func (r *retryable) Unwrap() error { return r.err }

func (p *OpenAIPolicy) one(ctx context.Context, r GenRequest) (Generation, error) {
	body := chatRequest{Model: p.cfg.Model, Temperature: r.Sampling.Temperature, TopP: r.Sampling.TopP, MaxTokens: r.Sampling.MaxNewTokens, Stop: r.Sampling.Stop}
	if !r.Sampling.DoSample {
		body.Temperature = 0
	}
	for _, m := range r.Messages {
		body.Messages = append(body.Messages, chatMessage{Role: m.Role, Content: m.Content})
	}
	if len(body.Messages) == 0 {
		return Generation{}, fmt.Errorf("request has no messages")
	}
	data, err := json.Marshal(body)
	if err != nil {
		return Generation{}, err
	}
	backoff := p.cfg.InitialBackoff
	var last error
	for attempt := 0; attempt <= p.cfg.MaxRetries; attempt++ {
		if attempt > 0 {
			d := backoff
			var rt *retryable
			if errors.As(last, &rt) && rt.after > d {
				d = rt.after
			}
			d = min(d, p.cfg.MaxBackoff)
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return Generation{}, fmt.Errorf("%w (last error: %v)", ctx.Err(), last)
			case <-t.C:
			}
			backoff = min(2*backoff, p.cfg.MaxBackoff)
		}
		g, err := p.attempt(ctx, data)
		if err == nil {
			return g, nil
		}
		last = err
		var rt *retryable
		if !errors.As(err, &rt) || ctx.Err() != nil {
			return Generation{}, err
		}
	}
	return Generation{}, fmt.Errorf("giving up after %d attempts: %w", p.cfg.MaxRetries+1, last)
}

func (p *OpenAIPolicy) attempt(ctx context.Context, data []byte) (Generation, error) {
	actx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
	defer cancel()
	url := strings.TrimRight(p.cfg.BaseURL, "/") + "/chat/completions"
	req, err := http.NewRequestWithContext(actx, http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		return Generation{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	if p.key != "" {
		req.Header.Set("Authorization", "Bearer "+p.key)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		if ctx.Err() == nil { // our per-attempt timeout or a transport error
			return Generation{}, &retryable{err: fmt.Errorf("POST %s: %w", url, err)}
		}
		return Generation{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		if ctx.Err() == nil {
			return Generation{}, &retryable{err: fmt.Errorf("read response: %w", err)}
		}
		return Generation{}, err
	}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
		var after time.Duration
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			after = time.Duration(s) * time.Second
		}
		return Generation{}, &retryable{err: fmt.Errorf("HTTP %d: %s", resp.StatusCode, snippet(raw)), after: after}
	}
	if resp.StatusCode != http.StatusOK {
		return Generation{}, fmt.Errorf("HTTP %d: %s", resp.StatusCode, snippet(raw))
	}
	var cr chatResponse
	if err := json.Unmarshal(raw, &cr); err != nil {
		return Generation{}, fmt.Errorf("decode response (%s): %w", snippet(raw), err)
	}
	if cr.Error != nil {
		return Generation{}, fmt.Errorf("server error: %s", cr.Error.Message)
	}
	if len(cr.Choices) == 0 {
		return Generation{}, fmt.Errorf("response has no choices: %s", snippet(raw))
	}
	c := cr.Choices[0]
	switch c.FinishReason {
	case "length", "max_tokens", "content_filter":
		if !p.cfg.AllowTruncated {
			return Generation{}, fmt.Errorf("finish reason %q", c.FinishReason)
		}
	}
	return Generation{Text: c.Message.Content, FinishReason: c.FinishReason}, nil
}

func snippet(b []byte) string {
	s := string(b)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return strconv.Quote(s)
}
