package ragen

import (
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
	"unicode/utf8"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
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
	// MaxReplyBytes caps a reply's body as read from the server (0 =
	// DefaultMaxReplyBytes); a longer body fails the request, whatever
	// AllowTruncated says, as truncated JSON cannot be decoded.
	MaxReplyBytes int `yaml:"max_reply_bytes"`
	// MaxReplyTextBytes caps the completion text (0 = ReplyTextBytesPerToken
	// per requested max_tokens, at least 4 KiB, or DefaultMaxReplyBytes when
	// max_tokens is not set). A longer text fails the request, or with
	// AllowTruncated is cut there (at a UTF-8 boundary) with finish reason
	// "length".
	MaxReplyTextBytes int `yaml:"max_reply_text_bytes"`
	// GenerationKwargs, when set, are the request's sampling parameters
	// instead of the rollout's (upstream's model_info.<m>.generation_kwargs,
	// passed to the client as keyword arguments): temperature, top_p,
	// max_tokens and max_completion_tokens set those fields; any other key
	// is sent as is.
	GenerationKwargs map[string]any `yaml:"generation_kwargs"`
	// HTTPClient is used if set (tests); default http.DefaultClient.
	HTTPClient *http.Client `yaml:"-"`
}

// Reply caps (see OpenAIConfig.MaxReplyBytes and MaxReplyTextBytes). A
// token of a BPE vocabulary is rarely over 16 bytes; 64 leaves room for
// long runs of spaces or punctuation merged into one token.
const (
	DefaultMaxReplyBytes   = 8 << 20
	ReplyTextBytesPerToken = 64
	minReplyTextBytes      = 4 << 10
)

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
	if c.MaxReplyBytes < 0 {
		bad("max_reply_bytes = %d, want ≥ 0 (0 = %d)", c.MaxReplyBytes, DefaultMaxReplyBytes)
	}
	if c.MaxReplyTextBytes < 0 {
		bad("max_reply_text_bytes = %d, want ≥ 0 (0 = %d per max_tokens)", c.MaxReplyTextBytes, ReplyTextBytesPerToken)
	}
	return errors.Join(errs...)
}

// OpenAIPolicy is a Policy backed by an OpenAI-compatible chat-completions
// server (OpenAI, or vLLM / SGLang / a proxy through base_url), spoken with
// the official client github.com/openai/openai-go. It sends each request's
// Messages (not its token ids) and returns text only (no token ids or
// log-probs). Retries are ragen's (max_retries, backoff, Retry-After), the
// client's own are off. Safe for concurrent use.
type OpenAIPolicy struct {
	cfg    OpenAIConfig
	key    string
	client *http.Client
	api    openai.Client
	sem    chan struct{}
}

