package deepcoder

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	pq "github.com/parquet-go/parquet-go"

	"ragen/env"
)

// service-envs.md §2 "Program text".
func TestProgramSpec(t *testing.T) {
	cls := "class Solution:\n    def f(self, x):\n        pass"
	for _, c := range []struct{ starter, code, want string }{
		{"\n\nimport os\n", "\nprint(1)\n\n", "import os\n\nprint(1)"},                        // only LF stripped
		{" \nA\r\n", "\r\nB \n", " \nA\r\n\n\r\nB "},                                          // spaces and CR kept
		{cls, "class Solution:\n    pass", "class Solution:\n    pass"},                       // code's own class drops the starter
		{cls, "def g(self):\n  \n\treturn 1", cls + "\n\n    def g(self):\n\n    \treturn 1"}, // blank line → ""
		{cls, " def g(self): pass", cls + "\n\n def g(self): pass"},                           // "def " must be at column 0
		{"def helper(): pass", "def g(): pass", "def helper(): pass\n\ndef g(): pass"},        // no class Solution: plain join
		{"", "", ""},
		{"x = 1", "\n\n", "x = 1"},
	} {
		if got := Program(c.starter, c.code); got != c.want {
			t.Errorf("Program(%q, %q) = %q, want %q", c.starter, c.code, got, c.want)
		}
	}
}

