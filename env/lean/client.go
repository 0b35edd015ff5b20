package lean

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"ragen/env/internal/pyjson"
)

// Result is one entry of a /api/check reply after upstream's schema
// validation (service-envs.md §3 "Reply schema"): unknown keys dropped,
// JSON objects as map[string]any, numbers as int64 or float64.
type Result struct {
	ID    string
	Time  float64
	Error *string
	// Response is the REPL's answer: an error object {"message"} or a
	// command response (env, messages, sorries, tactics, infotree); nil
	// when absent or null.
	Response map[string]any
	// Diagnostics keeps only repl_uuid, cpu_max and memory_max; nil when
	// absent or null.
	Diagnostics map[string]any
}

// Reply is a validated /api/check reply.
type Reply struct {
	Results []Result
}

// RequestError is a failed check request: every attempt failed (the text
// is "Request failed after {n} retries") or the reply broke the schema
// (the text lists the violations).
type RequestError struct{ Text string }

func (e *RequestError) Error() string { return e.Text }

// Client speaks the Kimina Lean server's API as upstream's client does:
// POST {url}/api/check with {"timeout", "debug": true, "reuse": true,
// "infotree": "tactics", "snippets": [{"id", "code"}]}, and GET
// {url}/health. The API key, when set, goes in an "Authorization: Bearer"
// header.
type Client struct {
	URL            string
	APIKey         string
	RequestTimeout float64       // Lean-side timeout in seconds (sent truncated to an int)
	HTTPTimeout    time.Duration // per HTTP attempt
	MaxRetries     int           // attempts in total on transport errors, non-2xx (3xx included) and non-JSON replies; at least one
	HTTP           *http.Client

	// wait is the pause before attempt i+1 (i from 1): 1 s, 2 s, 4 s, …
	// at most 10 s; tests shorten it.
	wait func(i int) time.Duration
}

func backoff(i int) time.Duration {
	return min(time.Duration(1<<min(i-1, 8))*time.Second, 10*time.Second)
}

// NewSnippetID is upstream's snippet id: "ragen-proof-" and 32 random
// lowercase hex digits.
func NewSnippetID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "ragen-proof-" + hex.EncodeToString(b[:])
}

// httpClient is c.HTTP (or a default client) that does not follow
// redirects: upstream's httpx client does not, and its raise_for_status
// fails a 3xx reply, so the attempt is retried like any non-2xx one.
func (c *Client) httpClient() *http.Client {
	var hc http.Client
	if c.HTTP != nil {
		hc = *c.HTTP
	}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &hc
}

// Check sends one snippet. A failed request is a *RequestError; only a
// cancelled ctx is another error.
func (c *Client) Check(ctx context.Context, id, code string) (Reply, error) {
	body, _ := json.Marshal(map[string]any{
		"timeout": int64(c.RequestTimeout), "debug": true, "reuse": true, "infotree": "tactics",
		"snippets": []map[string]string{{"id": id, "code": code}},
	})
	url := strings.TrimRight(c.URL, "/") + "/api/check"
	wait := c.wait
	if wait == nil {
		wait = backoff
	}
	// tenacity's stop_after_attempt(n) is checked only after a failed
	// attempt, so max_retries <= 0 still makes one.
	for i := 0; i < max(c.MaxRetries, 1); i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				return Reply{}, ctx.Err()
			case <-time.After(wait(i)):
			}
		}
		v, ok := c.once(ctx, url, body)
		if ctx.Err() != nil {
			return Reply{}, ctx.Err()
		}
		if !ok {
			continue
		}
		r, err := validate(v)
		if err != nil {
			return Reply{}, &RequestError{err.Error()}
		}
		return r, nil
	}
	return Reply{}, &RequestError{fmt.Sprintf("Request failed after %d retries", c.MaxRetries)}
}

// once makes one attempt; ok=false asks for a retry.
func (c *Client) once(ctx context.Context, url string, body []byte) (any, bool) {
	actx, cancel := context.WithTimeout(ctx, c.HTTPTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, false
	}
	req.Header.Set("Content-Type", "application/json")
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return nil, false
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil || resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, false
	}
	v, err := pyjson.Decode(string(b))
	if err != nil {
		return nil, false
	}
	return v, true
}

