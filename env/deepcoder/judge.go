package deepcoder

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"ragen/env/deepcoder/sandbox"
	"ragen/env/internal/pyjson"
	"ragen/internal/pystr"
)

// Evaluation is the outcome of one answer: upstream's (is_correct,
// detail, passed, total, runnable).
type Evaluation struct {
	Passed, Total int
	// Runnable is upstream's runnable: false when a test raised, a function
	// was not found, the run timed out or crashed, or there were no tests.
	Runnable bool
	Detail   string // upstream's feedback text
}

// Correct reports upstream's is_correct: every test passed and there was
// at least one.
func (ev Evaluation) Correct() bool { return ev.Total > 0 && ev.Passed == ev.Total }

// Program assembles what runs, as upstream (service-envs.md §2 "Program
// text"): starter and code lose leading and trailing "\n" characters; a
// code containing "class Solution" drops the starter; else, when the
// starter contains "class Solution" and the code starts with "def ", every
// code line with non-whitespace content is indented by 4 spaces and blank
// lines become empty; the program is starter + "\n\n" + code when both are
// non-empty, else the non-empty one.
func Program(starter, code string) string {
	header, body := strings.Trim(starter, "\n"), strings.Trim(code, "\n")
	if strings.Contains(body, "class Solution") {
		header = ""
	} else if strings.Contains(header, "class Solution") && strings.HasPrefix(body, "def ") {
		lines := pystr.SplitLines(body)
		for i, l := range lines {
			if strings.TrimFunc(l, isPySpace) != "" {
				lines[i] = "    " + l
			} else {
				lines[i] = ""
			}
		}
		body = strings.Join(lines, "\n")
	}
	switch {
	case header != "" && body != "":
		return header + "\n\n" + body
	case header != "":
		return header
	}
	return body
}

// functional reports upstream's test kind: testtype exactly "functional"
// and a func_name.
func functional(t TestCase, funcName string) bool {
	return t.TestType == "functional" && funcName != ""
}

// Evaluate runs code against p's tests in sb and judges the outputs.
func Evaluate(ctx context.Context, sb *sandbox.Sandbox, p Problem, code string) (Evaluation, error) {
	if p.testsErr != nil {
		return Evaluation{}, fmt.Errorf("problem data: %w", p.testsErr)
	}
	total := len(p.Tests)
	if total == 0 {
		return Evaluation{Detail: "No tests available."}, nil
	}
	job := sandbox.Job{Program: Program(p.StarterCode, code), FuncName: p.FuncName, Tests: make([]sandbox.Test, total)}
	for i, t := range p.Tests {
		in := jsonToPlain(t.Input)
		f := functional(t, p.FuncName)
		switch {
		case t.noInput && f:
			in = []any{}
		case t.noInput:
			in = ""
		case !f:
			if _, ok := in.(string); !ok { // upstream feeds str(input)
				in = t.inStr
				if in == "" {
					in = PyStr(t.Input)
				}
			}
		}
		job.Tests[i] = sandbox.Test{Input: in, Functional: f}
	}
	rep, err := sb.Run(ctx, job)
	if err != nil {
		return Evaluation{}, err
	}
	return Judge(p, rep)
}

// expected is py-str of a test's expected output.
func expected(t TestCase) string {
	if t.hasWant {
		return t.want
	}
	return PyStr(t.Output)
}

