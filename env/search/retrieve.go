package search

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"ragen/env"
	"ragen/env/internal/pyjson"
)

// Doc is one retrieved document.
type Doc struct {
	ID      string  `json:"id"`
	Content string  `json:"content"`
	Score   float64 `json:"score"`
}

// Retriever finds the documents for a query. Errors are turned into
// observation text by the env (upstream shows them to the model).
type Retriever interface {
	Retrieve(ctx context.Context, query string, k int) ([]Doc, error)
}

// FormatResults renders documents as upstream: the first n as
// "[Document i] (ID: id, Score: s.sss)\ncontent" (content cut to 800
// characters + "..."), joined by blank lines, the whole cut to maxChars +
// "...".
func FormatResults(docs []Doc, n, maxChars int) string {
	if len(docs) == 0 {
		return noDocs
	}
	parts := make([]string, 0, min(n, len(docs)))
	for i, d := range docs {
		if i >= n {
			break
		}
		c := d.Content
		if r := []rune(c); len(r) > 800 {
			c = string(r[:800]) + "..."
		}
		parts = append(parts, fmt.Sprintf("[Document %d] (ID: %s, Score: %.3f)\n%s", i+1, d.ID, d.Score, c))
	}
	out := strings.Join(parts, "\n\n")
	if r := []rune(out); len(r) > maxChars {
		out = string(r[:maxChars]) + "..."
	}
	return out
}

// Searcher is a Retriever that produces the whole result text itself, as
// upstream's retrieval client and mock mode do (service-envs.md §1): the
// env shows the text as is. maxResults is max_search_results, maxChars
// max_total_chars.
type Searcher interface {
	SearchText(ctx context.Context, query string, maxResults, maxChars int) (string, error)
}

// pyFixed is Python's format(x, ".{prec}f"): correctly rounded digits,
// and inf/-inf/nan spelled as Python does.
func pyFixed(x float64, prec int) string {
	switch {
	case math.IsNaN(x):
		return "nan"
	case math.IsInf(x, 0):
		return env.PyFloatRepr(x)
	}
	return strconv.FormatFloat(x, 'f', prec, 64)
}

// ServerClient speaks upstream's retrieval-server API
// (scripts/retrieval/server.py): POST {url}/retrieve with
// {"query": q, "top_k": k} → {"results": [{"id", "content", "score"}]};
// GET {url}/health. Trailing slashes of URL are dropped.
//
// Timeout bounds the connection and each read and write on it, as the
// timeout of Python's requests does (a reply that keeps arriving within
// Timeout of its last bytes is waited for, up to 10 Timeouts in all). HTTP,
// when set, replaces that client and its timeouts; Timeout then bounds the
// whole request.
type ServerClient struct {
	URL     string
	Timeout time.Duration // retrieval_timeout
	HTTP    *http.Client

	// TimeoutIsInt: retrieval_timeout was a Python int, so the timeout
	// message prints it without ".0".
	TimeoutIsInt bool
}

func (c *ServerClient) base() string { return strings.TrimRight(c.URL, "/") }

// Health checks GET {url}/health with upstream's 5 s timeout.
func (c *ServerClient) Health(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base()+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := c.client().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

func (c *ServerClient) client() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return timeoutClient(c.Timeout)
}

// timeoutClient is an HTTP client whose connect, and every read and write
// on the connection, each have d: the socket timeout of Python's
// requests. One connection per request, as requests.post makes.
func timeoutClient(d time.Duration) *http.Client {
	dialer := &net.Dialer{Timeout: d}
	return &http.Client{Transport: &http.Transport{
		Proxy:             http.ProxyFromEnvironment,
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &deadlineConn{Conn: conn, d: d}, nil
		},
	}}
}

// deadlineConn gives each Read and Write its own deadline d from its start.
type deadlineConn struct {
	net.Conn
	d time.Duration
}

func (c *deadlineConn) Read(b []byte) (int, error) {
	if err := c.Conn.SetReadDeadline(time.Now().Add(c.d)); err != nil {
		return 0, err
	}
	return c.Conn.Read(b)
}

func (c *deadlineConn) Write(b []byte) (int, error) {
	if err := c.Conn.SetWriteDeadline(time.Now().Add(c.d)); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}