// Health checks GET {url}/health.
func (c *Client) Health(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.HTTPTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(c.URL, "/")+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return fmt.Errorf("lean: no Lean server at %s (start a Kimina Lean server, e.g. `python -m server` from project-numina/kimina-lean-server, or set server_url): %w", c.URL, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("lean: %s/health answered status %d", c.URL, resp.StatusCode)
	}
	return nil
}

// schema collects violations as "loc\n  msg" entries, in the layout of a
// pydantic ValidationError.
type schema struct{ errs []string }

func (s *schema) add(loc, msg string) { s.errs = append(s.errs, loc+"\n  "+msg) }

func (s *schema) err() error {
	if len(s.errs) == 0 {
		return nil
	}
	n := "error"
	if len(s.errs) > 1 {
		n = "errors"
	}
	return fmt.Errorf("%d validation %s for CheckResponse\n%s", len(s.errs), n, strings.Join(s.errs, "\n"))
}

// plain turns a decoded value into plain Go values.
func plain(v any) any {
	switch x := v.(type) {
	case pyjson.Int:
		var n int64
		if _, err := fmt.Sscan(string(x), &n); err == nil {
			return n
		}
		return x.Float()
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plain(e)
		}
		return out
	case *pyjson.Object:
		out := make(map[string]any, len(x.Keys))
		for _, k := range x.Keys {
			out[k] = plain(x.Vals[k])
		}
		return out
	}
	return v
}

func isInt(v any) bool { _, ok := v.(pyjson.Int); return ok }

// position validates a {line, column} object; column may be missing.
func (s *schema) position(loc string, v any) map[string]any {
	o, ok := v.(*pyjson.Object)
	if !ok {
		s.add(loc, "Input should be a valid dictionary")
		return nil
	}
	out := map[string]any{}
	for _, k := range []string{"line", "column"} {
		x, ok := o.Get(k)
		switch {
		case !ok:
			s.add(loc+"."+k, "Field required")
		case !isInt(x):
			s.add(loc+"."+k, "Input should be a valid integer")
		default:
			out[k] = plain(x)
		}
	}
	return out
}

var severities = map[string]bool{"trace": true, "info": true, "warning": true, "error": true}

// validate applies the reply schema of service-envs.md §3.
func validate(v any) (Reply, error) {
	s := &schema{}
	top, ok := v.(*pyjson.Object)
	if !ok {
		s.add("", "Input should be a valid dictionary")
		return Reply{}, s.err()
	}
	rs, ok := top.Get("results")
	list, isList := rs.([]any)
	if !ok {
		s.add("results", "Field required")
	} else if !isList {
		s.add("results", "Input should be a valid list")
	}
	var out Reply
	for i, e := range list {
		loc := fmt.Sprintf("results.%d", i)
		o, ok := e.(*pyjson.Object)
		if !ok {
			s.add(loc, "Input should be a valid dictionary")
			continue
		}
		var r Result
		if id, ok := o.Get("id"); !ok {
			s.add(loc+".id", "Field required")
		} else if str, ok := id.(string); !ok {
			s.add(loc+".id", "Input should be a valid string")
		} else {
			r.ID = str
		}
		if t, ok := o.Get("time"); ok {
			if f, ok := pyjson.Float(t); ok && t != true && t != false {
				r.Time = f
			} else {
				s.add(loc+".time", "Input should be a valid number")
			}
		}
		if er, ok := o.Get("error"); ok && er != nil {
			if str, ok := er.(string); ok {
				r.Error = &str
			} else {
				s.add(loc+".error", "Input should be a valid string")
			}
		}
		if rv, ok := o.Get("response"); ok && rv != nil {
			r.Response = s.response(loc+".response", rv)
		}
		if d, ok := o.Get("diagnostics"); ok && d != nil {
			if do, ok := d.(*pyjson.Object); ok {
				r.Diagnostics = map[string]any{}
				for _, k := range []string{"repl_uuid", "cpu_max", "memory_max"} {
					if x, ok := do.Get(k); ok {
						r.Diagnostics[k] = plain(x)
					}
				}
			} else {
				s.add(loc+".diagnostics", "Input should be a valid dictionary")
			}
		}
		if r.Error != nil && r.Response != nil {
			s.add(loc, "Value error, error and response cannot both be set")
		}
		if (r.Error == nil || *r.Error == "") && r.Response == nil {
			s.add(loc, "Value error, either error or response must be set")
		}
		out.Results = append(out.Results, r)
	}
	if err := s.err(); err != nil {
		return Reply{}, err
	}
	return out, nil
}

