package pystr

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestParseFloat: Python's float(str), checked case by case against
// CPython 3.11 (float(s), or ValueError → not ok).
func TestParseFloat(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"1990", 1990, true}, {" -2.5e1\n", -25, true}, {"1_000.5", 1000.5, true}, {"1e1_0", 1e10, true},
		{".5", 0.5, true}, {"5.", 5, true}, {"1e400", math.Inf(1), true}, {"-1e-400", 0, true},
		{"INF", math.Inf(1), true}, {"-Infinity", math.Inf(-1), true},
		{"_1", 0, false}, {"1__0", 0, false}, {"1_", 0, false}, {"0x1p3", 0, false}, {"", 0, false},
		{"+-1", 0, false}, {"abc", 0, false}, {"1e", 0, false}, {"infinit", 0, false},
		// Unicode decimal digits and spaces, as CPython reads them
		{"\u0661\u0669\u0669\u0660", 1990, true}, {"\uff11\uff19\u3000", 19, true}, {"\u0967_\u0968", 12, true},
		{"\u0663.\u0665", 3.5, true}, {"\U0001d7d0e\U0001d7cf", 20, true}, {"\u00a0-1\u2028", -1, true},
		{"\u200b5", 0, false}, {"\u00bd", 0, false}, {"\u2155", 0, false}, {"\u00b2", 0, false}, {"1\uff0e5", 0, false},
	} {
		got, ok := ParseFloat(c.in)
		assert.Equal(t, c.ok, ok, "%q", c.in)
		if ok {
			assert.Equal(t, c.want, got, "%q", c.in)
		}
	}
	for _, s := range []string{"nan", " -NaN "} {
		got, ok := ParseFloat(s)
		assert.True(t, ok && math.IsNaN(got), "%q", s)
	}
}
