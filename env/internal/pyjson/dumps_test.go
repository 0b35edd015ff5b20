package pyjson

import (
	"math"
	"reflect"
	"testing"
)

// FuzzDumpsRoundTrip: what Decode accepts, Dumps writes back as JSON that
// Decode reads as the same value (key order, big ints, float-ness, NaN and
// the infinities included).
func FuzzDumpsRoundTrip(f *testing.F) {
	for _, s := range []string{`{"b": [1.0, -0.0, 1e16, NaN, -Infinity, 123456789012345678901234], "a": null}`,
		`"é\u0000\ud83d\ude00"`, `[true, false, {"": {}}]`, `-0`, `1E400`, `{"a": 1, "a": 2}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := Decode(s)
		if err != nil {
			return
		}
		out, err := Dumps(v)
		if err != nil {
			t.Fatalf("Dumps(%q): %v", s, err)
		}
		w, err := Decode(out)
		if err != nil {
			t.Fatalf("Decode(Dumps(%q)) = Decode(%q): %v", s, out, err)
		}
		if !sameValue(v, w) {
			t.Fatalf("%q → %q → %#v, want %#v", s, out, w, v)
		}
	})
}

func sameValue(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && (x == y && math.Signbit(x) == math.Signbit(y) || math.IsNaN(x) && math.IsNaN(y))
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i]) {
				return false
			}
		}
		return true
	case *Object:
		y, ok := b.(*Object)
		if !ok || !reflect.DeepEqual(x.Keys, y.Keys) {
			return false
		}
		for _, k := range x.Keys {
			if !sameValue(x.Vals[k], y.Vals[k]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}