// Judge scores a sandbox report as upstream's single child run would
// (service-envs.md §2 "child run" and "outcome"): tests in order, the
// first failure's text with a 0-based index; an uncaught error or exit
// ends the whole run with one of upstream's sandbox texts and 0 passed.
// An error is returned only for arguments that cannot travel as JSON
// (upstream's step fails there too).
func Judge(p Problem, rep sandbox.Report) (Evaluation, error) {
	T := len(p.Tests)
	whole := func(detail string) (Evaluation, error) {
		return Evaluation{Total: T, Detail: detail}, nil
	}
	if rep.TimedOut {
		return whole("Sandbox runtime error: Timeout")
	}
	if rep.Crashed {
		return whole("Sandbox runtime error: " + rep.Detail)
	}
	ev := Evaluation{Total: T, Runnable: true}
	first := ""
	fail := func(s string) {
		if first == "" {
			first = s
		}
	}
	for i, t := range p.Tests {
		o := rep.Outcomes[i]
		// The runner reports "<text>\x01<kind>" (see runner.py).
		text, kind := o.Exception, ""
		if j := strings.LastIndexByte(text, 1); j >= 0 {
			text, kind = text[:j], text[j+1:]
		}
		switch {
		case o.Status == "output_limit":
			return whole("Sandbox runtime error: output limit exceeded")
		case o.Status == "memory_limit":
			return whole("Sandbox runtime error: MemoryError")
		case o.Status != "done":
			return whole("Sandbox runtime error: " + o.Status)
		case kind == "args":
			return Evaluation{}, fmt.Errorf("test %d: arguments are not JSON-serialisable: %s", i, text)
		case kind == "crash":
			return whole("Sandbox runtime error: " + text)
		case kind == "exit":
			var code any
			_ = json.Unmarshal([]byte(text), &code)
			switch c := code.(type) {
			case nil:
				return whole("Sandbox malformed output: ")
			case float64:
				if c == 0 {
					return whole("Sandbox malformed output: ")
				}
				return whole("Sandbox runtime error: ")
			case bool:
				if !c {
					return whole("Sandbox malformed output: ")
				}
				return whole("Sandbox runtime error: ")
			default:
				return whole("Sandbox runtime error: " + fmt.Sprint(c) + "\n")
			}
		case kind == "notfound":
			ev.Runnable = false
			fail(fmt.Sprintf("Exception on test %d: Function not found", i))
			continue
		case kind == "exc" && functional(t, p.FuncName):
			ev.Runnable = false
			fail(fmt.Sprintf("Exception on test %d: %s", i, text))
			continue
		case kind == "exc":
			ev.Runnable = false
			fail(fmt.Sprintf("Runtime error on test %d: %s", i, text))
			continue
		case o.Signal != 0 || o.ExitCode != 0:
			// os._exit or a fatal signal ends upstream's child.
			return whole("Sandbox runtime error: " + o.Stderr)
		}
		if functional(t, p.FuncName) {
			if got, want := o.Result, expected(t); got == want {
				ev.Passed++
			} else {
				fail(fmt.Sprintf("Wrong answer on test %d: got %s expected %s", i, got, want))
			}
			continue
		}
		got, want := strings.TrimFunc(o.Stdout, isPySpace), strings.TrimFunc(expected(t), isPySpace)
		if got == want {
			ev.Passed++
		} else {
			fail(fmt.Sprintf("Wrong answer on test %d: got %s expected %s", i, got, want))
		}
	}
	if ev.Passed == T {
		ev.Detail = "All tests passed."
	} else {
		ev.Detail = fmt.Sprintf("Passed %d/%d tests. %s", ev.Passed, T, first)
	}
	return ev, nil
}

// jsonToPlain turns json.Number values (encoding/json's UseNumber) into
// int64 or float64 so the sandbox job marshals them as numbers; an integer
// too large for int64 stays a json.Number, which marshals as its exact
// text (Python's json.loads gives an exact int).
func jsonToPlain(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		if !strings.ContainsAny(string(x), ".eE") {
			return x
		}
		f, _ := x.Float64()
		return f
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonToPlain(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonToPlain(e)
		}
		return out
	}
	return v
}

// PyStr is Python's str() of a JSON value as json.loads returns it:
// strings as themselves at top level and repr'd inside containers,
// None/True/False, ints (json.Number from encoding/json's UseNumber kept
// exact), floats as repr, lists and dicts (a Go map has no order of its
// own: its keys are sorted).
func PyStr(v any) string { return pyjson.Str(v) }