// NewOpenAIPolicy reads the API key from the env var named in cfg.
func NewOpenAIPolicy(cfg OpenAIConfig) (*OpenAIPolicy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.MaxReplyBytes == 0 {
		cfg.MaxReplyBytes = DefaultMaxReplyBytes
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
	// The client reads OPENAI_API_KEY, OPENAI_ORG_ID, ... from the
	// environment; override them, so that a key goes only where
	// api_key_env says (never to a base_url of your own by accident).
	p.api = openai.NewClient(
		option.WithBaseURL(strings.TrimRight(cfg.BaseURL, "/")+"/"),
		option.WithAPIKey(p.key),
		option.WithHeaderDel("OpenAI-Organization"),
		option.WithHeaderDel("OpenAI-Project"),
		option.WithHTTPClient(p.client),
		option.WithMaxRetries(0),
		option.WithMiddleware(capBody(int64(cfg.MaxReplyBytes))),
	)
	return p, nil
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
	params := openai.ChatCompletionNewParams{Model: p.cfg.Model, Temperature: openai.Float(r.Sampling.Temperature)}
	if !r.Sampling.DoSample {
		params.Temperature = openai.Float(0)
	}
	if r.Sampling.TopP != 0 {
		params.TopP = openai.Float(r.Sampling.TopP)
	}
	if r.Sampling.MaxNewTokens != 0 {
		// max_tokens, which vLLM and SGLang read (max_completion_tokens is
		// OpenAI's newer name)
		params.MaxTokens = openai.Int(int64(r.Sampling.MaxNewTokens))
	}
	if len(r.Sampling.Stop) > 0 {
		params.Stop = openai.ChatCompletionNewParamsStopUnion{OfStringArray: r.Sampling.Stop}
	}
	extra := map[string]any{}
	if ids := r.Sampling.AllowedTokenIDs; len(ids) > 0 {
		// vLLM's extra sampling parameter (OpenAI's API has none)
		extra["allowed_token_ids"] = ids
	}
	maxNew := r.Sampling.MaxNewTokens
	if kw := p.cfg.GenerationKwargs; len(kw) > 0 {
		params.Temperature, params.TopP, params.MaxTokens = param.Opt[float64]{}, param.Opt[float64]{}, param.Opt[int64]{}
		maxNew = 0
		for k, v := range kw {
			f, isNum := kwargNumber(v)
			switch {
			case k == "temperature" && isNum:
				params.Temperature = openai.Float(f)
			case k == "top_p" && isNum:
				params.TopP = openai.Float(f)
			case k == "max_tokens" && isNum:
				params.MaxTokens, maxNew = openai.Int(int64(f)), int(f)
			case k == "max_completion_tokens" && isNum:
				params.MaxCompletionTokens, maxNew = openai.Int(int64(f)), int(f)
			default:
				extra[k] = v
			}
		}
	}
	if len(extra) > 0 {
		params.SetExtraFields(extra)
	}
	for _, m := range r.Messages {
		switch m.Role {
		case "system":
			params.Messages = append(params.Messages, openai.SystemMessage(m.Content))
		case "assistant":
			params.Messages = append(params.Messages, openai.AssistantMessage(m.Content))
		case "user":
			params.Messages = append(params.Messages, openai.UserMessage(m.Content))
		default:
			return Generation{}, fmt.Errorf("message role %q is not one of system, user, assistant", m.Role)
		}
	}
	if len(params.Messages) == 0 {
		return Generation{}, fmt.Errorf("request has no messages")
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
		g, err := p.attempt(ctx, params, p.textCap(maxNew))
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

// chatReply is the part of a chat completion ragen reads; decoded here
// rather than by the client, so that replies of OpenAI-compatible servers
// that differ in other fields still work and errors show the body.
type chatReply struct {
	Choices []struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// textCap is the longest completion text accepted for a request of
// maxTokens new tokens.
func (p *OpenAIPolicy) textCap(maxTokens int) int {
	switch {
	case p.cfg.MaxReplyTextBytes > 0:
		return p.cfg.MaxReplyTextBytes
	case maxTokens > 0:
		return max(maxTokens*ReplyTextBytesPerToken, minReplyTextBytes)
	}
	return DefaultMaxReplyBytes
}

// ErrReplyTooLarge is the cause of a reply refused for its size.
var ErrReplyTooLarge = errors.New("reply too large")

// bodyTooLarge reports a reply body over the cap; size is its
// Content-Length, -1 when the server did not say.
type bodyTooLarge struct{ size, limit int64 }

func (e *bodyTooLarge) Error() string {
	if e.size >= 0 {
		return fmt.Sprintf("reply body of %d bytes is over the %d-byte cap (max_reply_bytes)", e.size, e.limit)
	}
	return fmt.Sprintf("reply body is over the %d-byte cap (max_reply_bytes)", e.limit)
}

func (e *bodyTooLarge) Unwrap() error { return ErrReplyTooLarge }

// capBody is a client middleware that fails a response whose body says or
// turns out to be longer than limit bytes, before it is read whole.
func capBody(limit int64) option.Middleware {
	return func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		resp, err := next(req)
		if err != nil || resp.Body == nil {
			return resp, err
		}
		if resp.ContentLength > limit {
			_ = resp.Body.Close()
			return nil, &bodyTooLarge{size: resp.ContentLength, limit: limit}
		}
		resp.Body = &cappedBody{rc: resp.Body, left: limit, limit: limit}
		return resp, nil
	}
}

// cappedBody reads at most limit bytes, then fails with *bodyTooLarge.
type cappedBody struct {
	rc          io.ReadCloser
	left, limit int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// one byte more tells a body of exactly limit bytes from a longer one
		var one [1]byte
		if n, err := b.rc.Read(one[:]); n > 0 {
			return 0, &bodyTooLarge{size: -1, limit: b.limit}
		} else if err != nil {
			return 0, err
		}
		return 0, nil
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }

func (p *OpenAIPolicy) attempt(ctx context.Context, params openai.ChatCompletionNewParams, textCap int) (Generation, error) {
	actx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
	defer cancel()
	url := strings.TrimRight(p.cfg.BaseURL, "/") + "/chat/completions"
	var raw []byte
	_, err := p.api.Chat.Completions.New(actx, params, option.WithResponseBodyInto(&raw))
	var ae *openai.Error
	var big *bodyTooLarge
	switch {
	case errors.As(err, &big):
		return Generation{}, big // not retried: the next reply would be as long
	case errors.As(err, &ae):
		var body []byte
		if ae.Response != nil && ae.Response.Body != nil {
			body, _ = io.ReadAll(io.LimitReader(ae.Response.Body, 1<<20))
		}
		if ae.StatusCode == http.StatusTooManyRequests || ae.StatusCode >= 500 {
			var after time.Duration
			if ae.Response != nil {
				if s, err := strconv.Atoi(ae.Response.Header.Get("Retry-After")); err == nil && s > 0 {
					after = time.Duration(s) * time.Second
				}
			}
			return Generation{}, &retryable{err: fmt.Errorf("HTTP %d: %s", ae.StatusCode, snippet(body)), after: after}
		}
		return Generation{}, fmt.Errorf("HTTP %d: %s", ae.StatusCode, snippet(body))
	case err != nil:
		if ctx.Err() == nil { // our per-attempt timeout or a transport error
			return Generation{}, &retryable{err: fmt.Errorf("POST %s: %w", url, err)}
		}
		return Generation{}, err
	}
	var cr chatReply
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
	text := c.Message.Content
	if len(text) > textCap {
		if !p.cfg.AllowTruncated {
			return Generation{}, fmt.Errorf("%w: reply text of %d bytes is over the %d-byte cap (max_reply_text_bytes; the truncation mode keep cuts it there)",
				ErrReplyTooLarge, len(text), textCap)
		}
		text, c.FinishReason = cutUTF8(text, textCap), "length"
	}
	return Generation{Text: text, FinishReason: c.FinishReason}, nil
}

// cutUTF8 returns the longest prefix of s of at most n bytes that does not
// split a UTF-8 sequence.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func snippet(b []byte) string {
	s := string(b)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return strconv.Quote(s)
}

// kwargNumber reads a YAML number of generation_kwargs (a bool is not
// one: it travels as it is).
func kwargNumber(v any) (float64, bool) {
	if _, isBool := v.(bool); isBool {
		return 0, false
	}
	return toFloat(v)
}
