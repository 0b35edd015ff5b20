package pystr

import (
	"math"
	"strconv"
	"strings"
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

// FuzzParseFloat: no input panics, surrounding (Unicode) spaces change
// nothing, and an accepted ASCII decimal without '_' reads as strconv
// reads it.
func FuzzParseFloat(f *testing.F) {
	for _, s := range []string{"1990", " -2.5e1\n", "1_000.5", "١٩٩٠", "nan", "-Infinity", "0x1p3", "\u3000𝟐e𝟏"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, ok := ParseFloat(s)
		w, ok2 := ParseFloat("\u3000 " + s + "\t\u2029")
		if ok != ok2 || ok && !(v == w || math.IsNaN(v) && math.IsNaN(w)) {
			t.Fatalf("%q: %v %v; padded %v %v", s, v, ok, w, ok2)
		}
		if !ok || strings.ContainsAny(s, "_nNiI") || strings.IndexFunc(s, func(r rune) bool { return r > 127 }) >= 0 {
			return
		}
		if f, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil && f != v {
			t.Fatalf("%q: %v, strconv %v", s, v, f)
		}
	})
}
