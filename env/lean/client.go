package lean

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Pos is a Lean source position.
type Pos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
}

// Message is one Lean message as the REPL reports it.
type Message struct {
	Severity string `json:"severity"` // "error", "warning", "info"
	Pos      *Pos   `json:"pos,omitempty"`
	EndPos   *Pos   `json:"endPos,omitempty"`
	Data     string `json:"data"`
}

// Response is the REPL response of one snippet.
type Response struct {
	Messages []Message        `json:"messages"`
	Sorries  []map[string]any `json:"sorries"`
	Infotree any              `json:"infotree,omitempty"`
}

// Result is one entry of a /api/check reply.
type Result struct {
	ID       string    `json:"id"`
	Time     float64   `json:"time"`
	Error    *string   `json:"error"`
	Response *Response `json:"response"`
}

// Client speaks the Kimina Lean server's API: POST {url}/api/check with
// {"snippets": [{"id", "code"}], "timeout", "debug", "reuse", "infotree"}
// → {"results": [{"id", "time", "error", "response": {"messages",
// "sorries", ...}}]}, and GET {url}/health. The API key, when set, goes in
// an "Authorization: Bearer" header.
type Client struct {
	URL            string
	APIKey         string
	RequestTimeout float64       // Lean-side timeout in seconds (the payload's "timeout")
	HTTPTimeout    time.Duration // per HTTP attempt
	MaxRetries     int           // attempts on connection errors and 5xx
	HTTP           *http.Client
}

// ErrTimeout marks a check that timed out (Lean-side or HTTP).
var ErrTimeout = errors.New("lean: check timed out")

// Check verifies one piece of Lean code.
func (c *Client) Check(ctx context.Context, id, code string) (Result, error) {
	body, _ := json.Marshal(map[string]any{
		"snippets": []map[string]string{{"id": id, "code": code}},
		"timeout":  c.RequestTimeout, "debug": false, "reuse": true, "infotree": "tactics",
	})
	url := strings.TrimRight(c.URL, "/") + "/api/check"
	var lastErr error
	attempts := max(c.MaxRetries, 1)
	for i := 0; i < attempts; i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				return Result{}, ctx.Err()
			case <-time.After(time.Duration(1<<min(i-1, 3)) * 100 * time.Millisecond):
			}
		}
		res, retry, err := c.once(ctx, url, body)
		if err == nil {
			return res, nil
		}
		lastErr = err
		if !retry || ctx.Err() != nil {
			break
		}
	}
	if ctx.Err() != nil {
		return Result{}, ctx.Err()
	}
	return Result{}, lastErr
}

func (c *Client) once(ctx context.Context, url string, body []byte) (Result, bool, error) {
	actx, cancel := context.WithTimeout(ctx, c.HTTPTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return Result{}, false, fmt.Errorf("lean: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		if actx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
			return Result{}, false, fmt.Errorf("%w: no reply from %s within %v", ErrTimeout, url, c.HTTPTimeout)
		}
		return Result{}, true, fmt.Errorf("lean: cannot reach the Lean server at %s (start a Kimina Lean server there, or set server_url): %w", c.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return Result{}, true, fmt.Errorf("lean: reading the reply of %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		msg := strings.TrimSpace(string(b))
		if len(msg) > 300 {
			msg = msg[:300] + "..."
		}
		return Result{}, resp.StatusCode >= 500, fmt.Errorf("lean: %s answered status %d: %s", url, resp.StatusCode, msg)
	}
	var out struct {
		Results []Result `json:"results"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return Result{}, false, fmt.Errorf("lean: bad reply from %s: %v", url, err)
	}
	if len(out.Results) != 1 {
		return Result{}, false, fmt.Errorf("lean: %s returned %d results for 1 snippet", url, len(out.Results))
	}
	r := out.Results[0]
	if r.Error != nil && isTimeout(*r.Error) {
		return r, false, fmt.Errorf("%w: %s", ErrTimeout, *r.Error)
	}
	if r.Error != nil && r.Response == nil {
		// The server could not run the snippet at all (REPL crash, ...):
		// reported to the model as an error message.
		r.Response = &Response{Messages: []Message{{Severity: "error", Data: *r.Error}}}
	}
	if r.Response == nil {
		return Result{}, false, fmt.Errorf("lean: %s returned a result with neither response nor error", url)
	}
	return r, false, nil
}

func isTimeout(s string) bool {
	s = strings.ToLower(s)
	return strings.Contains(s, "timed out") || strings.Contains(s, "timeout")
}

// Health checks GET {url}/health.
func (c *Client) Health(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.HTTPTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(c.URL, "/")+"/health", nil)
	if err != nil {
		return err
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("lean: no Lean server at %s (start a Kimina Lean server, e.g. `python -m server` from project-numina/kimina-lean-server, or set server_url): %w", c.URL, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("lean: %s/health answered status %d", c.URL, resp.StatusCode)
	}
	return nil
}