// service-envs.md §2 sandbox: test preparation, the child run's
// semantics and the outcome texts, run in the real sandbox.
func TestSandboxSpec(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.MaxSteps = 100 })
	stdin := func(in, out any) TestCase { return TestCase{Input: in, Output: out, TestType: "stdin"} }
	fn := func(in, out any) TestCase { return TestCase{Input: in, Output: out, TestType: "functional"} }
	for _, c := range []struct {
		name     string
		p        Problem
		code     string
		passed   int
		runnable bool
		detail   string
	}{
		{"expressions as args", Problem{FuncName: "f", Tests: []TestCase{fn("1+2\n  [1, 2]", "(3, [1, 2])")}},
			"def f(a, b): return (a, b)", 1, true, "All tests passed."},
		{"JSON literal quirk: the whole text is one arg", Problem{FuncName: "f", Tests: []TestCase{fn("true\n1", "true\n1")}},
			"def f(*a): return a[0] if len(a) == 1 else 'many'", 1, true, "All tests passed."},
		{"list input: one arg per element", Problem{FuncName: "f", Tests: []TestCase{fn([]any{int64(1), "a"}, "1a")}},
			"def f(x, y): return str(x) + y", 1, true, "All tests passed."},
		{"str compare: 3 vs \"3\" passes, 2.0 vs 2 fails", Problem{FuncName: "f", Tests: []TestCase{fn("3", "3"), fn("2.0", int64(2))}},
			"def f(x): return x", 1, true, "Passed 1/2 tests. Wrong answer on test 1: got 2.0 expected 2"},
		{"functional without func_name is stdin", Problem{Tests: []TestCase{fn("5", "5")}},
			"print(input())", 1, true, "All tests passed."},
		{"other testtype is stdin", Problem{FuncName: "f", Tests: []TestCase{{Input: "5", Output: int64(5), TestType: "Functional"}}},
			"print(input())", 1, true, "All tests passed."},
		{"stdin list input is its repr", Problem{Tests: []TestCase{stdin([]any{"1 2", "3"}, "['1 2', '3']")}},
			"print(input())", 1, true, "All tests passed."},
		{"__main__ guard runs for stdin", Problem{Tests: []TestCase{stdin("", "yes")}},
			"if __name__ == '__main__':\n    print('yes')", 1, true, "All tests passed."},
		{"__main__ guard does not run for functional", Problem{FuncName: "f", Tests: []TestCase{fn("1", "1")}},
			"def f(x): return x\nif __name__ == '__main__':\n    raise SystemExit(5)", 1, true, "All tests passed."},
		{"function not found", Problem{FuncName: "f", Tests: []TestCase{fn("1", "1")}},
			"def g(x): return x", 0, false, "Passed 0/1 tests. Exception on test 0: Function not found"},
		{"missing Solution method crashes", Problem{FuncName: "f", Tests: []TestCase{fn("1", "1")}},
			"class Solution:\n    pass", 0, false, "Sandbox runtime error: Traceback (most recent call last):"},
		{"stdin exception is py-repr", Problem{Tests: []TestCase{stdin("", "x")}},
			"raise ValueError(\"it's\")", 0, false, "Passed 0/1 tests. Runtime error on test 0: ValueError(\"it's\")"},
		{"EOF", Problem{Tests: []TestCase{stdin("", "x")}},
			"input()", 0, false, "Passed 0/1 tests. Runtime error on test 0: EOFError('EOF when reading a line')"},
		{"stdin is a StringIO", Problem{Tests: []TestCase{stdin("1", "1")}},
			"import sys\nsys.stdin.buffer", 0, false, "Passed 0/1 tests. Runtime error on test 0: AttributeError(\"'_io.StringIO' object has no attribute 'buffer'\")"},
		{"stdin wrong answer is stripped", Problem{Tests: []TestCase{stdin("", " 6 \n")}},
			"print(' 3 ')", 0, true, "Passed 0/1 tests. Wrong answer on test 0: got 3 expected 6"},
		{"exit() after the right answer", Problem{Tests: []TestCase{stdin("", "1")}},
			"print(1)\nexit()", 0, false, "Sandbox malformed output: "},
		{"sys.exit(1)", Problem{Tests: []TestCase{stdin("", "1")}},
			"import sys\nsys.exit(1)", 0, false, "Sandbox runtime error: "},
		{"sys.exit('boom')", Problem{Tests: []TestCase{stdin("", "1"), stdin("", "1")}},
			"import sys\nsys.exit('boom')", 0, false, "Sandbox runtime error: boom\n"},
		{"no tests", Problem{}, "print(1)", 0, false, "No tests available."},
	} {
		e.cur = c.p
		r, err := e.Step(context.Background(), env.Action{Text: c.code})
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		d := r.Info["detail"].(string)
		okDetail := d == c.detail || strings.HasSuffix(c.detail, ":") && strings.HasPrefix(d, c.detail) && strings.HasSuffix(c.detail, "last):")
		if r.Info["passed_tests"] != c.passed || r.Info["runnable"] != c.runnable || !okDetail || r.Info["total_tests"] != len(c.p.Tests) {
			t.Errorf("%s: passed %v runnable %v detail %q; want %d %v %q", c.name, r.Info["passed_tests"], r.Info["runnable"], d, c.passed, c.runnable, c.detail)
		}
	}
	// A problem whose ground truth is not a list fails the step (QUIRK).
	e.cur = Problem{testsErr: errString("ground truth is a JSON dict, not a list")}
	if _, err := e.Step(context.Background(), env.Action{Text: "print(1)"}); err == nil || !strings.Contains(err.Error(), "not a list") {
		t.Errorf("bad ground truth: %v", err)
	}
	// Unserialisable arguments (a set) fail the step, as upstream's json.dumps.
	e.cur = Problem{FuncName: "f", Tests: []TestCase{fn("{1, 2}", "x")}}
	if _, err := e.Step(context.Background(), env.Action{Text: "def f(x): return x"}); err == nil || !strings.Contains(err.Error(), "not JSON-serialisable") {
		t.Errorf("set argument: %v", err)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// Upstream's outcomes for rows read from JSONL, as its
// run_deepcoder_sandbox returns them (the values were produced by running
// upstream's harness with CPython 3.11, stdout block-buffered as under
// subprocess.run): float and dict arguments keep their type and order,
// os._exit and exit statuses are judged by Python's exit status, what the
// functional calls printed is upstream's stdout, stdin keeps "\r".
func TestUpstreamOutcomes(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.MaxSteps = 100 })
	for _, c := range []struct {
		name, row, code string
		passed          int
		runnable        bool
		detail          string
	}{
		{"D1 float arg", `{"question": "q", "ground_truth": [{"input": [1.0], "output": 1.0, "testtype": "functional"}], "metadata": {"func_name": "f"}}`, "def f(x): return x", 1, true, "All tests passed."},
		{"D1 -0.0", `{"question": "q", "ground_truth": [{"input": [-0.0], "output": "-0.0", "testtype": "functional"}], "metadata": {"func_name": "f"}}`, "def f(x): return x", 1, true, "All tests passed."},
		{"D1 1e16", `{"question": "q", "ground_truth": [{"input": [1e+16], "output": "1e+16", "testtype": "functional"}], "metadata": {"func_name": "f"}}`, "def f(x): return x", 1, true, "All tests passed."},
		{"D1 NaN", `{"question":"q","ground_truth":[{"input":[NaN],"output":"nan","testtype":"functional"}],"metadata":{"func_name":"f"}}`, "def f(x): return x", 1, true, "All tests passed."},
		{"D1 inf", `{"question":"q","ground_truth":[{"input":[1e400, -Infinity],"output":"inf -inf","testtype":"functional"}],"metadata":{"func_name":"f"}}`, "def f(x, y): return f'{x} {y}'", 1, true, "All tests passed."},
		{"D1 scalar float", `{"question": "q", "ground_truth": [{"input": 2.5, "output": "2.5", "testtype": "functional"}], "metadata": {"func_name": "f"}}`, "def f(x): return x", 1, true, "All tests passed."},
		{"null input", `{"question": "q", "ground_truth": [{"input": null, "output": "None", "testtype": "functional"}], "metadata": {"func_name": "f"}}`, "def f(x): return x", 1, true, "All tests passed."},
		{"D2 dict order", `{"question":"q","ground_truth":[{"input":[{"b":1,"a":2}],"output":"['b', 'a']","testtype":"functional"}],"metadata":{"func_name":"f"}}`, "def f(d): return list(d)", 1, true, "All tests passed."},
		{"D3 os._exit(0) stdin", `{"question": "q", "ground_truth": [{"input": "", "output": "5", "testtype": "stdin"}]}`, "print(5)\nimport os\nos._exit(0)", 0, false, "Sandbox malformed output: "},
		{"D3 os._exit(0) functional", `{"question": "q", "ground_truth": [{"input": "1", "output": "5", "testtype": "functional"}], "metadata": {"func_name": "f"}}`, "def f(x):\n    print(42)\n    import os; os._exit(0)", 0, false, "Sandbox malformed output: "},
		{"D4 sys.exit(256)", `{"question": "q", "ground_truth": [{"input": "", "output": "1", "testtype": "stdin"}]}`, "import sys\nsys.exit(256)", 0, false, "Sandbox malformed output: "},
		{"D4 sys.exit(512) in function", `{"question": "q", "ground_truth": [{"input": "1", "output": "1", "testtype": "functional"}], "metadata": {"func_name": "f"}}`, "def f(x):\n    import sys; sys.exit(512)", 0, false, "Sandbox malformed output: "},
		{"D4 sys.exit(-1)", `{"question": "q", "ground_truth": [{"input": "", "output": "1", "testtype": "stdin"}]}`, "import sys\nsys.exit(-1)", 0, false, "Sandbox runtime error: "},
		{"D4 sys.exit(2**64)", `{"question": "q", "ground_truth": [{"input": "", "output": "1", "testtype": "stdin"}]}`, "import sys\nsys.exit(2**64)", 0, false, "Sandbox runtime error: "},
		{"D4 sys.exit(True)", `{"question": "q", "ground_truth": [{"input": "", "output": "1", "testtype": "stdin"}]}`, "import sys\nsys.exit(True)", 0, false, "Sandbox runtime error: "},
		{"D4 sys.exit(0.0)", `{"question": "q", "ground_truth": [{"input": "", "output": "1", "testtype": "stdin"}]}`, "import sys\nsys.exit(0.0)", 0, false, "Sandbox runtime error: 0.0\n"},
		{"D5 list", `{"question": "q", "ground_truth": [{"input": "1", "output": "1", "testtype": "functional"}], "metadata": {"func_name": "f"}}`, "def f(x):\n    print([1, 2])\n    import sys; sys.exit()", 0, false, "Sandbox malformed payload type: list"},
		{"D5 int", `{"question": "q", "ground_truth": [{"input": "1", "output": "1", "testtype": "functional"}], "metadata": {"func_name": "f"}}`, "def f(x):\n    print(42)\n    import sys; sys.exit()", 0, false, "Sandbox malformed payload type: int"},
		{"D5 text", `{"question": "q", "ground_truth": [{"input": "1", "output": "1", "testtype": "functional"}], "metadata": {"func_name": "f"}}`, "def f(x):\n    print('hello')\n    import sys; sys.exit()", 0, false, "Sandbox malformed output: hello"},
		{"exit(1) after print", `{"question": "q", "ground_truth": [{"input": "1", "output": "1", "testtype": "functional"}], "metadata": {"func_name": "f"}}`, "def f(x):\n    print('hi')\n    import sys; sys.exit(1)", 0, false, "Sandbox runtime error: hi\n"},
		{"exit(1) after stderr", `{"question": "q", "ground_truth": [{"input": "1", "output": "1", "testtype": "functional"}], "metadata": {"func_name": "f"}}`, "def f(x):\n    import sys; print('oops', file=sys.stderr); sys.exit(1)", 0, false, "Sandbox runtime error: oops\n"},
		{"earlier test prints", `{"question":"q","ground_truth":[{"input":"1","output":"1","testtype":"functional"},{"input":"2","output":"2","testtype":"functional"}],"metadata":{"func_name":"f"}}`, "def f(x):\n    print(x)\n    if x == 2:\n        import sys; sys.exit()\n    return x", 0, false, "Sandbox malformed payload type: int"},
		{"D8 f = None", `{"question": "q", "ground_truth": [{"input": "1", "output": "1", "testtype": "functional"}], "metadata": {"func_name": "f"}}`, "f = None", 0, false, "Passed 0/1 tests. Exception on test 0: TypeError(\"'NoneType' object is not callable\")"},
		{"D10 crlf", `{"question": "q", "ground_truth": [{"input": "ab\r\ncd", "output": "3", "testtype": "stdin"}]}`, "print(len(input()))", 1, true, "All tests passed."},
		{"D10 cr", `{"question": "q", "ground_truth": [{"input": "ab\rcd", "output": "5", "testtype": "stdin"}]}`, "print(len(input()))", 1, true, "All tests passed."},
		{"S2 stdin stderr then os._exit(1)", `{"question": "q", "ground_truth": [{"input": "", "output": "1", "testtype": "stdin"}]}`, "import sys, os\nprint('err', file=sys.stderr)\nsys.stderr.flush()\nos._exit(1)", 0, false, "Sandbox runtime error: "},
		{"stdin stderr then exit(1)", `{"question": "q", "ground_truth": [{"input": "", "output": "1", "testtype": "stdin"}]}`, "import sys\nprint('err', file=sys.stderr)\nsys.exit(1)", 0, false, "Sandbox runtime error: "},
		{"module top stdout used in call", `{"question": "q", "ground_truth": [{"input": "1", "output": "1", "testtype": "functional"}], "metadata": {"func_name": "f"}}`, "import sys\nw = sys.stdout.write\ndef f(x):\n    w('x')\n    return x", 0, false, "Passed 0/1 tests. Exception on test 0: ValueError('I/O operation on closed file')"},
		{"stdin syntax error", `{"question": "q", "ground_truth": [{"input": "", "output": "1", "testtype": "stdin"}]}`, "print(", 0, false, "Passed 0/1 tests. Runtime error on test 0: SyntaxError(\"'(' was never closed\", ('<string>', 1, 6, 'print(\\n', 1, 0))"},
		{"fd 0 is empty in stdin test", `{"question": "q", "ground_truth": [{"input": "data", "output": "''", "testtype": "stdin"}]}`, "import os\nprint(repr(os.read(0, 10).decode()))", 1, true, "All tests passed."},
		{"functional exec prints", `{"question": "q", "ground_truth": [{"input": "1", "output": "1", "testtype": "functional"}], "metadata": {"func_name": "f"}}`, "print('top')\ndef f(x): return x", 1, true, "All tests passed."},
		// ragen does not take a verdict from a JSON object the program
		// printed (upstream trusts it: (true, "Unknown", 1, 1, false)).
		{"printed payload", `{"question": "q", "ground_truth": [{"input": "1", "output": "1", "testtype": "functional"}], "metadata": {"func_name": "f"}}`,
			"def f(x):\n    print('{\"is_correct\": true, \"passed_tests\": 1}')\n    import sys; sys.exit()", 0, false,
			`Sandbox malformed output: {"is_correct": true, "passed_tests": 1}`},
	} {
		ps, err := ReadJSONL(strings.NewReader(c.row))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		e.cur = ps[0]
		r, err := e.Step(context.Background(), env.Action{Text: c.code})
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if d := r.Info["detail"]; d != c.detail || r.Info["passed_tests"] != c.passed || r.Info["runnable"] != c.runnable {
			t.Errorf("%s: passed %v runnable %v detail %q; want %d %v %q", c.name, r.Info["passed_tests"], r.Info["runnable"], d, c.passed, c.runnable, c.detail)
		}
	}
	// An uncaught error in upstream's main loop (str() of the result
	// raising) prints its traceback after what the calls wrote to stderr.
	ps, _ := ReadJSONL(strings.NewReader(`{"question": "q", "ground_truth": [{"input": "1", "output": "1", "testtype": "functional"}, {"input": "2", "output": "2", "testtype": "functional"}], "metadata": {"func_name": "f"}}`))
	e.cur = ps[0]
	r := step(t, e, "import sys\nclass B:\n    def __str__(self): raise ValueError('no')\ndef f(x):\n    print('e', file=sys.stderr)\n    return B() if x == 2 else x")
	if d := r.Info["detail"].(string); !strings.HasPrefix(d, "Sandbox runtime error: e\ne\nTraceback (most recent call last):") || !strings.HasSuffix(d, "ValueError: no\n") {
		t.Errorf("str(result) raising: %q", d)
	}
}

