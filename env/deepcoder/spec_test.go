package deepcoder

import (
	"context"
	"strings"
	"testing"

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