// bodyError is a failure while reading a reply's body, which requests
// raises as a ConnectionError (a read timeout there included): upstream's
// "Could not connect" text.
type bodyError struct{ err error }

func (e *bodyError) Error() string { return "reading the reply: " + e.err.Error() }

// ServerError is a reply of the retrieval server with status >= 400.
type ServerError struct {
	Status int
	Msg    string // py-str of the body's "error", "Unknown error" when absent
	HasMsg bool   // the body was a JSON object
}

func (e *ServerError) Error() string {
	s := fmt.Sprintf("Retrieval server error (status %d)", e.Status)
	if e.HasMsg {
		s += ": " + e.Msg
	}
	return s
}

// searchError is a failure upstream reports as "Search error: {msg}".
type searchError struct{ msg string }

func (e *searchError) Error() string { return "Search error: " + e.msg }

// post sends the retrieve request and returns the decoded reply.
func (c *ServerClient) post(ctx context.Context, query string, k int) (any, error) {
	body, _ := json.Marshal(map[string]any{"query": query, "top_k": min(k, 50)})
	limit := c.Timeout
	if c.HTTP == nil {
		limit = 10 * c.Timeout // the per-read deadlines apply; this only ends a reply that never finishes
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base()+"/retrieve", bytes.NewReader(body))
	if err != nil {
		return nil, &searchError{err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.client().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil, &bodyError{err}
		}
		return nil, &searchError{err.Error()}
	}
	if resp.StatusCode >= 400 {
		se := &ServerError{Status: resp.StatusCode}
		if v, err := pyjson.Decode(string(b)); err == nil {
			if o, ok := v.(*pyjson.Object); ok {
				se.HasMsg, se.Msg = true, "Unknown error"
				if e, ok := o.Get("error"); ok {
					se.Msg = pyjson.Str(e)
				}
			}
		}
		return nil, se
	}
	v, err := pyjson.Decode(string(b))
	if err != nil {
		return nil, &searchError{err.Error()}
	}
	return v, nil
}

// Retrieve asks the server for min(k, 50) documents and returns the first
// k (ids and contents as Python's str() prints them).
func (c *ServerClient) Retrieve(ctx context.Context, query string, k int) ([]Doc, error) {
	v, err := c.post(ctx, query, k)
	if err != nil {
		return nil, err
	}
	entries, err := resultEntries(v, k)
	if err != nil {
		return nil, err
	}
	docs := make([]Doc, len(entries))
	for i, e := range entries {
		id, content, score, err := entryFields(e, i+1)
		if err != nil {
			return nil, err
		}
		f, ok := pyjson.Float(score)
		if !ok {
			return nil, &searchError{formatError(score)}
		}
		docs[i] = Doc{ID: id, Content: pyjson.Str(content), Score: f}
	}
	return docs, nil
}

// SearchText is upstream's _search: the request, then the reply as
// result text or one of upstream's error texts (service-envs.md §1). Only
// a cancelled ctx is a Go error.
func (c *ServerClient) SearchText(ctx context.Context, query string, maxResults, maxChars int) (string, error) {
	v, err := c.post(ctx, query, maxResults)
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return errorText(err, c.base(), c.timeoutText()), nil
	}
	entries, err := resultEntries(v, maxResults)
	if err != nil {
		return err.Error(), nil
	}
	if entries == nil {
		return noDocs, nil
	}
	parts := make([]string, 0, len(entries))
	for i, e := range entries {
		id, content, score, err := entryFields(e, i+1)
		if err != nil {
			return err.Error(), nil
		}
		var text string
		switch x := content.(type) {
		case string:
			text = x
			if r := []rune(x); len(r) > 800 {
				text = string(r[:800]) + "..."
			}
		case []any:
			text = pyjson.Str(x)
			if len(x) > 800 {
				return "Search error: can only concatenate list (not \"str\") to list", nil
			}
		case *pyjson.Object:
			if len(x.Keys) > 800 {
				return "Search error: unhashable type: 'slice'", nil
			}
			text = pyjson.Str(x)
		default:
			return fmt.Sprintf("Search error: object of type '%s' has no len()", pyjson.TypeName(content)), nil
		}
		f, ok := pyjson.Float(score)
		if !ok {
			return "Search error: " + formatError(score), nil
		}
		parts = append(parts, fmt.Sprintf("[Document %d] (ID: %s, Score: %s)\n%s", i+1, id, pyFixed(f, 3), text))
	}
	out := strings.Join(parts, "\n\n")
	if r := []rune(out); len(r) > maxChars {
		out = string(r[:maxChars]) + "..."
	}
	return out, nil
}

