package ragen

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ragen/llm/tokenizer"
)

func testOpenAI(t *testing.T, h http.HandlerFunc, mod func(*OpenAIConfig)) *OpenAIPolicy {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	t.Setenv("RAGEN_TEST_KEY", "sk-test")
	cfg := DefaultOpenAIConfig()
	cfg.BaseURL = srv.URL + "/v1"
	cfg.APIKeyEnv = "RAGEN_TEST_KEY"
	cfg.Model = "test-model"
	cfg.InitialBackoff = time.Millisecond
	cfg.MaxBackoff = 5 * time.Millisecond
	cfg.RequestTimeout = 2 * time.Second
	if mod != nil {
		mod(&cfg)
	}
	p, err := NewOpenAIPolicy(cfg)
	require.NoError(t, err)
	return p
}

func reqs(n int) []GenRequest {
	var out []GenRequest
	for i := range n {
		out = append(out, GenRequest{EnvID: i, Messages: []tokenizer.Message{{Role: "system", Content: "sys"}, {Role: "user", Content: "u" + string(rune('0'+i))}},
			Sampling: SamplingParams{DoSample: true, Temperature: 0.5, TopP: 1, MaxNewTokens: 50}})
	}
	return out
}

func reply(w http.ResponseWriter, content, finish string) {
	_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": content}, "finish_reason": finish}}})
}

// chatRequest is the wire request as the stand-in server reads it.
type chatRequest struct {
	Model       string   `json:"model"`
	Temperature float64  `json:"temperature"`
	TopP        float64  `json:"top_p"`
	MaxTokens   int      `json:"max_tokens"`
	Stop        []string `json:"stop"`
	Allowed     []int    `json:"allowed_token_ids"`
	Messages    []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
}

func TestOpenAINormal(t *testing.T) {
	p := testOpenAI(t, func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "/v1/chat/completions", r.URL.Path)
		assert.Equal(t, "Bearer sk-test", r.Header.Get("Authorization"))
		var body chatRequest
		b, _ := io.ReadAll(r.Body)
		require.NoError(t, json.Unmarshal(b, &body))
		assert.Equal(t, "test-model", body.Model)
		assert.Equal(t, 0.5, body.Temperature)
		assert.Equal(t, 50, body.MaxTokens)
		reply(w, "echo "+body.Messages[1].Content, "stop")
	}, nil)
	gens, err := p.Generate(context.Background(), reqs(3))
	require.NoError(t, err)
	require.Len(t, gens, 3)
	for i, g := range gens {
		assert.Equal(t, "echo u"+string(rune('0'+i)), g.Text)
		assert.Equal(t, "stop", g.FinishReason)
	}
}

// rollout.allowed_token_ids travels as vLLM's extra allowed_token_ids
// field, and only when set.
func TestOpenAIAllowedTokenIDs(t *testing.T) {
	var raw []string
	var mu sync.Mutex
	p := testOpenAI(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body chatRequest
		require.NoError(t, json.Unmarshal(b, &body))
		mu.Lock()
		raw = append(raw, string(b))
		mu.Unlock()
		reply(w, fmt.Sprint(body.Allowed), "stop")
	}, nil)
	rs := reqs(1)
	gens, err := p.Generate(context.Background(), rs)
	require.NoError(t, err)
	assert.Equal(t, "[]", gens[0].Text)
	assert.NotContains(t, raw[0], "allowed_token_ids")
	rs[0].Sampling.AllowedTokenIDs = []int{10, 32, 33}
	gens, err = p.Generate(context.Background(), rs)
	require.NoError(t, err)
	assert.Equal(t, "[10 32 33]", gens[0].Text)
}

// model_info.<m>.generation_kwargs are the request's sampling parameters,
// as upstream passes them to its client: temperature 0 and
// max_completion_tokens 512 instead of the rollout's 0.5 / max_tokens 50;
// other keys travel as they are.
func TestOpenAIGenerationKwargs(t *testing.T) {
	var raw string
	p := testOpenAI(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		raw = string(b)
		reply(w, "ok", "stop")
	}, func(c *OpenAIConfig) {
		c.GenerationKwargs = map[string]any{"temperature": 0, "max_completion_tokens": 512, "seed": 7}
	})
	_, err := p.Generate(context.Background(), reqs(1))
	require.NoError(t, err)
	var body map[string]any
	require.NoError(t, json.Unmarshal([]byte(raw), &body))
	assert.Equal(t, 0.0, body["temperature"])
	assert.Equal(t, 512.0, body["max_completion_tokens"])
	assert.Equal(t, 7.0, body["seed"])
	assert.NotContains(t, body, "max_tokens")
	assert.NotContains(t, body, "top_p")
}

