package dash

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
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
	// MaxStreamBytes caps the bytes read from one reply stream (default
	// ragen.DefaultMaxReplyBytes); MaxTextBytes caps its text (default
	// ragen.ReplyTextBytesPerToken per requested max_tokens, at least
	// 4 KiB). A reply over either fails with its size named.
	MaxStreamBytes int
	MaxTextBytes   int
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
	if cfg.MaxStreamBytes <= 0 {
		cfg.MaxStreamBytes = ragen.DefaultMaxReplyBytes
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
	textCap := o.cfg.MaxTextBytes
	if textCap <= 0 {
		textCap = ragen.DefaultMaxReplyBytes
		if n := req.Sampling.MaxNewTokens; n > 0 {
			textCap = max(n*ragen.ReplyTextBytesPerToken, 4<<10)
		}
	}
	var out strings.Builder
	stream := &countReader{r: io.LimitReader(resp.Body, int64(o.cfg.MaxStreamBytes)+1)}
	sc := bufio.NewScanner(stream)
	sc.Buffer(make([]byte, 64<<10), min(o.cfg.MaxStreamBytes+1, 1<<20))
	over := func() bool { return stream.n > int64(o.cfg.MaxStreamBytes) }
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		if atEOF && over() && bytes.IndexByte(data, '\n') < 0 {
			return 0, nil, errStreamCap // the line the cap cut in two
		}
		return bufio.ScanLines(data, atEOF)
	})
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
			return out.String(), fmt.Errorf("openai: bad stream chunk %s: %w", quoteSnippet(payload), err)
		}
		if chunk.Error != nil {
			return out.String(), fmt.Errorf("openai: %s", strings.Trim(quoteSnippet(chunk.Error.Message), `"`))
		}
		for _, c := range chunk.Choices {
			d := c.Delta.Content + c.Text
			if out.Len()+len(d) > textCap {
				return out.String(), fmt.Errorf("openai: reply text of %d bytes or more is over the %d-byte cap", out.Len()+len(d), textCap)
			}
			if d != "" {
				out.WriteString(d)
				emit(d)
			}
		}
	}
	if over() {
		return out.String(), fmt.Errorf("openai: reply stream is over the %d-byte cap", o.cfg.MaxStreamBytes)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return out.String(), fmt.Errorf("openai: a reply stream line is over %d bytes", min(o.cfg.MaxStreamBytes+1, 1<<20))
		}
		return out.String(), fmt.Errorf("openai: stream: %w", err)
	}
	// a server that closes without [DONE] was cut off (a crash, a proxy's
	// timeout): what came may be half an answer
	return out.String(), fmt.Errorf("openai: reply stream ended before [DONE] after %d bytes of text", out.Len())
}

var errStreamCap = errors.New("stream cap")

// countReader counts the bytes read through it.
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// quoteSnippet quotes s, cut to 200 bytes.
func quoteSnippet(s string) string {
	if len(s) > 200 {
		return strconv.Quote(s[:200]) + "…"
	}
	return strconv.Quote(s)
}
