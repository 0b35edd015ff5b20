package countdown

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ragen/env"
)

// testdata/eval_cpython.json holds CPython's eval(expr, {"__builtins__":
// None}, {}) of each expression (written by testdata/eval_ref.py): "int:N",
// "float:repr", "bool:0|1" (Evaluate returns bools as the ints they
// subclass), "error" for any exception, or "other:type" for results that
// are not numbers (complex, tuple), which Evaluate rejects.
func TestEvaluateMatchesCPython(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "eval_cpython.json"))
	require.NoError(t, err)
	var cases []struct{ Expr, Result string }
	require.NoError(t, json.Unmarshal(b, &cases))
	require.Greater(t, len(cases), 100)
	for _, c := range cases {
		if strings.HasPrefix(c.Result, "bool:") {
			c.Result = "int:" + c.Result[5:]
		}
		v, err := Evaluate(c.Expr)
		switch {
		case c.Result == "error" || strings.HasPrefix(c.Result, "other:"):
			assert.Error(t, err, "%q = %v", c.Expr, v)
		case strings.HasPrefix(c.Result, "int:"):
			if assert.NoError(t, err, "%q", c.Expr) {
				assert.True(t, v.IsInt, "%q", c.Expr)
				assert.Equal(t, c.Result[4:], v.Int.String(), "%q", c.Expr)
			}
		default:
			if assert.NoError(t, err, "%q", c.Expr) {
				assert.False(t, v.IsInt, "%q", c.Expr)
				assert.Equal(t, c.Result[6:], env.PyFloatRepr(v.Float), "%q", c.Expr)
			}
		}
	}
}

func TestEvaluateLimits(t *testing.T) {
	for _, e := range []string{"99**99**99", "2**100000", strings.Repeat("(", 500) + "1" + strings.Repeat(")", 500), strings.Repeat("-", 1000) + "1"} {
		_, err := Evaluate(e)
		assert.Error(t, err, e[:min(len(e), 10)])
	}
	v, err := Evaluate("(99**99)**99 - (99**99)**99 + 5")
	require.NoError(t, err)
	assert.Equal(t, "5", v.Int.String())
}

func TestNumbersIn(t *testing.T) {
	tests := []struct {
		in   string
		want []int64
		ok   bool
	}{
		{"(3 + 5) * 2", []int64{3, 5, 2}, true},
		{"1.5e10", []int64{1, 5, 10}, true},
		{"007 + 0", []int64{7, 0}, true},
		// Arabic-Indic ٣ (U+0663) and fullwidth ４ (U+FF14) are \d in Python.
		{"٣+４2", []int64{3, 42}, true},
		{"no digits", nil, true},
		{"99999999999999999999", nil, false},
	}
	for _, tc := range tests {
		got, ok := NumbersIn(tc.in)
		assert.Equal(t, tc.want, got, tc.in)
		assert.Equal(t, tc.ok, ok, tc.in)
	}
}

func TestScore(t *testing.T) {
	task := Task{Target: 24, Nums: []int{4, 6, 1}}
	tests := []struct {
		expr   string
		reward float64
		isInt  bool
	}{
		{"4 * 6 * 1", 1, true},                  // int 24
		{"4 * 6 / 1", 1, true},                  // float 24.0, within 1e-5
		{"6 / (1 / 4)", 1, true},                // 6 / 0.25 = 24.0
		{"4*6*1\n", 1, true},                    // a trailing newline is fine for eval
		{"4 * 6 + 1", 0.1, false},               // 25: numbers right, value wrong
		{"4 * 6 * 1 =", 0.1, false},             // syntax error
		{"abs(4 * 6 * 1)", 0.1, false},          // names are never evaluated
		{"4 / (1 - 1) * 6", 0, true},            // numbers {4,1,1,6} ≠ {4,6,1}
		{"(6 - 1 - 1) * 6", 0, true},            // numbers {6,1,1,6}
		{"4 * 6", 0, true},                      // 1 unused
		{"4 * 6 * 1 = 24", 0, true},             // 24 is an extra number
		{"", 0, true},                           // no numbers
		{"1 * 04 * 6", 0.1, false},              // numbers match (int("04") = 4) but 04 is a syntax error
		{"6 / (1 - 4 / 4)", 0, true},            // 4 used twice
		{"(6 - 4) * 1", 0.1, false},             // 2
		{"6 << 4 >> 1 >> 1 >> 1 >> 1", 0, true}, // extra numbers
		{"6 * 4 & ~1", 1, true},                 // bit operators evaluate too: 24 & -2 = 24
	}
	for _, tc := range tests {
		r, isInt := Score(tc.expr, task)
		assert.Equal(t, tc.reward, r, tc.expr)
		assert.Equal(t, tc.isInt, isInt, tc.expr)
	}
	// Float tolerance: 1e-5 either side.
	assert.True(t, Hits(Value{Float: 24.000009}, 24))
	assert.False(t, Hits(Value{Float: 24.0000101}, 24))
	assert.False(t, Hits(Value{Float: 23.9999899}, 24))
}

func FuzzEvaluate(f *testing.F) {
	for _, s := range []string{"1+2", "(3*4)-5/6", "2**-1", "7//-2%3", "0x1f<<3", "1e308*10", "((((1))))", "-~+-1", "1_0.5e-3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := Evaluate(s)
		if err != nil {
			return
		}
		if v.IsInt && v.Int == nil {
			t.Fatalf("%q: nil int", s)
		}
		_ = v.String()
	})
}

func FuzzScore(f *testing.F) {
	f.Add("4 * 6 * 1", 24, 4, 6, 1)
	f.Add("(6 - 1 - 1) * 6", 24, 4, 6, 1)
	f.Fuzz(func(t *testing.T, s string, target, a, b, c int) {
		r, isInt := Score(s, Task{Target: target, Nums: []int{a, b, c}})
		switch {
		case r == 0 && isInt, r == 1 && isInt, r == 0.1 && !isInt:
		default:
			t.Fatalf("%q: reward %v (int %v)", s, r, isInt)
		}
	})
}
