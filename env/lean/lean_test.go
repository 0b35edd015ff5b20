package lean

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	pq "github.com/parquet-go/parquet-go"

	"ragen/env"
	"ragen/env/envtest"
)

// standIn is a loopback stand-in for a Kimina Lean server: the same
// request and response shapes, with a toy prover. For each theorem a
// table says which tactic sequences close the goal; a known prefix leaves
// "unsolved goals"; anything else is an "unknown tactic" error; sorry is
// reported in sorries; "sleep" times out.
type standIn struct {
	srv      *httptest.Server
	calls    atomic.Int64
	lastCode atomic.Value
	failures atomic.Int64 // answer 503 this many times first
}

var proofs = map[string][]string{
	"two_add_two": {"norm_num"},
	"and_swap":    {"constructor", "exact hq", "exact hp"},
	"mul_comm'":   {"ring"},
}

func newStandIn(t testing.TB) *standIn {
	s := &standIn{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health":
			w.Write([]byte(`{"status": "ok"}`))
			return
		case "/api/check":
		default:
			http.NotFound(w, r)
			return
		}
		if s.failures.Add(-1) >= 0 {
			http.Error(w, "busy", 503)
			return
		}
		s.calls.Add(1)
		var req struct {
			Snippets []struct{ ID, Code string } `json:"snippets"`
			Timeout  int                         `json:"timeout"`
			Debug    bool                        `json:"debug"`
			Reuse    bool                        `json:"reuse"`
			Infotree string                      `json:"infotree"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Snippets) != 1 || !req.Reuse || !req.Debug || req.Infotree != "tactics" || req.Timeout <= 0 {
			http.Error(w, "bad request", 422)
			return
		}
		code := req.Snippets[0].Code
		s.lastCode.Store(code)
		res := map[string]any{"id": req.Snippets[0].ID, "time": 0.1, "error": nil}
		resp := map[string]any{"messages": []any{}, "sorries": []any{}}
		var name string
		var tactics []string
		for _, l := range strings.Split(code, "\n") {
			if strings.HasPrefix(l, "theorem ") {
				name = strings.Fields(l)[1]
			} else if name != "" && strings.HasPrefix(l, "  ") {
				tactics = append(tactics, strings.TrimSpace(l))
			}
		}
		want := proofs[name]
		pos := map[string]int{"line": 10, "column": 2}
		switch {
		case len(tactics) > 0 && tactics[len(tactics)-1] == "sleep":
			res["error"] = "Lean REPL command timed out after 30 seconds"
			delete(res, "response")
			json.NewEncoder(w).Encode(map[string]any{"results": []any{res}})
			return
		case len(tactics) > 0 && tactics[len(tactics)-1] == "sorry":
			resp["sorries"] = []any{map[string]any{"pos": pos, "goal": "⊢ goal"}}
			resp["messages"] = []any{map[string]any{"severity": "warning", "pos": pos, "endPos": pos, "data": "declaration uses 'sorry'"}}
		case len(tactics) <= len(want) && strings.Join(tactics, "|") == strings.Join(want[:len(tactics)], "|"):
			if len(tactics) < len(want) {
				resp["messages"] = []any{map[string]any{"severity": "error", "pos": map[string]int{"line": 9, "column": 40}, "endPos": map[string]int{"line": 10, "column": 5}, "data": "unsolved goals\n⊢ p"}}
			}
		default:
			resp["messages"] = []any{map[string]any{"severity": "error", "pos": pos, "data": "unknown tactic"}}
		}
		res["response"] = resp
		json.NewEncoder(w).Encode(map[string]any{"results": []any{res}})
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func newEnv(t testing.TB, s *standIn, m map[string]any) env.BaseEnv {
	t.Helper()
	cfg := map[string]any{"dataset_name_or_path": "testdata/theorems.jsonl", "server_url": s.srv.URL, "max_steps": 6}
	for k, v := range m {
		cfg[k] = v
	}
	e, err := env.New("lean", cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func resetTo(t *testing.T, e env.BaseEnv, name string) {
	t.Helper()
	for seed := int64(0); seed < 100; seed++ {
		e.Reset(context.Background(), seed, env.ModeTrain)
		if strings.Contains(e.Render(), "theorem "+name+" ") {
			return
		}
	}
	t.Fatalf("no seed reaches %s", name)
}

func step(t *testing.T, e env.BaseEnv, tac string) env.StepResult {
	t.Helper()
	r, err := e.Step(context.Background(), env.Action{Text: tac})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func TestEpisode(t *testing.T) {
	s := newStandIn(t)
	e := newEnv(t, s, nil)
	if e.Render() != "Lean environment not initialised." {
		t.Errorf("before reset: %q", e.Render())
	}
	resetTo(t, e, "and_swap")
	r := step(t, e, "constructor")
	if !near(r.Reward, 0.9) || r.Done || r.Info["action_is_effective"] != true {
		t.Errorf("unsolved goals: %+v", r)
	}
	// service-envs.md §3 "Proof text": empty preamble → exactly one blank line.
	want := "import Mathlib\nimport Aesop\nset_option maxHeartbeats 0\nopen BigOperators Real Nat Topology Rat\n\ntheorem and_swap (p q : Prop) (hp : p) (hq : q) : q ∧ p := by\n  constructor\n"
	if got := s.lastCode.Load(); got != want {
		t.Errorf("proof text %q, want %q", got, want)
	}
	r = step(t, e, "simp_all?")
	if !near(r.Reward, -1.1) || r.Done || r.Info["accepted"] != false {
		t.Errorf("rejected: %+v", r)
	}
	r = step(t, e, "exact hq")
	r = step(t, e, "sorry")
	if !near(r.Reward, -1.1) {
		t.Errorf("sorry: %+v", r)
	}
	r = step(t, e, "exact hp")
	if !near(r.Reward, 10.9) || !r.Done || r.Info["success"] != true {
		t.Errorf("success: %+v", r)
	}
	view := e.Render()
	for _, part := range []string{
		"Steps taken: 5/6 | accepted tactics: 3\n\nInformal statement:\n  If p and q both hold, then q and p hold. This is a deliberately long informal statement\n  so that the rendered view has to wrap it over more than one line of text.\n\nProof transcript:\n",
		"    6 | theorem and_swap (p q : Prop) (hp : p) (hq : q) : q ∧ p := by\n    7 |   constructor\n    8 |   exact hq\n    9 |   exact hp\n",
		"Proof log (latest 5 steps):\n  01. constructor [✓ accepted]\n  02. simp_all? [✗ rejected]\n",
		"  05. exact hp [✓ accepted]\n\nLast Lean feedback:\n  accepted: True\n  messages:\n(no Lean messages)",
	} {
		if !strings.Contains(view, part) {
			t.Errorf("render lacks %q:\n%s", part, view)
		}
	}

	resetTo(t, e, "two_add_two")
	if !strings.Contains(e.Render(), "Informal statement:\n  Show that two plus two equals four.") || !strings.Contains(e.Render(), "Steps taken: 0/6 | accepted tactics: 0") {
		t.Errorf("%s", e.Render())
	}
	r = step(t, e, "linarith")
	if !strings.Contains(e.Render(), "  accepted: False\n  messages:\n01. [ERROR 10:2] unknown tactic") {
		t.Errorf("%s", e.Render())
	}
	r = step(t, e, "")
	if !near(r.Reward, -1.1) || r.Info["action_is_valid"] != false {
		t.Errorf("empty: %+v", r)
	}
	r = step(t, e, "sleep")
	if !near(r.Reward, -2.1) || r.Info["success"] != false {
		t.Errorf("timeout: %+v", r)
	}
}

func TestMaxSteps(t *testing.T) {
	s := newStandIn(t)
	e := newEnv(t, s, map[string]any{"max_steps": 2})
	resetTo(t, e, "mul_comm'")
	step(t, e, "simp")
	r := step(t, e, "omega")
	if !r.Done || !near(r.Reward, -3.1) {
		t.Errorf("%+v", r)
	}
}

func TestUnsolvedGoalsRender(t *testing.T) {
	s := newStandIn(t)
	e := newEnv(t, s, nil)
	resetTo(t, e, "and_swap")
	step(t, e, "constructor")
	if !strings.Contains(e.Render(), "\n01. [UNSOLVED GOALS 9:40 → 10:5] unsolved goals\n⊢ p") {
		t.Errorf("%s", e.Render())
	}
}

func TestRetriesAndErrors(t *testing.T) {
	s := newStandIn(t)
	e := newEnv(t, s, map[string]any{"max_retries": 3})
	e.(*Env).checker.(*Client).wait = func(int) time.Duration { return time.Millisecond }
	resetTo(t, e, "two_add_two")
	s.failures.Store(2)
	if r := step(t, e, "norm_num"); !r.Done || r.Info["success"] != true {
		t.Errorf("after 2 retries: %+v", r)
	}
	// service-envs.md §3: all attempts failing is a server_error outcome
	// with upstream's text, scored as a rejected tactic, not an env error.
	resetTo(t, e, "two_add_two")
	s.failures.Store(3)
	r := step(t, e, "norm_num")
	want := []any{map[string]any{"severity": "error", "data": "Request failed after 3 retries"}}
	if !near(r.Reward, -1.1) || r.Done || !reflect.DeepEqual(r.Info["message_objects"], want) {
		t.Errorf("all retries failed: %+v", r)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + ln.Addr().String()
	ln.Close()
	_, err := env.New("lean", map[string]any{"dataset_name_or_path": "testdata/theorems.jsonl", "server_url": dead})
	if err == nil || !strings.Contains(err.Error(), "no Lean server at "+dead) {
		t.Errorf("dead server: %v", err)
	}
	_, err = env.New("lean", nil)
	if err == nil || !strings.Contains(err.Error(), "Failed to load dataset CoderBak/minif2f (train): dataset \"CoderBak/minif2f\" not found locally") {
		t.Errorf("default dataset: %v", err)
	}
}

func BenchmarkReset(b *testing.B) {
	s := newStandIn(b)
	envtest.BenchReset(b, envtest.Built{Env: newEnv(b, s, nil)})
}

// BenchmarkStep: one tactic checked through the loopback stand-in per step.
func BenchmarkStep(b *testing.B) {
	s := newStandIn(b)
	e := newEnv(b, s, map[string]any{"max_steps": 1 << 30})
	ctx := context.Background()
	e.Reset(ctx, 0, env.ModeTrain)
	for b.Loop() {
		if _, err := e.Step(ctx, env.Action{Text: "simp"}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
}

func TestParquet(t *testing.T) {
	ts, err := Load(Config{DatasetNameOrPath: "testdata/theorems.parquet"})
	if err != nil {
		t.Fatal(err)
	}
	// Only natural_language_statement is read (service-envs.md §3): this
	// file's informal_statement column is ignored.
	if len(ts) != 2 || ts[0].Informal != "" || ts[0].Name != "hf_0" || ts[0].Body != "theorem two_add_two : (2 : ℕ) + 2 = 4 := by sorry" ||
		ts[1].Imports != "import Mathlib" {
		t.Fatalf("%+v", ts)
	}
}

// Parquet rows are read as the JSONL rows are: a float id is named by
// Python's str() of it, a false or empty one falls back to hf_{i}, a
// struct column of the row does not stop the load.
func TestParquetValuesAsJSONL(t *testing.T) {
	type meta struct {
		Source string `parquet:"source"`
	}
	type prow struct {
		FormalStatement string  `parquet:"formal_statement"`
		ID              float64 `parquet:"id"`
		Meta            meta    `parquet:"meta"`
	}
	var buf bytes.Buffer
	w := pq.NewGenericWriter[prow](&buf)
	if _, err := w.Write([]prow{{FormalStatement: "theorem a : True := by sorry", ID: 3}, {FormalStatement: "theorem b : True := by sorry"}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ts, cols, err := readParquet(&buf)
	if err != nil {
		t.Fatal(err)
	}
	js, _, err := ReadJSONL(strings.NewReader(`{"formal_statement": "theorem a : True := by sorry", "id": 3.0, "meta": {"source": ""}}
{"formal_statement": "theorem b : True := by sorry", "id": 0.0, "meta": {"source": ""}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 2 || ts[0].Name != "3.0" || ts[1].Name != "hf_1" || !reflect.DeepEqual(ts, js) {
		t.Errorf("parquet %+v\njsonl %+v", ts, js)
	}
	if !reflect.DeepEqual(cols, []string{"formal_statement", "id", "meta"}) {
		t.Errorf("columns %v", cols)
	}
}