// Upstream evaluates and json.dumps every test's arguments before its
// child starts: an unserialisable one fails the step even when an earlier
// test would end the run.
func TestUnserialisableArgsFailFirst(t *testing.T) {
	e := newTestEnv(t, nil)
	ps, _ := ReadJSONL(strings.NewReader(`{"question": "q", "ground_truth": [{"input": "1", "output": "1", "testtype": "functional"}, {"input": "{1, 2}", "output": "x", "testtype": "functional"}], "metadata": {"func_name": "f"}}`))
	e.cur = ps[0]
	_, err := e.Step(context.Background(), env.Action{Text: "def f(x): return x\nimport sys\nsys.exit()"})
	if err == nil || !strings.Contains(err.Error(), "test 1: arguments are not JSON-serialisable: TypeError('Object of type set is not JSON serializable')") {
		t.Errorf("%v", err)
	}
	// The program cannot forge that error: it is decided before it runs.
	e.cur = Problem{Tests: []TestCase{{Input: "", Output: "1", TestType: "stdin"}}}
	r, err := e.Step(context.Background(), env.Action{Text: "import sys\nsys.stderr.write('\\n\\x00EXC\\x00x\\x01args')\nprint(1)"})
	if err != nil || r.Reward != 1 {
		t.Errorf("forged args mark: %+v %v", r, err)
	}
}

