package search

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	pq "github.com/parquet-go/parquet-go"

	"ragen/env"
	"ragen/env/envtest"
)

func TestNormalizeAndF1(t *testing.T) {
	if got := Normalize("  The Eiffel-Tower, an  A-frame!"); got != "eiffeltower aframe" {
		t.Errorf("%q", got)
	}
	// Python's str.lower: "ΟΔΟΣ" → "οδος" (final sigma), "İ" → "i" + U+0307
	if r, exact := Score("ΟΔΟΣ", []string{"οδος"}, 1, 0, 0.3); r != 1 || !exact {
		t.Errorf("final sigma: %v %v", r, exact)
	}
	if r, _ := Score("İstanbul", []string{"istanbul"}, 1, 0, 0.3); r == 1 {
		t.Errorf("dotted I matched: %v", r)
	}
	if f := F1("Sydney and Melbourne", "Melbourne"); f != 0.5 {
		t.Errorf("f1 %v", f)
	}
	if f := F1("yes", "no"); f != 0 {
		t.Errorf("yes/no %v", f)
	}
	r, exact := Score("the Vienna", []string{"Berlin", "Vienna"}, 1, 0, 0.3)
	if r != 1 || !exact {
		t.Errorf("%v %v", r, exact)
	}
	r, exact = Score("University of Toronto Canada", []string{"University of Toronto"}, 1, 0, 0.3)
	if exact || r != F1("University of Toronto Canada", "University of Toronto") {
		t.Errorf("%v %v", r, exact)
	}
	if r, _ := Score("Paris", []string{"Vienna"}, 1, -0.5, 0.3); r != -0.5 {
		t.Errorf("%v", r)
	}
}

func TestFormatResults(t *testing.T) {
	docs := []Doc{{ID: "a", Content: strings.Repeat("x", 900), Score: 1.23456}, {ID: "b", Content: "y", Score: 0.5}, {ID: "c", Content: "z"}}
	got := FormatResults(docs, 2, 4000)
	want := "[Document 1] (ID: a, Score: 1.235)\n" + strings.Repeat("x", 800) + "...\n\n[Document 2] (ID: b, Score: 0.500)\ny"
	if got != want {
		t.Errorf("%q", got)
	}
	if got := FormatResults(docs, 2, 10); got != "[Document ..." {
		t.Errorf("%q", got)
	}
	if got := FormatResults(nil, 2, 10); got != "No relevant documents found for the query." {
		t.Errorf("%q", got)
	}
}

func TestBM25FindsTheDocument(t *testing.T) {
	idx, qs, err := builtin()
	if err != nil {
		t.Fatal(err)
	}
	if idx.Len() != 40 || len(qs) != 38 {
		t.Fatalf("%d docs, %d questions", idx.Len(), len(qs))
	}
	for q, id := range map[string]string{
		"capital of Austria":         "vienna",
		"largest moon Solar System":  "ganymede",
		"who discovered penicillin":  "penicillin",
		"Linus Torvalds university":  "linux",
		"Rosalind Franklin Photo 51": "rosalind-franklin",
	} {
		docs, _ := idx.Retrieve(context.Background(), q, 3)
		if len(docs) == 0 || docs[0].ID != id || docs[0].Score <= 0 {
			t.Errorf("%q: %+v", q, docs)
		}
	}
	if docs, _ := idx.Retrieve(context.Background(), "zzzz qqqq", 3); len(docs) != 0 {
		t.Errorf("nonsense query found %+v", docs)
	}
}

