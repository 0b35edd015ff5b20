package httpenv

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

// Floats are written as Python's json module writes them (repr: shortest
// round-trip digits, always a point or an exponent), ints without a point,
// and each comes back with its type.
func TestNumbers(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{1, "1"}, {-7, "-7"}, {int64(1) << 60, "1152921504606846976"}, {uint8(200), "200"},
		{1.0, "1.0"}, {-0.1, "-0.1"}, {0.30000000000000004, "0.30000000000000004"},
		{1e-5, "1e-05"}, {1e16, "1e+16"}, {123456789.0, "123456789.0"}, {float32(0.1), "0.1"},
		{true, "true"}, {"a\"é", `"a\"é"`}, {nil, "null"},
		{map[int]string{2: "b", 1: "a"}, `{"1":"a","2":"b"}`},
		{[]any{1, 2.5, []int{3}}, `[1,2.5,[3]]`}, {[2]int{6, 6}, `[6,6]`},
	} {
		b, err := marshalValue(tc.v)
		if err != nil || string(b) != tc.want {
			t.Errorf("marshal %#v = %s, %v; want %s", tc.v, b, err, tc.want)
			continue
		}
		// Scalars come back with the same Go type (int / float64).
		var back any
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if err := dec.Decode(&back); err != nil {
			t.Fatal(err)
		}
		back, err = fromWire(back)
		switch x := tc.v.(type) {
		case int:
			if back != x || err != nil {
				t.Errorf("%s came back as %#v, %v", b, back, err)
			}
		case float64:
			if back != x || err != nil {
				t.Errorf("%s came back as %#v, %v", b, back, err)
			}
		}
	}
	for _, v := range []any{math.NaN(), math.Inf(-1), map[string]any{"k": struct{}{}}, []any{make(chan int)}} {
		if b, err := marshalValue(v); err == nil {
			t.Errorf("marshal %#v = %s, want an error", v, b)
		}
	}
	if _, err := number("99999999999999999999"); err == nil {
		t.Error("an integer out of range was accepted")
	}
}

// Nested env_config values keep their types through marshalValue and
// fromWire, as a YAML file would have given them.
func TestEnvConfigRoundTrip(t *testing.T) {
	in := map[string]any{"dim_room": []any{6, 6}, "score": 1.0, "lookup": map[string]any{"0": "#", "1": 2.5},
		"flag": false, "none": nil}
	b, err := marshalValue(in)
	if err != nil {
		t.Fatal(err)
	}
	var req createRequest
	if err := decodeStrict(bytes.NewReader([]byte(`{"env_type":"x","env_config":`+string(b)+`}`)), &req); err != nil {
		t.Fatal(err)
	}
	out, err := fromWire(req.EnvConfig)
	if err != nil || !reflect.DeepEqual(out, in) {
		t.Errorf("round trip: %#v, %v; want %#v", out, err, in)
	}
}

// FuzzStepReply: no reply body makes the client's decoding panic, and an
// accepted info holds only int, float64, bool, string, nil and lists and
// objects of them.
func FuzzStepReply(f *testing.F) {
	f.Add([]byte(`{"observation":"o","reward":1.5,"reward_is_int":false,"done":true,"info":{"a":1,"b":true,"c":"x","d":0.5},"render":"r","action_lookup":{"1":"Up"},"grid":[[1,2]]}`))
	f.Add([]byte(`{"info":{"a":[1]},"reward":"1"}`))
	f.Add([]byte(`{"reward":1e999,"info":{"a":1e999}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var rep stepReply
		if decodeStrict(bytes.NewReader(data), &rep) != nil {
			return
		}
		_, _ = parseReward(rep.Reward)
		info, err := infoFromWire(rep.Info)
		if err != nil {
			return
		}
		for k, v := range info {
			if !plainJSON(v) {
				t.Errorf("info %q: %T accepted", k, v)
			}
		}
	})
}

func plainJSON(v any) bool {
	switch x := v.(type) {
	case nil, int, float64, bool, string:
		return true
	case []any:
		for _, e := range x {
			if !plainJSON(e) {
				return false
			}
		}
		return true
	case map[string]any:
		for _, e := range x {
			if !plainJSON(e) {
				return false
			}
		}
		return true
	}
	return false
}