func TestOpenAIGarbage(t *testing.T) {
	p := testOpenAI(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("<html>not json"))
	}, nil)
	_, err := p.Generate(context.Background(), reqs(1))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "decode response")
	assert.Contains(t, err.Error(), "not json")
}

func TestOpenAIRetryThenSuccess(t *testing.T) {
	var calls atomic.Int32
	p := testOpenAI(t, func(w http.ResponseWriter, r *http.Request) {
		switch calls.Add(1) {
		case 1:
			http.Error(w, "boom", http.StatusInternalServerError)
		case 2:
			http.Error(w, "slow down", http.StatusTooManyRequests)
		default:
			reply(w, "ok", "stop")
		}
	}, nil)
	gens, err := p.Generate(context.Background(), reqs(1))
	require.NoError(t, err)
	assert.Equal(t, "ok", gens[0].Text)
	assert.Equal(t, int32(3), calls.Load())
}

func TestOpenAIRetriesExhausted(t *testing.T) {
	var calls atomic.Int32
	p := testOpenAI(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, "down", http.StatusBadGateway)
	}, func(c *OpenAIConfig) { c.MaxRetries = 2 })
	_, err := p.Generate(context.Background(), reqs(1))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "giving up after 3 attempts")
	assert.Contains(t, err.Error(), "HTTP 502")
	assert.Equal(t, int32(3), calls.Load())
}

func TestOpenAIClientErrorNotRetried(t *testing.T) {
	var calls atomic.Int32
	p := testOpenAI(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, `{"error":{"message":"bad key"}}`, http.StatusUnauthorized)
	}, nil)
	_, err := p.Generate(context.Background(), reqs(1))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "HTTP 401")
	assert.Equal(t, int32(1), calls.Load())
}

func TestOpenAINeverAnswers(t *testing.T) {
	stop := make(chan struct{})
	p := testOpenAI(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}, func(c *OpenAIConfig) { c.RequestTimeout = 50 * time.Millisecond; c.MaxRetries = 1 })
	defer close(stop)
	start := time.Now()
	_, err := p.Generate(context.Background(), reqs(2))
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 5*time.Second)
}

func TestOpenAIFinishReasonAndConcurrency(t *testing.T) {
	var inFlight, peak atomic.Int32
	var mu sync.Mutex
	p := testOpenAI(t, func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		mu.Lock()
		if n > peak.Load() {
			peak.Store(n)
		}
		mu.Unlock()
		time.Sleep(10 * time.Millisecond)
		inFlight.Add(-1)
		reply(w, "x", "stop")
	}, func(c *OpenAIConfig) { c.MaxConcurrency = 2 })
	_, err := p.Generate(context.Background(), reqs(6))
	require.NoError(t, err)
	assert.LessOrEqual(t, peak.Load(), int32(2))

	p = testOpenAI(t, func(w http.ResponseWriter, r *http.Request) { reply(w, "cut", "length") }, nil)
	_, err = p.Generate(context.Background(), reqs(1))
	assert.ErrorContains(t, err, `finish reason "length"`)
}

func TestOpenAIConfigErrors(t *testing.T) {
	cfg := DefaultOpenAIConfig()
	cfg.APIKeyEnv = "RAGEN_SURELY_UNSET_KEY"
	_, err := NewOpenAIPolicy(cfg)
	assert.ErrorContains(t, err, "RAGEN_SURELY_UNSET_KEY")
	cfg = OpenAIConfig{}
	err = cfg.Validate()
	for _, s := range []string{"base_url", "model_name", "max_concurrency", "request_timeout"} {
		assert.ErrorContains(t, err, s)
	}
}

// With no api_key_env (a server of your own) no key is sent, even when the
// client library would pick OPENAI_API_KEY or OPENAI_ORG_ID up from the
// environment.
func TestOpenAIKeyStaysHome(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-do-not-leak")
	t.Setenv("OPENAI_ORG_ID", "org-do-not-leak")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/elsewhere")
	p := testOpenAI(t, func(w http.ResponseWriter, r *http.Request) {
		assert.Empty(t, r.Header.Get("Authorization"))
		assert.Empty(t, r.Header.Get("OpenAI-Organization"))
		reply(w, "ok", "stop")
	}, func(c *OpenAIConfig) { c.APIKeyEnv = "" })
	gens, err := p.Generate(context.Background(), reqs(1))
	require.NoError(t, err)
	assert.Equal(t, "ok", gens[0].Text)
}

