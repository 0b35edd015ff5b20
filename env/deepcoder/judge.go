package deepcoder

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"ragen/env"
	"ragen/env/deepcoder/sandbox"
)

// Evaluation is the outcome of one answer.
type Evaluation struct {
	Passed, Total int
	Runnable      bool   // the program compiled and ran (no syntax error, no sandbox crash)
	Detail        string // upstream's feedback text
}

// Program assembles what runs, as upstream: a code with its own
// `class Solution` replaces the starter; else, when the starter has a
// class Solution and the code starts with "def ", the code's non-blank
// lines are indented by 4 spaces; the program is starter + "\n\n" + code.
func Program(starter, code string) string {
	if strings.Contains(code, "class Solution") {
		return code
	}
	if strings.Contains(starter, "class Solution") && strings.HasPrefix(code, "def ") {
		lines := strings.Split(code, "\n")
		for i, l := range lines {
			if strings.TrimFunc(l, isPySpace) != "" {
				lines[i] = "    " + l
			}
		}
		code = strings.Join(lines, "\n")
	}
	if starter == "" {
		return code
	}
	return starter + "\n\n" + code
}

// Evaluate runs code against p's tests in sb and judges the outputs.
func Evaluate(ctx context.Context, sb *sandbox.Sandbox, p Problem, code string) (Evaluation, error) {
	total := len(p.Tests)
	if total == 0 {
		return Evaluation{Detail: "No tests available.", Runnable: true}, nil
	}
	job := sandbox.Job{Program: Program(p.StarterCode, code), FuncName: p.FuncName, Tests: make([]sandbox.Test, total)}
	for i, t := range p.Tests {
		job.Tests[i] = sandbox.Test{Input: jsonToPlain(t.Input), Functional: t.TestType == "functional" && p.FuncName != ""}
	}
	rep, err := sb.Run(ctx, job)
	if err != nil {
		return Evaluation{}, err
	}
	return Judge(p, rep), nil
}

// Judge scores a sandbox report: a crash or a timeout counts as 0 passed
// (upstream runs all tests in one child with one timeout).
func Judge(p Problem, rep sandbox.Report) Evaluation {
	ev := Evaluation{Total: len(p.Tests), Runnable: !rep.Crashed}
	if rep.Crashed || rep.TimedOut {
		why := "Time limit exceeded."
		if !rep.TimedOut {
			why = "Runtime error: the sandbox crashed (" + rep.Detail + ")."
		}
		ev.Detail = fmt.Sprintf("Passed 0/%d tests. %s", ev.Total, why)
		return ev
	}
	first := ""
	for i, t := range p.Tests {
		o := rep.Outcomes[i]
		ok, fail := judgeOne(i+1, t, o)
		if strings.HasPrefix(o.Exception, "SyntaxError") {
			ev.Runnable = false
		}
		if ok {
			ev.Passed++
		} else if first == "" {
			first = fail
		}
	}
	if ev.Passed == ev.Total {
		ev.Detail = "All tests passed."
	} else {
		ev.Detail = fmt.Sprintf("Passed %d/%d tests. %s", ev.Passed, ev.Total, first)
	}
	return ev
}

func judgeOne(n int, t TestCase, o sandbox.Outcome) (bool, string) {
	functional := t.TestType == "functional"
	switch {
	case o.Status == "output_limit":
		return false, fmt.Sprintf("Runtime error on test %d: output limit exceeded", n)
	case o.Status == "memory_limit":
		return false, fmt.Sprintf("Runtime error on test %d: memory limit exceeded", n)
	case o.Status != "done":
		return false, fmt.Sprintf("Runtime error on test %d: %s", n, o.Status)
	case o.Exception != "" && functional:
		return false, fmt.Sprintf("Exception on test %d: %s", n, o.Exception)
	case o.Exception != "":
		return false, fmt.Sprintf("Runtime error on test %d: %s", n, o.Exception)
	case o.Signal != 0:
		return false, fmt.Sprintf("Runtime error on test %d: killed by signal %d", n, o.Signal)
	}
	var got, want string
	if functional {
		got, want = o.Result, PyStr(t.Output)
	} else {
		if o.ExitCode != 0 {
			return false, fmt.Sprintf("Runtime error on test %d: exit status %d", n, o.ExitCode)
		}
		got, want = strings.TrimFunc(o.Stdout, isPySpace), strings.TrimFunc(PyStr(t.Output), isPySpace)
	}
	if got == want {
		return true, ""
	}
	return false, fmt.Sprintf("Wrong answer on test %d: got %s expected %s", n, clip(got), clip(want))
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

// jsonToPlain turns json.Number values back into float64/int64 so the
// sandbox job marshals them as numbers.
func jsonToPlain(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
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
// None/True/False, ints, floats as repr, lists and dicts (insertion order
// is lost in Go maps; keys are sorted).
func PyStr(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	var b strings.Builder
	pyRepr(&b, v)
	return b.String()
}

func pyRepr(b *strings.Builder, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteString("None")
	case bool:
		if x {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case string:
		b.WriteString(pyQuote(x))
	case json.Number:
		if _, err := x.Int64(); err == nil || !strings.ContainsAny(string(x), ".eE") {
			b.WriteString(string(x))
		} else {
			f, _ := x.Float64()
			b.WriteString(env.PyFloatRepr(f))
		}
	case float64:
		b.WriteString(env.PyFloatRepr(x))
	case int, int64:
		fmt.Fprint(b, x)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			pyRepr(b, e)
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(pyQuote(k))
			b.WriteString(": ")
			pyRepr(b, x[k])
		}
		b.WriteByte('}')
	default:
		fmt.Fprint(b, x)
	}
}

// pyQuote is Python's repr of a str (printable characters kept).
func pyQuote(s string) string {
	q := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == rune(q):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			b.WriteString(`\x` + strconv.FormatInt(int64(r)+0x100, 16)[1:])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
	return b.String()
}