// service-envs.md §2 "Row reading" and "test preparation": cases that
// need no sandbox run (no tests, bad data).
func TestRowReadingUpstream(t *testing.T) {
	for _, c := range []struct {
		name, row string
		tests     int
		funcName  string
		question  string
		err       string // Evaluate's error; "" for none
		detail    string
	}{
		// D6: a ground truth that is a JSON value (not text) of another kind is no tests
		{"object ground truth", `{"question": "q", "ground_truth": {"a": 1}}`, 0, "", "q", "", "No tests available."},
		{"number ground truth", `{"question": "q", "ground_truth": 5}`, 0, "", "q", "", "No tests available."},
		// QUIRK: JSON text of another kind fails the step
		{"object ground truth text", `{"question": "q", "ground_truth": "{\"a\": 1}"}`, 0, "", "q", "ground truth is a JSON dict, not a list", ""},
		{"falsy ground truth text", `{"question": "q", "ground_truth": "0"}`, 0, "", "q", "", "No tests available."},
		// D7: the metadata is read only when there are tests
		{"bad metadata, no tests", `{"question": "q", "ground_truth": "[]", "metadata": "[1]"}`, 0, "", "q", "", "No tests available."},
		{"bad metadata, tests", `{"question": "q", "ground_truth": [{"input": "", "output": "1"}], "metadata": "[1]"}`, 1, "", "q", "metadata is a JSON list, not an object", ""},
		// D9: a falsy func_name makes stdin tests
		{"func_name 0", `{"question": "q", "ground_truth": [], "metadata": {"func_name": 0}}`, 0, "", "q", "", "No tests available."},
		{"func_name false", `{"question": "q", "ground_truth": [], "metadata": {"func_name": false}}`, 0, "", "q", "", "No tests available."},
		{"func_name 7", `{"question": "q", "ground_truth": [], "metadata": {"func_name": 7}}`, 0, "7", "q", "", "No tests available."},
		// S1: a present ground_truth is used even when null
		{"null ground truth", `{"question": "q", "ground_truth": null, "tests": [{"input": "", "output": "1", "testtype": "stdin"}]}`, 0, "", "q", "", "No tests available."},
		// D15: a raw DeepCoder-Preview row's prompt carries its starter code
		{"raw row", `{"problem": "Add two numbers.", "tests": "{\"inputs\": [\"1 2\\n\"], \"outputs\": [\"3\\n\"]}", "starter_code": "class Solution:\n    def add(self, a, b):"}`,
			1, "", "Add two numbers.\n\nStarter code:\nclass Solution:\n    def add(self, a, b):", "", ""},
		{"raw row, no starter", `{"question": "old", "problem": "P", "tests": [], "starter_code": ""}`, 0, "", "P", "", "No tests available."},
	} {
		ps, err := ReadJSONL(strings.NewReader(c.row))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		p := ps[0]
		if len(p.Tests) != c.tests || p.FuncName != c.funcName || p.Question != c.question {
			t.Errorf("%s: %d tests, func_name %q, question %q", c.name, len(p.Tests), p.FuncName, p.Question)
		}
		if c.detail == "" && c.err == "" {
			continue
		}
		ev, err := Evaluate(context.Background(), nil, p, "print(1)") // no sandbox is reached
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: error %v, want %q", c.name, err, c.err)
		case c.err == "" && (err != nil || ev.Detail != c.detail):
			t.Errorf("%s: %+v %v, want %q", c.name, ev, err, c.detail)
		}
	}
	// func_name 0 runs the functional test as a stdin test.
	e := newTestEnv(t, nil)
	ps, _ := ReadJSONL(strings.NewReader(`{"question": "q", "ground_truth": [{"input": "5", "output": "5", "testtype": "functional"}], "metadata": {"func_name": 0}}`))
	e.cur = ps[0]
	if r := step(t, e, "print(input())"); r.Reward != 1 {
		t.Errorf("func_name 0: %+v", r)
	}
}

