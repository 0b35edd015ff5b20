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
	"strings"
	"time"
	"unicode"

	"ragen/env"
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
		return "No relevant documents found for the query."
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

// ServerClient speaks upstream's retrieval-server API
// (scripts/retrieval/server.py): POST {url}/retrieve with
// {"query": q, "top_k": k} → {"results": [{"id", "content", "score"}]};
// GET {url}/health.
type ServerClient struct {
	URL     string
	Timeout time.Duration
	HTTP    *http.Client
}

// Health checks GET {url}/health.
func (c *ServerClient) Health(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(c.URL, "/")+"/health", nil)
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
	return http.DefaultClient
}

// ServerError is a non-200 reply of the retrieval server.
type ServerError struct {
	Status int
	Msg    string
}

func (e *ServerError) Error() string {
	s := fmt.Sprintf("Retrieval server error (status %d)", e.Status)
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	return s
}

// Retrieve asks the server for min(k, 50) documents.
func (c *ServerClient) Retrieve(ctx context.Context, query string, k int) ([]Doc, error) {
	body, _ := json.Marshal(map[string]any{"query": query, "top_k": min(k, 50)})
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(c.URL, "/")+"/retrieve", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.client().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error  string `json:"error"`
			Detail string `json:"detail"`
		}
		_ = json.Unmarshal(b, &e)
		return nil, &ServerError{Status: resp.StatusCode, Msg: e.Error + e.Detail}
	}
	var out struct {
		Results []Doc `json:"results"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("bad reply: %v", err)
	}
	return out.Results, nil
}

// errorText turns a retrieval error into upstream's observation text.
func errorText(err error, url string, timeout float64) string {
	var se *ServerError
	var ne net.Error
	var oe *net.OpError
	switch {
	case errors.As(err, &se):
		return se.Error()
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return fmt.Sprintf("Search request timed out after %s seconds.", env.PyFloatRepr(timeout))
	case errors.As(err, &oe) && oe.Op == "dial":
		return fmt.Sprintf("Could not connect to retrieval server at %s. Is it running?", url)
	}
	return fmt.Sprintf("Search error: %v", err)
}

// Mock is upstream's mock mode: two fixed documents mentioning the query.
type Mock struct{}

// Retrieve returns the two mock documents.
func (Mock) Retrieve(_ context.Context, q string, _ int) ([]Doc, error) {
	return []Doc{
		{ID: "mock_doc_1", Score: 0.95, Content: fmt.Sprintf("This is a mock document about %s. It contains relevant information for testing purposes.", q)},
		{ID: "mock_doc_2", Score: 0.85, Content: fmt.Sprintf("Another mock result for the query '%s'. Mock mode returns fixed documents without a retrieval server.", q)},
	}, nil
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