func newEnv(t testing.TB, m map[string]any) env.BaseEnv {
	t.Helper()
	e, err := env.New("search", m)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func step(t *testing.T, e env.BaseEnv, s string) env.StepResult {
	t.Helper()
	r, err := e.Step(context.Background(), env.Action{Text: s})
	if err != nil {
		t.Fatal(err)
	}
	if r.Observation != e.Render() {
		t.Fatalf("obs %q != render %q", r.Observation, e.Render())
	}
	return r
}

func TestEpisodeEmbedded(t *testing.T) {
	e := newEnv(t, map[string]any{"max_steps": 2, "max_search_results": 1})
	obs, _ := e.Reset(context.Background(), 38, env.ModeTrain) // 38 mod 38 = 0
	if obs != "Question: Which city is the capital of Austria?\nAvailable actions: search[<query>], finish[<answer>]" {
		t.Fatalf("%q", obs)
	}
	r := step(t, e, " search[capital of Austria] ")
	if r.Done || r.Reward != 0 || !strings.HasPrefix(e.Render(), "Search results for 'capital of Austria':\n[Document 1] (ID: vienna, Score: ") ||
		!strings.HasSuffix(e.Render(), "\n\nAvailable actions: search[<query>], finish[<answer>]") {
		t.Errorf("search: %+v", r)
	}
	r = step(t, e, "finish[Vienna]")
	if !r.Done || r.Reward != 1 || r.Info["success"] != true || e.Render() != "Your answer: Vienna. Reward: 1.00" {
		t.Errorf("finish: %+v", r)
	}

	e.Reset(context.Background(), -37, env.ModeTrain) // Python: -37 mod 38 = 1
	step(t, e, "search[Danube]")
	r = step(t, e, "search[Black Sea]")
	if !r.Done || !strings.HasSuffix(e.Render(), "\n\nMaximum search steps reached. Episode ended without an answer.") {
		t.Errorf("limit: %+v", r)
	}

	e.Reset(context.Background(), 1, env.ModeTrain)
	r = step(t, e, "I think the answer is the Black Sea.")
	if !r.Done || r.Reward != 1 || r.Info["action_is_valid"] != false || e.Render() != "Your answer (extracted): the Black Sea. Reward: 1.00" {
		t.Errorf("fallback: %+v %q", r, e.Render())
	}

	e.Reset(context.Background(), 1, env.ModeTrain)
	r = step(t, e, "  ")
	if r.Done || r.Info["action_is_valid"] != false ||
		e.Render() != "Invalid action. Use search[<query>] to search or finish[<answer>] to answer.\nAvailable actions: search[<query>], finish[<answer>]" {
		t.Errorf("empty: %+v", r)
	}
}

func TestMockMode(t *testing.T) {
	tags, err := env.DefaultTags()
	if err != nil {
		t.Fatal(err)
	}
	e, err := tags["SearchQAMock"].Build()
	if err != nil {
		t.Fatal(err)
	}
	e.Reset(context.Background(), 0, env.ModeTrain)
	step(t, e, "search[rivers]")
	// service-envs.md §1 "Mock mode result text", query inserted verbatim.
	want := "Search results for 'rivers':\n" +
		"[Document 1] (ID: mock_1, Score: 0.900)\nMock search result for query: 'rivers'. This is a placeholder document for testing purposes.\n\n" +
		"[Document 2] (ID: mock_2, Score: 0.750)\nAnother mock document related to: 'rivers'. Replace with real retrieval server for actual training.\n\n" +
		"Available actions: search[<query>], finish[<answer>]"
	if e.Render() != want {
		t.Errorf("%q", e.Render())
	}
	if _, err := tags["SearchQA"].Build(); err != nil {
		t.Errorf("SearchQA (embedded BM25): %v", err)
	}
}

// A loopback stand-in for upstream's retrieval server (scripts/retrieval/server.py).
func TestServerRetriever(t *testing.T) {
	var gotK atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health":
			w.Write([]byte(`{"status": "healthy"}`))
		case "/retrieve":
			var req struct {
				Query string `json:"query"`
				TopK  int    `json:"top_k"`
			}
			if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&req) != nil {
				http.Error(w, `{"detail": "bad request"}`, 400)
				return
			}
			gotK.Store(int64(req.TopK))
			switch req.Query {
			case "boom":
				w.WriteHeader(500)
				w.Write([]byte(`{"error": "index not loaded"}`))
			case "slow":
				time.Sleep(300 * time.Millisecond)
			case "none":
				w.Write([]byte(`{"results": []}`))
			default:
				w.Write([]byte(`{"results": [{"id": "42", "content": "Doc about ` + req.Query + `", "score": 12.3456}]}`))
			}
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	e := newEnv(t, map[string]any{"retriever": "server", "retrieval_server_url": srv.URL, "retrieval_timeout": 0.1, "max_search_results": 70})
	if h := e.(*Env).HealthErr; h != nil {
		t.Errorf("health: %v", h)
	}
	e.Reset(context.Background(), 0, env.ModeTrain)
	step(t, e, "search[rivers]")
	if gotK.Load() != 50 || !strings.HasPrefix(e.Render(), "Search results for 'rivers':\n[Document 1] (ID: 42, Score: 12.346)\nDoc about rivers\n\n") {
		t.Errorf("k=%d %q", gotK.Load(), e.Render())
	}
	for q, want := range map[string]string{
		"boom": "Retrieval server error (status 500): index not loaded",
		"slow": "Search request timed out after 0.1 seconds.",
		"none": "No relevant documents found for the query.",
	} {
		e.Reset(context.Background(), 0, env.ModeTrain)
		step(t, e, "search["+q+"]")
		if !strings.Contains(e.Render(), "\n"+want+"\n") {
			t.Errorf("%s: %q", q, e.Render())
		}
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + ln.Addr().String()
	ln.Close()
	e = newEnv(t, map[string]any{"retriever": "server", "retrieval_server_url": dead})
	if e.(*Env).HealthErr == nil {
		t.Error("health of a dead server passed")
	}
	e.Reset(context.Background(), 0, env.ModeTrain)
	step(t, e, "search[x]")
	if !strings.Contains(e.Render(), "Could not connect to retrieval server at "+dead+". Is it running?") {
		t.Errorf("%q", e.Render())
	}
}

func TestConfigErrors(t *testing.T) {
	for m, want := range map[string]map[string]any{
		`retriever "faiss"`:       {"retriever": "faiss"},
		"no such file":            {"train_path": "nope/train.parquet"},
		"must be an http(s) URL":  {"retriever": "server", "retrieval_server_url": "localhost:8000"},
		`corpus: open nope.jsonl`: {"corpus_path": "nope.jsonl"},
	} {
		_ = m
		_, err := env.New("search", want)
		if err == nil || !strings.Contains(err.Error(), m) {
			t.Errorf("%v: err = %v, want %q", want, err, m)
		}
	}
}

func BenchmarkReset(b *testing.B) {
	e, err := env.New("search", nil)
	envtest.BenchReset(b, envtest.Built{Env: e, Err: err})
}

// BenchmarkStep alternates a BM25 search over the embedded corpus and an
// answer.
func BenchmarkStep(b *testing.B) {
	e, err := env.New("search", nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	i := 0
	for b.Loop() {
		if i%2 == 0 {
			e.Reset(ctx, int64(i), env.ModeTrain)
			e.Step(ctx, env.Action{Text: "search[capital river mountain]"})
		} else {
			e.Step(ctx, env.Action{Text: "finish[Vienna]"})
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
}

func TestOracle(t *testing.T) {
	e := newEnv(t, nil)
	var o env.Oracle = e.(*Env)
	for seed := int64(0); seed < 38; seed++ {
		e.Reset(context.Background(), seed, env.ModeVal)
		acts, ok, err := o.OracleActions(1)
		if err != nil || !ok || len(acts) != 1 {
			t.Fatal(acts, ok, err)
		}
		if r := step(t, e, acts[0]); r.Reward != 1 || !r.Done {
			t.Errorf("seed %d: oracle %q scored %+v", seed, acts[0], r)
		}
	}
}

func TestParquetQuestions(t *testing.T) {
	qs, err := LoadQuestions(Config{TrainPath: "testdata/questions.parquet", MaxInstances: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 2 || qs[0].Question != "Which city is the capital of Austria?" || strings.Join(qs[1].GroundTruth, "|") != "Ian Murdock|Murdock" {
		t.Fatalf("%+v", qs)
	}
	e := newEnv(t, map[string]any{"train_path": "testdata/questions.parquet"})
	e.Reset(context.Background(), 2, env.ModeTrain)
	if r := step(t, e, "finish[Yes]"); r.Reward != 1 {
		t.Errorf("%+v", r)
	}
}

// A ground_truth list of non-strings scores each item as Python's str()
// writes it, as in JSONL; a null ground_truth is an error naming the row.
func TestParquetGroundTruthValues(t *testing.T) {
	type row struct {
		Question    string  `parquet:"question"`
		GroundTruth []int64 `parquet:"ground_truth,list,optional"`
	}
	write := func(rows []row) *bytes.Buffer {
		var buf bytes.Buffer
		w := pq.NewGenericWriter[row](&buf)
		if _, err := w.Write(rows); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return &buf
	}
	qs, err := ReadParquetQuestions(write([]row{{Question: "Year?", GroundTruth: []int64{1990, 1991}}}), 0)
	if err != nil || len(qs) != 1 || strings.Join(qs[0].GroundTruth, "|") != "1990|1991" {
		t.Fatalf("%+v %v", qs, err)
	}
	_, err = ReadParquetQuestions(write([]row{{Question: "a", GroundTruth: []int64{1}}, {Question: "b"}}), 0)
	if err == nil || !strings.Contains(err.Error(), "row 1") || !strings.Contains(err.Error(), "not None") {
		t.Errorf("null ground_truth: %v", err)
	}
}
