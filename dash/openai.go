package dash

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"ragen/ragen"
)

// OpenAIStreamConfig names an OpenAI-compatible chat endpoint.
type OpenAIStreamConfig struct {
	BaseURL string // e.g. http://127.0.0.1:8000/v1
	Model   string
	APIKey  string        // sent as a bearer token when set
	Timeout time.Duration // whole request (default 2 min)
}

// OpenAIStream streams chat completions ("stream": true) from an
// OpenAI-compatible server.
type OpenAIStream struct {
	cfg    OpenAIStreamConfig
	client *http.Client
}

// NewOpenAIStream returns the streaming client.
func NewOpenAIStream(cfg OpenAIStreamConfig) *OpenAIStream {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 2 * time.Minute
	}
	return &OpenAIStream{cfg: cfg, client: &http.Client{}}
}

// Stream implements StreamPolicy.
func (o *OpenAIStream) Stream(ctx context.Context, req ragen.GenRequest, emit func(string)) (string, error) {
	if len(req.Messages) == 0 {
		return "", fmt.Errorf("openai: request has no messages")
	}
	type msg struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	body := struct {
		Model       string   `json:"model"`
		Messages    []msg    `json:"messages"`
		Stream      bool     `json:"stream"`
		MaxTokens   int      `json:"max_tokens,omitempty"`
		Temperature float64  `json:"temperature"`
		TopP        float64  `json:"top_p,omitempty"`
		Stop        []string `json:"stop,omitempty"`
	}{Model: o.cfg.Model, Stream: true, MaxTokens: req.Sampling.MaxNewTokens, Temperature: req.Sampling.Temperature, TopP: req.Sampling.TopP, Stop: req.Sampling.Stop}
	if !req.Sampling.DoSample {
		body.Temperature = 0
	}
	for _, m := range req.Messages {
		body.Messages = append(body.Messages, msg{m.Role, m.Content})
	}
	data, err := json.Marshal(body)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, o.cfg.Timeout)
	defer cancel()
	url := strings.TrimRight(o.cfg.BaseURL, "/") + "/chat/completions"
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		return "", fmt.Errorf("openai: %w", err)
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "text/event-stream")
	if o.cfg.APIKey != "" {
		hr.Header.Set("Authorization", "Bearer "+o.cfg.APIKey)
	}
	resp, err := o.client.Do(hr)
	if err != nil {
		return "", fmt.Errorf("openai: %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return "", fmt.Errorf("openai: %s: %s: %s", url, resp.Status, strings.TrimSpace(string(b)))
	}
	var out strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		payload, ok := strings.CutPrefix(line, "data:")
		if !ok {
			continue
		}
		payload = strings.TrimSpace(payload)
		if payload == "[DONE]" {
			return out.String(), nil
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
				Text string `json:"text"`
			} `json:"choices"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(payload), &chunk); err != nil {
			return out.String(), fmt.Errorf("openai: bad stream chunk %q: %w", payload, err)
		}
		if chunk.Error != nil {
			return out.String(), fmt.Errorf("openai: %s", chunk.Error.Message)
		}
		for _, c := range chunk.Choices {
			d := c.Delta.Content + c.Text
			if d != "" {
				out.WriteString(d)
				emit(d)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return out.String(), fmt.Errorf("openai: stream: %w", err)
	}
	// a server that closes without [DONE]: what came is the answer
	return out.String(), nil
}