const noDocs = "No relevant documents found for the query."

// resultEntries is body.get("results", [])[:k]: nil when the results are
// falsy, a searchError where Python raises.
func resultEntries(v any, k int) ([]any, error) {
	o, ok := v.(*pyjson.Object)
	if !ok {
		return nil, &searchError{fmt.Sprintf("'%s' object has no attribute 'get'", pyjson.TypeName(v))}
	}
	r, ok := o.Get("results")
	if !ok || !pyjson.Truthy(r) {
		return nil, nil
	}
	switch x := r.(type) {
	case []any:
		return x[:min(k, len(x))], nil
	case string: // slicing a str gives characters, which have no .get
		return nil, &searchError{"'str' object has no attribute 'get'"}
	case *pyjson.Object:
		return nil, &searchError{"unhashable type: 'slice'"}
	}
	return nil, &searchError{fmt.Sprintf("'%s' object is not subscriptable", pyjson.TypeName(r))}
}

// entryFields reads one result entry: py-str id (doc_{i} when absent),
// content ("" when absent) and score (0.0 when absent).
func entryFields(e any, i int) (id string, content, score any, err error) {
	o, ok := e.(*pyjson.Object)
	if !ok {
		return "", nil, nil, &searchError{fmt.Sprintf("'%s' object has no attribute 'get'", pyjson.TypeName(e))}
	}
	id = fmt.Sprintf("doc_%d", i)
	if v, ok := o.Get("id"); ok {
		id = pyjson.Str(v)
	}
	content, score = "", 0.0
	if v, ok := o.Get("content"); ok {
		content = v
	}
	if v, ok := o.Get("score"); ok {
		score = v
	}
	return id, content, score, nil
}

// formatError is Python's message for format(v, ".3f") of a non-number.
func formatError(v any) string {
	if _, ok := v.(string); ok {
		return "Unknown format code 'f' for object of type 'str'"
	}
	return fmt.Sprintf("unsupported format string passed to %s.__format__", pyjson.TypeName(v))
}

// errorText turns a request failure into upstream's observation text:
// timeouts (connect or read) first, then other transport failures as
// "Could not connect", then server and parse errors.
func errorText(err error, base string, timeout string) string {
	var se *ServerError
	var pe *searchError
	var be *bodyError
	var ne net.Error
	switch {
	case errors.As(err, &se):
		return se.Error()
	case errors.As(err, &pe):
		return pe.Error()
	case errors.As(err, &be):
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return fmt.Sprintf("Search request timed out after %s seconds.", timeout)
	}
	return fmt.Sprintf("Could not connect to retrieval server at %s. Is it running?", base)
}

// timeoutText is py-str(retrieval_timeout).
func (c *ServerClient) timeoutText() string {
	if sec := c.Timeout.Seconds(); c.TimeoutIsInt && sec == math.Trunc(sec) {
		return strconv.FormatInt(int64(sec), 10)
	}
	return env.PyFloatRepr(c.Timeout.Seconds())
}

// Mock is upstream's mock mode: two fixed documents mentioning the query.
type Mock struct{}

func mockDocs(q string) []Doc {
	return []Doc{
		{ID: "mock_1", Score: 0.9, Content: fmt.Sprintf("Mock search result for query: '%s'. This is a placeholder document for testing purposes.", q)},
		{ID: "mock_2", Score: 0.75, Content: fmt.Sprintf("Another mock document related to: '%s'. Replace with real retrieval server for actual training.", q)},
	}
}

// Retrieve returns the two mock documents.
func (Mock) Retrieve(_ context.Context, q string, _ int) ([]Doc, error) { return mockDocs(q), nil }

// SearchText is upstream's mock text: both documents whatever the limits,
// the query never cut.
func (Mock) SearchText(_ context.Context, q string, _, _ int) (string, error) {
	docs := mockDocs(q)
	parts := make([]string, len(docs))
	for i, d := range docs {
		parts[i] = fmt.Sprintf("[Document %d] (ID: %s, Score: %.3f)\n%s", i+1, d.ID, d.Score, d.Content)
	}
	return strings.Join(parts, "\n\n"), nil
}