// GenerateEach fails only the requests that failed (a truncated reply, a
// request out of retries); the others are answered.
func TestOpenAIGenerateEach(t *testing.T) {
	p := testOpenAI(t, func(w http.ResponseWriter, r *http.Request) {
		var body chatRequest
		b, _ := io.ReadAll(r.Body)
		require.NoError(t, json.Unmarshal(b, &body))
		switch body.Messages[1].Content {
		case "u1":
			reply(w, "cut", "length")
		case "u2":
			http.Error(w, "overloaded", http.StatusBadGateway)
		default:
			reply(w, "fine", "stop")
		}
	}, func(c *OpenAIConfig) { c.MaxRetries = 1 })
	gens, errs := p.GenerateEach(context.Background(), reqs(4))
	require.Len(t, errs, 4)
	assert.NoError(t, errs[0])
	assert.ErrorContains(t, errs[1], `env 1 turn 0: finish reason "length"`)
	assert.ErrorContains(t, errs[2], "giving up after 2 attempts")
	assert.NoError(t, errs[3])
	assert.Equal(t, "fine", gens[0].Text)
	assert.Equal(t, "fine", gens[3].Text)
}

// A reply longer than the body cap fails its episode with the size named,
// whether or not the server says its length up front, and is not retried;
// the server writing 20 MB stops as the client hangs up.
func TestOpenAIReplyBodyCap(t *testing.T) {
	big := strings.Repeat("x", 20<<20)
	whole, err := json.Marshal(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"content": big}, "finish_reason": "stop"}}})
	require.NoError(t, err)
	for _, sayLength := range []bool{true, false} {
		var calls atomic.Int32
		p := testOpenAI(t, func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			b := whole
			w.Header().Set("Content-Type", "application/json")
			if sayLength {
				w.Header().Set("Content-Length", strconv.Itoa(len(b)))
			}
			for len(b) > 0 { // in pieces, so that the length is not known without the header
				n := min(len(b), 1<<16)
				if _, err := w.Write(b[:n]); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				b = b[n:]
			}
		}, func(c *OpenAIConfig) { c.RequestTimeout = time.Minute }) // no retry on a slow (-race) run
		gens, errs := p.GenerateEach(context.Background(), reqs(1))
		require.Error(t, errs[0], "sayLength=%v", sayLength)
		assert.ErrorIs(t, errs[0], ErrReplyTooLarge)
		assert.ErrorContains(t, errs[0], "over the 8388608-byte cap (max_reply_bytes)")
		if sayLength {
			assert.ErrorContains(t, errs[0], fmt.Sprintf("reply body of %d bytes", len(whole)))
		}
		assert.Empty(t, gens[0].Text)
		assert.Equal(t, int32(1), calls.Load(), "a reply over the cap is not retried")
	}
}

// A body of exactly the cap is read; one byte more is refused.
func TestOpenAIReplyBodyCapEdge(t *testing.T) {
	body, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"content": "hello"}, "finish_reason": "stop"}}})
	for _, tc := range []struct {
		limit int
		ok    bool
	}{{len(body), true}, {len(body) - 1, false}} {
		p := testOpenAI(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(body[:10])
			w.(http.Flusher).Flush() // chunked: no Content-Length
			_, _ = w.Write(body[10:])
		}, func(c *OpenAIConfig) { c.MaxReplyBytes = tc.limit })
		gens, errs := p.GenerateEach(context.Background(), reqs(1))
		if tc.ok {
			require.NoError(t, errs[0])
			assert.Equal(t, "hello", gens[0].Text)
		} else {
			assert.ErrorIs(t, errs[0], ErrReplyTooLarge)
		}
	}
}

// A completion text longer than max_tokens allows (64 bytes a token, at
// least 4 KiB: 4096 bytes for max_tokens 50) fails the episode naming its
// size, or with --truncation keep is cut to the cap with finish reason
// "length", never split inside a UTF-8 sequence.
func TestOpenAIReplyTextCap(t *testing.T) {
	text := "a" + strings.Repeat("é", 50000) // 100001 bytes; byte 4096 is inside an é
	h := func(w http.ResponseWriter, r *http.Request) { reply(w, text, "stop") }
	p := testOpenAI(t, h, nil)
	_, errs := p.GenerateEach(context.Background(), reqs(1))
	assert.ErrorIs(t, errs[0], ErrReplyTooLarge)
	assert.ErrorContains(t, errs[0], "env 0 turn 0: reply too large: reply text of 100001 bytes is over the 4096-byte cap")

	p = testOpenAI(t, h, func(c *OpenAIConfig) { c.AllowTruncated = true })
	gens, errs := p.GenerateEach(context.Background(), reqs(1))
	require.NoError(t, errs[0])
	assert.Equal(t, text[:4095], gens[0].Text)
	assert.True(t, utf8.ValidString(gens[0].Text))
	assert.Equal(t, "length", gens[0].FinishReason)

	p = testOpenAI(t, h, func(c *OpenAIConfig) { c.MaxReplyTextBytes = 200001 })
	gens, errs = p.GenerateEach(context.Background(), reqs(1))
	require.NoError(t, errs[0])
	assert.Equal(t, text, gens[0].Text)
}
