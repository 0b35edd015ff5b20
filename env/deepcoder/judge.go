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
			if strings.TrimFunc(l, pystr.IsSpace) != "" {
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
	if p.metaErr != nil { // upstream reads the metadata only when there are tests
		return Evaluation{}, fmt.Errorf("problem data: %w", p.metaErr)
	}
	job := sandbox.Job{Program: Program(p.StarterCode, code), FuncName: p.FuncName, Tests: make([]sandbox.Test, total)}
	for i, t := range p.Tests {
		f := functional(t, p.FuncName)
		if !f {
			in, ok := t.Input.(string)
			switch {
			case t.noInput:
				in = ""
			case !ok: // upstream feeds str(input)
				in = t.inStr
				if in == "" {
					in = PyStr(t.Input)
				}
			}
			job.Tests[i] = sandbox.Test{Input: in}
			continue
		}
		if s, ok := t.Input.(string); ok && !t.noInput {
			job.Tests[i] = sandbox.Test{Input: s, Functional: true} // expressions, eval'd in the sandbox
			continue
		}
		args, err := argsJSON(t)
		if err != nil {
			return Evaluation{}, fmt.Errorf("test %d: %w", i, err)
		}
		job.Tests[i] = sandbox.Test{Args: args, Functional: true}
	}
	rep, err := sb.Run(ctx, job)
	if err != nil {
		return Evaluation{}, err
	}
	return Judge(p, rep)
}

// argsJSON is the argument list of a functional test whose input is not a
// string, as upstream sends it to its child: a list gives one argument per
// element, a missing input none, anything else (null included) one.
func argsJSON(t TestCase) (string, error) {
	v := t.Input
	if t.hasRaw {
		v = t.inRaw
	}
	switch {
	case t.noInput:
		return "[]", nil
	case isList(v):
		return pyjson.Dumps(v)
	}
	s, err := pyjson.Dumps(v)
	return "[" + s + "]", err
}

func isList(v any) bool {
	switch v.(type) {
	case []any:
		return true
	}
	return false
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
// Upstream's child has one stdout and stderr: the functional calls print
// there (a stdin test's output and a functional program's top-level
// output go to in-memory buffers), and the outcome texts quote them. An
// error is returned only for arguments that cannot travel as JSON
// (upstream's step fails there too, before any test runs).
func Judge(p Problem, rep sandbox.Report) (Evaluation, error) {
	T := len(p.Tests)
	whole := func(detail string) (Evaluation, error) {
		return Evaluation{Total: T, Detail: detail}, nil
	}
	if rep.ArgsError != "" {
		return Evaluation{}, fmt.Errorf("test %d: arguments are not JSON-serialisable: %s", rep.ArgsTest, rep.ArgsError)
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
	// upstream's child's stdout and stderr so far
	var stdout, stderr strings.Builder
	for i, t := range p.Tests {
		o := rep.Outcomes[i]
		switch {
		case o.Status == "output_limit":
			return whole("Sandbox runtime error: output limit exceeded")
		case o.Status == "memory_limit":
			return whole("Sandbox runtime error: MemoryError")
		case o.Status != "done":
			return whole("Sandbox runtime error: " + o.Status)
		}
		f := functional(t, p.FuncName)
		if f {
			stdout.WriteString(o.Stdout)
			stderr.WriteString(o.Stderr)
		}
		// The runner reports "<text>\x01<kind>" (see runner.py).
		text, kind := o.Exception, ""
		if j := strings.LastIndexByte(text, 1); j >= 0 {
			text, kind = text[:j], text[j+1:]
		}
		died := o.Signal != 0 || o.ExitCode != 0
		switch {
		case kind == "crash": // uncaught: a traceback on stderr, exit status 1
			return whole("Sandbox runtime error: " + stderr.String() + text)
		case kind == "exit":
			var x struct {
				Status int    `json:"status"`
				Stderr string `json:"stderr"`
			}
			if err := json.Unmarshal([]byte(text), &x); err != nil {
				x.Status = 1
			}
			if x.Status != 0 {
				e := stderr.String() + x.Stderr
				if e == "" {
					e = stdout.String()
				}
				return whole("Sandbox runtime error: " + e)
			}
			return whole(malformed(stdout.String()))
		case kind == "notfound":
			ev.Runnable = false
			fail(fmt.Sprintf("Exception on test %d: Function not found", i))
			continue
		case kind == "exc" && f:
			ev.Runnable = false
			fail(fmt.Sprintf("Exception on test %d: %s", i, text))
			continue
		case kind == "exc":
			ev.Runnable = false
			fail(fmt.Sprintf("Runtime error on test %d: %s", i, text))
			continue
		case !o.Completed || died:
			// os._exit or a fatal signal ends upstream's child at once:
			// Python's buffered stdout is lost, whole stderr lines are not.
			if died {
				return whole("Sandbox runtime error: " + stderr.String())
			}
			return whole("Sandbox malformed output: ")
		}
		if f {
			if got, want := o.Result, expected(t); got == want {
				ev.Passed++
			} else {
				fail(fmt.Sprintf("Wrong answer on test %d: got %s expected %s", i, got, want))
			}
			continue
		}
		got, want := strings.TrimFunc(o.Stdout, pystr.IsSpace), strings.TrimFunc(expected(t), pystr.IsSpace)
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

// malformed is upstream's verdict on a child that exited with status 0
// before printing its result line: the last line of strip(stdout) parsed
// as JSON. A JSON object there is upstream's result payload, which
// upstream would trust; ragen does not take a verdict from what the
// program printed and reports the output as malformed.
func malformed(stdout string) string {
	s := strings.TrimFunc(stdout, pystr.IsSpace)
	if lines := pystr.SplitLines(s); len(lines) > 0 {
		if v, err := pyjson.Decode(lines[len(lines)-1]); err == nil {
			if _, ok := v.(*pyjson.Object); !ok {
				return "Sandbox malformed payload type: " + pyjson.TypeName(v)
			}
		}
	}
	return "Sandbox malformed output: " + s
}

// PyStr is Python's str() of a JSON value as json.loads returns it:
// strings as themselves at top level and repr'd inside containers,
// None/True/False, ints (json.Number from encoding/json's UseNumber kept
// exact), floats as repr, lists and dicts (a Go map has no order of its
// own: its keys are sorted).
func PyStr(v any) string { return pyjson.Str(v) }