// BM25 is an in-memory Okapi BM25 index over a JSONL corpus, with
// Lucene's (Pyserini's) defaults k1 = 0.9, b = 0.4. Tokens are lowercase
// runs of letters and digits.
type BM25 struct {
	K1, B    float64
	docs     []Doc
	postings map[string][]posting
	lens     []float64
	avgLen   float64
}

type posting struct {
	doc int
	tf  float64
}

func tokens(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// NewBM25 indexes docs (their Content).
func NewBM25(docs []Doc) *BM25 {
	x := &BM25{K1: 0.9, B: 0.4, docs: docs, postings: map[string][]posting{}, lens: make([]float64, len(docs))}
	total := 0.0
	for i, d := range docs {
		toks := tokens(d.Content)
		x.lens[i] = float64(len(toks))
		total += x.lens[i]
		tf := map[string]int{}
		for _, t := range toks {
			tf[t]++
		}
		for t, n := range tf {
			x.postings[t] = append(x.postings[t], posting{i, float64(n)})
		}
	}
	if len(docs) > 0 {
		x.avgLen = total / float64(len(docs))
	}
	return x
}

// Len is the number of documents.
func (x *BM25) Len() int { return len(x.docs) }

// Retrieve returns the k best-scoring documents with a positive score
// (ties by corpus order).
func (x *BM25) Retrieve(ctx context.Context, q string, k int) ([]Doc, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	scores := map[int]float64{}
	seen := map[string]bool{}
	n := float64(len(x.docs))
	for _, t := range tokens(q) {
		if seen[t] {
			continue
		}
		seen[t] = true
		ps := x.postings[t]
		if len(ps) == 0 {
			continue
		}
		idf := math.Log(1 + (n-float64(len(ps))+0.5)/(float64(len(ps))+0.5))
		for _, p := range ps {
			norm := p.tf + x.K1*(1-x.B+x.B*x.lens[p.doc]/x.avgLen)
			scores[p.doc] += idf * p.tf * (x.K1 + 1) / norm
		}
	}
	ids := make([]int, 0, len(scores))
	for i := range scores {
		ids = append(ids, i)
	}
	sort.Slice(ids, func(a, b int) bool {
		if scores[ids[a]] != scores[ids[b]] {
			return scores[ids[a]] > scores[ids[b]]
		}
		return ids[a] < ids[b]
	})
	if len(ids) > k {
		ids = ids[:k]
	}
	out := make([]Doc, len(ids))
	for i, id := range ids {
		out[i] = x.docs[id]
		out[i].Score = scores[id]
	}
	return out, nil
}

// ReadCorpus reads a JSONL corpus: one object per line with "id" (string
// or number) and "contents" (upstream's Wikipedia dump layout) or
// "content"/"text", optionally "title".
func ReadCorpus(r io.Reader) ([]Doc, error) {
	var docs []Doc
	err := env.ForEachLine(r, 64<<20, func(b []byte) error {
		var row struct {
			ID       json.RawMessage `json:"id"`
			Contents *string         `json:"contents"`
			Content  *string         `json:"content"`
			Text     *string         `json:"text"`
			Title    string          `json:"title"`
		}
		if err := json.Unmarshal(b, &row); err != nil {
			return err
		}
		d := Doc{ID: strings.Trim(string(row.ID), `"`)}
		switch {
		case row.Contents != nil:
			d.Content = *row.Contents
		case row.Content != nil:
			d.Content = *row.Content
		case row.Text != nil:
			d.Content = *row.Text
			if row.Title != "" {
				d.Content = row.Title + "\n" + d.Content
			}
		default:
			return errors.New("no contents, content or text field")
		}
		if d.ID == "" || d.ID == "null" {
			d.ID = fmt.Sprint(len(docs))
		}
		docs = append(docs, d)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("search: corpus %w", err)
	}
	return docs, nil
}

// LoadCorpus reads a JSONL corpus file.
func LoadCorpus(path string) ([]Doc, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("search: corpus: %w", err)
	}
	defer f.Close()
	docs, err := ReadCorpus(f)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("search: corpus %s is empty", path)
	}
	return docs, nil
}