// upstream: split = config.split or the first split.
func TestEmptySplit(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"train.jsonl", "test.jsonl"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(`{"question": "`+name+`"}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, split := range []*string{strp(""), nil} {
		cfg := DefaultConfig()
		cfg.DatasetPath, cfg.Split = strp(dir), split
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		ps, err := Resolve(cfg)
		if err != nil || len(ps) != 1 || ps[0].Question != "train.jsonl" {
			t.Errorf("split %v: %+v %v", split, ps, err)
		}
	}
	if _, err := FromEnvConfig(map[string]any{"split": nil, "python_path": "/no/python3"}); err == nil || !strings.Contains(err.Error(), "/no/python3") {
		t.Errorf("null split: %v", err) // accepted; fails later on the interpreter
	}
}

// A parquet row with no prompt column is shown as Python's str() of the
// whole row: every column, in file order, whatever its type.
func TestParquetRowRepr(t *testing.T) {
	type prow struct {
		Source      string   `parquet:"source"`
		GroundTruth string   `parquet:"ground_truth"`
		Difficulty  int64    `parquet:"difficulty"`
		Score       float64  `parquet:"score"`
		Tags        []string `parquet:"tags,list"`
		Metadata    *string  `parquet:"metadata,optional"`
	}
	ps, err := ReadParquet(parquetOf(t, []prow{{Source: "x", GroundTruth: "[]", Difficulty: 3, Score: 0.5, Tags: []string{"a"}}}))
	if err != nil {
		t.Fatal(err)
	}
	if want := "{'source': 'x', 'ground_truth': '[]', 'difficulty': 3, 'score': 0.5, 'tags': ['a'], 'metadata': None}"; len(ps) != 1 || ps[0].Question != want {
		t.Errorf("got %+v\nwant question %q", ps, want)
	}
}

// Upstream's render tests the prompt's truthiness: a prompt of 0 or false
// shows no feedback. It never reads render_mode, and max_steps < 1 makes
// every non-blank step the last.
func TestFalsyPromptAndLaxConfig(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.MaxSteps = 2 })
	ps, _ := ReadJSONL(strings.NewReader(`{"question": false, "ground_truth": []}`))
	e.cur = ps[0]
	step(t, e, " ")
	if e.Render() != "Invalid action." {
		t.Errorf("blank: %q", e.Render())
	}
	if r := step(t, e, "print(1)"); r.Done || e.Render() != "Incorrect." {
		t.Errorf("not done: %+v %q", r, e.Render())
	}
	e = newTestEnv(t, func(c *Config) { c.MaxSteps, c.RenderMode = 0, "rgb_array" })
	if r := step(t, e, "print(1)"); !r.Done {
		t.Errorf("max_steps 0: %+v", r)
	}
}

// The raw DeepCoder-Preview layout: problem and tests as text and metadata
// as a struct column. The struct reads as a dict (its func_name makes the
// tests function calls); a bool reads as Python's True, a struct of lists
// in field order.
func TestParquetStructColumns(t *testing.T) {
	type meta struct {
		FuncName *string `parquet:"func_name,optional"`
		Level    int32   `parquet:"level"`
	}
	type extra struct {
		Tags  []string `parquet:"tags,list"`
		Fresh bool     `parquet:"fresh"`
	}
	type prow struct {
		Problem  string `parquet:"problem"`
		Tests    string `parquet:"tests"`
		Metadata *meta  `parquet:"metadata,optional"`
		Verified bool   `parquet:"verified"`
		Extra    extra  `parquet:"extra"`
	}
	fn := "add"
	tests := `[{"input": "[1, 2]", "output": "3", "testtype": "functional"}]`
	ps, err := ReadParquet(parquetOf(t, []prow{
		{Problem: "Add.", Tests: tests, Metadata: &meta{FuncName: &fn, Level: 2}, Verified: true, Extra: extra{Tags: []string{"x", "y"}}},
		{Problem: "Read stdin.", Tests: tests, Metadata: &meta{Level: 1}},
		{Problem: "No metadata.", Tests: tests},
	}))
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 3 {
		t.Fatalf("%d problems", len(ps))
	}
	if ps[0].FuncName != "add" || ps[0].Question != "Add." || len(ps[0].Tests) != 1 {
		t.Errorf("row 0: %+v", ps[0])
	}
	if ps[1].FuncName != "" || ps[2].FuncName != "" {
		t.Errorf("rows 1, 2 have no func_name: %q %q", ps[1].FuncName, ps[2].FuncName)
	}

	// the whole row as Python's str() when there is no prompt column
	type rrow struct {
		Source   string `parquet:"source"`
		Metadata *meta  `parquet:"metadata,optional"`
		Verified bool   `parquet:"verified"`
		Extra    extra  `parquet:"extra"`
	}
	if ps, err = ReadParquet(parquetOf(t, []rrow{{Source: "s", Metadata: &meta{FuncName: &fn, Level: 2}, Verified: true, Extra: extra{Tags: []string{"x"}}}})); err != nil {
		t.Fatal(err)
	}
	want := "{'source': 's', 'metadata': {'func_name': 'add', 'level': 2}, 'verified': True, 'extra': {'tags': ['x'], 'fresh': False}}"
	if len(ps) != 1 || ps[0].Question != want {
		t.Errorf("got %q\nwant %q", ps[0].Question, want)
	}
}

// parquetOf writes rows to a parquet file in memory with parquet-go.
func parquetOf[T any](t *testing.T, rows []T) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	w := pq.NewGenericWriter[T](&buf)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf
}