// response validates a REPL error object or a command response.
func (s *schema) response(loc string, v any) map[string]any {
	o, ok := v.(*pyjson.Object)
	if !ok {
		s.add(loc, "Input should be a valid dictionary")
		return nil
	}
	if m, ok := o.Get("message"); ok {
		if str, ok := m.(string); ok {
			return map[string]any{"message": str}
		}
		s.add(loc+".message", "Input should be a valid string")
		return nil
	}
	out := map[string]any{}
	for _, k := range []string{"env", "tactics", "infotree"} {
		if x, ok := o.Get(k); ok {
			out[k] = plain(x)
		}
	}
	if ms, ok := o.Get("messages"); ok && ms != nil {
		list, ok := ms.([]any)
		if !ok {
			s.add(loc+".messages", "Input should be a valid list")
		}
		msgs := []any{}
		for i, m := range list {
			mloc := fmt.Sprintf("%s.messages.%d", loc, i)
			mo, ok := m.(*pyjson.Object)
			if !ok {
				s.add(mloc, "Input should be a valid dictionary")
				continue
			}
			msg := map[string]any{}
			if sev, ok := mo.Get("severity"); !ok {
				s.add(mloc+".severity", "Field required")
			} else if str, ok := sev.(string); !ok || !severities[str] {
				s.add(mloc+".severity", "Input should be 'trace', 'info', 'warning' or 'error'")
			} else {
				msg["severity"] = str
			}
			if p, ok := mo.Get("pos"); !ok {
				s.add(mloc+".pos", "Field required")
			} else {
				msg["pos"] = s.position(mloc+".pos", p)
			}
			if p, ok := mo.Get("endPos"); ok {
				if p == nil {
					msg["endPos"] = nil
				} else {
					msg["endPos"] = s.position(mloc+".endPos", p)
				}
			}
			if d, ok := mo.Get("data"); !ok {
				s.add(mloc+".data", "Field required")
			} else if str, ok := d.(string); !ok {
				s.add(mloc+".data", "Input should be a valid string")
			} else {
				msg["data"] = str
			}
			msgs = append(msgs, msg)
		}
		out["messages"] = msgs
	}
	if ss, ok := o.Get("sorries"); ok && ss != nil {
		list, ok := ss.([]any)
		if !ok {
			s.add(loc+".sorries", "Input should be a valid list")
		}
		sorries := []any{}
		for i, x := range list {
			sloc := fmt.Sprintf("%s.sorries.%d", loc, i)
			so, ok := x.(*pyjson.Object)
			if !ok {
				s.add(sloc, "Input should be a valid dictionary")
				continue
			}
			sorry := map[string]any{}
			for _, k := range []string{"pos", "endPos"} {
				if p, ok := so.Get(k); !ok {
					s.add(sloc+"."+k, "Field required")
				} else {
					sorry[k] = s.position(sloc+"."+k, p)
				}
			}
			if g, ok := so.Get("goal"); !ok {
				s.add(sloc+".goal", "Field required")
			} else {
				sorry["goal"] = plain(g)
			}
			if p, ok := so.Get("proofState"); ok {
				sorry["proofState"] = plain(p)
			}
			sorries = append(sorries, sorry)
		}
		out["sorries"] = sorries
	}
	return out
}
