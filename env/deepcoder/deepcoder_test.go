package deepcoder

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"ragen/env"
	"ragen/env/deepcoder/sandbox"
	"ragen/env/envtest"
	"ragen/env/internal/pyjson"
)

func skipNoSandbox(t testing.TB) {
	t.Helper()
	sc := DefaultConfig().sandbox()
	if err := sc.CheckPython(); err != nil {
		t.Skip(err)
	}
	if _, err := sharedSandbox(context.Background(), sc); errors.Is(err, sandbox.ErrNoNamespaces) {
		t.Skip(err)
	} else if err != nil {
		t.Fatal(err)
	}
}

func newTestEnv(t testing.TB, mut func(*Config)) *Env {
	t.Helper()
	skipNoSandbox(t)
	cfg := DefaultConfig()
	cfg.DatasetPath = strp("testdata/problems.jsonl")
	cfg.SandboxTimeout = 10 // answers that should pass must not time out on a loaded machine
	if mut != nil {
		mut(&cfg)
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestLoadJSONLAndParquet(t *testing.T) {
	js, err := LoadFile("testdata/problems.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(js) != 4 {
		t.Fatalf("%d problems", len(js))
	}
	if js[1].FuncName != "reverseWords" || js[1].Tests[0].TestType != "functional" || js[2].FuncName != "mul" {
		t.Errorf("%+v", js[1:3])
	}
	if js[3].Question != "The first line holds n, the second n integers. Print the largest of them." || len(js[3].Tests) != 2 ||
		js[3].Tests[1].Input != "1\n-7\n" || js[3].Tests[1].TestType != "stdin_stdout" { // upstream's preprocessing spelling
		t.Errorf("inputs/outputs row: %+v", js[3])
	}
	pq, err := LoadFile("testdata/problems.parquet")
	if err != nil {
		t.Fatal(err)
	}
	if len(pq) != 3 {
		t.Fatalf("parquet: %d problems", len(pq))
	}
	for i := range pq {
		if pq[i].Question != js[i].Question || pq[i].FuncName != js[i].FuncName || pq[i].StarterCode != js[i].StarterCode ||
			len(pq[i].Tests) != len(js[i].Tests) || PyStr(pq[i].Tests[0].Output) != PyStr(js[i].Tests[0].Output) {
			t.Errorf("row %d: parquet %+v vs jsonl %+v", i, pq[i], js[i])
		}
	}
}

// service-envs.md §2 "Data" and "Row reading": the loader takes what
// upstream takes; only unreadable files are errors.
func TestRowReadingSpec(t *testing.T) {
	for _, c := range []struct {
		in       string
		question string
		funcName string
		tests    []TestCase
		stepErr  bool
	}{
		{`{"ground_truth": "[]"}`, "{'ground_truth': '[]'}", "", nil, false}, // no prompt key: py-str(row)
		{`{"question": null, "prompt": "p"}`, "", "", nil, false},            // a present null is used
		{`{"prompt": "p", "problem": "q"}`, "p", "", nil, false},
		{`{"question": "q", "ground_truth": "[{\"input\": 1, \"output\": \"1\", \"testtype\": \"stdin\"}]"}`, "q", "",
			[]TestCase{{Input: int64(1), inRaw: pyjson.Int("1"), hasRaw: true, inStr: "1", Output: "1", TestType: "stdin", want: "1", hasWant: true}}, false},
		{`{"question": "q", "ground_truth": "not json"}`, "q", "", nil, false},  // invalid JSON: []
		{`{"question": "q", "ground_truth": "{\"a\": 1}"}`, "q", "", nil, true}, // QUIRK: a non-list fails the step
		{`{"question": "q", "ground_truth": "[]", "metadata": "not json"}`, "q", "", nil, false},
		{`{"question": "q", "ground_truth": "[]", "metadata": "[1]"}`, "q", "", nil, true},
		{`{"question": "q", "ground_truth": "[]", "metadata": {"func_name": 7}}`, "q", "7", nil, false},
		{`{"question": "q", "ground_truth": "[]", "metadata": "{\"func_name\": null}"}`, "q", "", nil, false},
		// raw DeepCoder-Preview tests: upstream's preprocessing, shortest list wins.
		{`{"problem": "q", "tests": "{\"inputs\": [\"1\", \"2\"], \"outputs\": [\"3\"]}"}`, "q", "",
			[]TestCase{{Input: "1", inRaw: "1", hasRaw: true, inStr: "1", Output: "3", TestType: "stdin_stdout", want: "3", hasWant: true}}, false},
		{`{"problem": "q", "tests": {"input": "x", "output": [1, 2.0], "testtype": "functional"}}`, "q", "",
			[]TestCase{{Input: "x", inRaw: "x", hasRaw: true, inStr: "x", Output: []any{int64(1), 2.0}, TestType: "functional", want: "[1, 2.0]", hasWant: true}}, false},
		{`{"question": "q", "ground_truth": [{"output": {"b": 1, "a": 2}}]}`, "q", "",
			[]TestCase{{Output: map[string]any{"b": int64(1), "a": int64(2)}, noInput: true, want: "{'b': 1, 'a': 2}", hasWant: true}}, false},
	} {
		ps, err := ReadJSONL(strings.NewReader(c.in))
		if err != nil || len(ps) != 1 {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		p := ps[0]
		if p.Question != c.question || p.FuncName != c.funcName || !reflect.DeepEqual(p.Tests, c.tests) || (p.testsErr != nil || p.metaErr != nil) != c.stepErr {
			t.Errorf("%s:\n got %+v\nwant question %q func %q tests %+v stepErr %v", c.in, p, c.question, c.funcName, c.tests, c.stepErr)
		}
	}
	if _, err := ReadJSONL(strings.NewReader("not json")); err == nil || !strings.Contains(err.Error(), "Expecting value") {
		t.Errorf("not json: %v", err)
	}
	cfg := DefaultConfig()
	cfg.DatasetPath = strp("no/such/deepcoder")
	if _, err := Resolve(cfg); err == nil || !strings.Contains(err.Error(), "no/such/deepcoder/test.jsonl") {
		t.Errorf("err = %v", err)
	}
	// a dataset file without rows is an error (upstream's reset fails on
	// it); the fallback prompt is for dataset_path null only
	empty := filepath.Join(t.TempDir(), "test.jsonl")
	os.WriteFile(empty, nil, 0o644)
	cfg.DatasetPath = &empty
	if _, err := Resolve(cfg); err == nil || !strings.Contains(err.Error(), "has no rows") {
		t.Errorf("empty file: %v", err)
	}
	dir := filepath.Dir(empty)
	cfg.DatasetPath = &dir
	if _, err := Resolve(cfg); err == nil || !strings.Contains(err.Error(), "has no rows") {
		t.Errorf("empty split file: %v", err)
	}
}

func TestProgram(t *testing.T) {
	starter := "class Solution:\n    def f(self, x):\n        "
	if got := Program(starter, "def f(self, x):\n\n    return x"); got != starter+"\n\n    def f(self, x):\n\n        return x" {
		t.Errorf("%q", got)
	}
	if got := Program(starter, "class Solution:\n    pass"); got != "class Solution:\n    pass" {
		t.Errorf("%q", got)
	}
	if got := Program("", "print(1)"); got != "print(1)" {
		t.Errorf("%q", got)
	}
}

func TestPyStr(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{"x y", "x y"}, {[]any{"a", 1.5, nil, true}, "['a', 1.5, None, True]"}, {float64(3), "3.0"},
		{map[string]any{"k": []any{"it's"}}, `{'k': ["it's"]}`}, {int64(-10), "-10"},
		// encoding/json's UseNumber: ints exact at any size, the rest as floats
		{[]any{json.Number("123456789012345678901234"), json.Number("1e5"), json.Number("-2.50")},
			"[123456789012345678901234, 100000.0, -2.5]"},
		// repr escapes what Python does not print
		{[]any{"é\u200b\u0085"}, `['é\u200b\x85']`},
	} {
		if got := PyStr(c.v); got != c.want {
			t.Errorf("PyStr(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}

// TestPyJSON checks the argument text sent to the sandbox: Python's
// json.dumps dialect, floats kept as floats, objects in document order.
func TestPyJSON(t *testing.T) {
	obj, _ := pyjson.Decode(`{"b": [1.0, -0.0, 1e16, NaN, -Infinity, 123456789012345678901234], "a": null}`)
	for _, c := range []struct {
		v    any
		want string
	}{
		{obj, `{"b": [1.0, -0.0, 1e+16, NaN, -Infinity, 123456789012345678901234], "a": null}`},
		{map[string]any{"n": json.Number("-3"), "f": json.Number("2.50"), "s": "é\"<"}, `{"f": 2.5, "n": -3, "s": "é\"\u003c"}`},
		{[]any{int64(7), true, math.Inf(1)}, `[7, true, Infinity]`},
		{[]string{"x"}, `["x"]`},
	} {
		if got, err := pyjson.Dumps(c.v); err != nil || got != c.want {
			t.Errorf("pyjson.Dumps(%v) = %s, %v; want %s", c.v, got, err, c.want)
		}
	}
	if _, err := pyjson.Dumps(make(chan int)); err == nil || !strings.Contains(err.Error(), "cannot travel as JSON") {
		t.Errorf("chan: %v", err)
	}
	// A functional test's arguments: a list spreads, anything else is one.
	for _, c := range []struct {
		t    TestCase
		want string
	}{
		{TestCase{noInput: true}, "[]"},
		{TestCase{Input: nil}, "[null]"},
		{TestCase{Input: []any{2.0, "a"}}, `[2.0, "a"]`},
		{TestCase{Input: map[string]any{"k": int64(1)}}, `[{"k": 1}]`},
	} {
		if got, err := argsJSON(c.t); err != nil || got != c.want {
			t.Errorf("argsJSON(%+v) = %s, %v; want %s", c.t, got, err, c.want)
		}
	}
}

func step(t *testing.T, e *Env, code string) env.StepResult {
	t.Helper()
	r, err := e.Step(context.Background(), env.Action{Text: code})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// resetTo resets to the first seed that lands on problem i.
func resetTo(t *testing.T, e *Env, i int) {
	t.Helper()
	for seed := int64(0); seed < 200; seed++ {
		if _, err := e.Reset(context.Background(), seed, env.ModeTrain); err != nil {
			t.Fatal(err)
		}
		if e.Problem().Question == e.problems[i].Question {
			return
		}
	}
	t.Fatalf("no seed reaches problem %d", i)
}

func TestEpisodes(t *testing.T) {
	e := newTestEnv(t, nil)
	obs, _ := e.Reset(context.Background(), 7, env.ModeTrain)
	obs2, _ := e.Reset(context.Background(), 7, env.ModeTrain)
	if obs != obs2 || obs != e.Render() {
		t.Fatal("reset is not deterministic")
	}

	resetTo(t, e, 0)
	r := step(t, e, "a, b = map(int, input().split())\nprint(a + b)")
	if r.Reward != 1 || !r.Done || r.Observation != "Correct!" || r.Info["detail"] != "All tests passed." || r.Info["success"] != true || r.Info["passed_tests"] != 3 {
		t.Errorf("correct: %+v", r)
	}

	resetTo(t, e, 0)
	r = step(t, e, "a, b = map(int, input().split())\nprint(a + b if a != 1 else 0)")
	if r.Reward != 2.0/3 || !r.Done || r.Observation != "Incorrect." || e.Render() != "Incorrect." ||
		r.Info["detail"] != "Passed 2/3 tests. Wrong answer on test 0: got 0 expected 3" { // 0-based index
		t.Errorf("partial: %+v", r)
	}

	resetTo(t, e, 1) // starter with class Solution; the answer is an indented def
	r = step(t, e, "def reverseWords(self, s: str) -> str:\n    return ' '.join(reversed(s.split(' ')))")
	if r.Reward != 1 {
		t.Errorf("functional with starter: %+v", r)
	}

	resetTo(t, e, 2)
	r = step(t, e, "def mul(a, b):\n    raise ValueError('no')")
	if r.Reward != 0 || r.Info["detail"] != "Passed 0/2 tests. Exception on test 0: ValueError('no')" || r.Info["runnable"] != false { // py-repr
		t.Errorf("exception: %+v", r)
	}

	resetTo(t, e, 3)
	r = step(t, e, "input()\nprint(max(map(int, input().split())))")
	if r.Reward != 1 {
		t.Errorf("inputs/outputs problem: %+v", r)
	}

	slow := newTestEnv(t, func(c *Config) { c.SandboxTimeout = 1 })
	resetTo(t, slow, 0)
	r = step(t, slow, "while True: pass")
	if r.Reward != 0 || r.Info["detail"] != "Sandbox runtime error: Timeout" || r.Info["runnable"] != false || r.Info["passed_tests"] != 0 {
		t.Errorf("timeout: %+v", r)
	}

	resetTo(t, e, 0)
	r = step(t, e, "print(")
	if r.Reward != 0 || r.Info["runnable"] != false || !strings.Contains(r.Info["detail"].(string), "SyntaxError") {
		t.Errorf("syntax error: %+v", r)
	}

	r = step(t, e, "  \n ")
	if r.Done || r.Reward != 0 || r.Observation != "Invalid action." || e.Render() != e.problems[0].Question+"\n\nFeedback: Empty action" ||
		!reflect.DeepEqual(r.Info, env.Info{"action_is_effective": false, "action_is_valid": false, "success": false, "error": "Empty action"}) {
		t.Errorf("blank: %+v", r)
	}
}

func TestFeedbackWhenNotDone(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.MaxSteps = 2 })
	resetTo(t, e, 0)
	r := step(t, e, "print(3)")
	want := e.problems[0].Question + "\n\nFeedback: Passed 1/3 tests. Wrong answer on test 1: got 3 expected 6"
	if r.Done || e.Render() != want {
		t.Errorf("render %q, want %q (%+v)", e.Render(), want, r)
	}
	r = step(t, e, "print(3)")
	if !r.Done {
		t.Error("not done after max_steps")
	}
}

func TestFallbackPrompt(t *testing.T) {
	skipNoSandbox(t)
	e, err := env.New("deepcoder", map[string]any{"max_steps": 1})
	if err != nil {
		t.Fatal(err)
	}
	obs, _ := e.Reset(context.Background(), 3, env.ModeVal)
	if obs != FallbackPrompt {
		t.Fatalf("%q", obs)
	}
	r, _ := e.Step(context.Background(), env.Action{Text: "def add(a, b):\n    return a + b"})
	if r.Reward != 0 || !r.Done || r.Info["detail"] != "No tests available." || r.Info["success"] != false || r.Info["runnable"] != false {
		t.Errorf("%+v", r)
	}
}

func TestConfigErrors(t *testing.T) {
	_, err := env.New("deepcoder", map[string]any{"max_step": 1, "sandbox_mode": "none"})
	if err == nil || !strings.Contains(err.Error(), `"max_step"`) {
		t.Errorf("%v", err)
	}
	_, err = env.New("deepcoder", map[string]any{"sandbox_mode": "none"})
	if err == nil || !strings.Contains(err.Error(), "unsafe_rlimits_only") {
		t.Errorf("%v", err)
	}
	_, err = env.New("deepcoder", map[string]any{"python_path": "/no/python3"})
	if err == nil || !strings.Contains(err.Error(), "/no/python3") {
		t.Errorf("%v", err)
	}
}

func TestTagBuilds(t *testing.T) {
	skipNoSandbox(t)
	tags, err := env.DefaultTags()
	if err != nil {
		t.Fatal(err)
	}
	e, err := tags["DeepCoder"].Build()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Reset(context.Background(), 1, env.ModeTrain); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkReset(b *testing.B) {
	envtest.BenchReset(b, envtest.Build(newTestEnv(b, nil), nil))
}

// BenchmarkStep runs one correct answer (3 stdin tests) per step.
func BenchmarkStep(b *testing.B) {
	e := newTestEnv(b, nil)
	ctx := context.Background()
	for b.Loop() {
		e.set(0)
		if r, err := e.Step(ctx, env.Action{Text: "a, b = map(int, input().split())\nprint(a + b)"}); err != nil || r.Reward != 1 {
			b.Fatal(r, err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
}

func TestMain(m *testing.M) { os.Exit(m.Run()) }

func TestOracleSolvesAll(t *testing.T) {
	e := newTestEnv(t, nil)
	for i := range e.problems {
		e.set(i)
		acts, ok, err := e.OracleActions(1)
		if err != nil || !ok {
			t.Fatalf("problem %d: no oracle", i)
		}
		if r := step(t, e, acts[0]); r.Reward != 1 {
			t.Errorf("problem %d: %+v", i, r)
		}
	}
}

// Hostile answers are stopped and scored as failed (the sandbox's own tests
// check the host is unharmed).
func TestHostileAnswersScoreZero(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.SandboxTimeout = 1 })
	for name, code := range map[string]string{
		"fork bomb":       "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass",
		"huge allocation": "x = bytearray(8 << 30)",
		"huge output":     "while True:\n    print('3' * 100000)",
		"read host file":  "print(open('/etc/passwd').read())",
		"socket":          "import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=1)\nprint(3)",
		"kill parent":     "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nos.kill(1, signal.SIGKILL)",
		"sleep":           "import time\ntime.sleep(30)\nprint(3)",
	} {
		resetTo(t, e, 0)
		r := step(t, e, code)
		if r.Reward != 0 || r.Info["success"] != false || !r.Done {
			t.Errorf("%s: %+v", name, r)
		}
	}
}
