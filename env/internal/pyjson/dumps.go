package pyjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"ragen/internal/pystr"
)

// Dumps writes v as JSON text that Python's json.loads reads back as the
// value json.dumps was given: floats keep their point or exponent (1.0,
// 1e+16, -0.0) so they arrive as floats, ints of any size stay ints, NaN
// and ±Infinity are allowed, and a decoded object keeps its key order (a
// Go map, having none, is sorted). Strings are escaped as encoding/json
// does (not byte-equal to json.dumps, the same value).
func Dumps(v any) (string, error) {
	var b strings.Builder
	err := dumps(&b, v)
	return b.String(), err
}

func dumps(b *strings.Builder, v any) error {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case Int:
		b.WriteString(string(x))
	case int:
		b.WriteString(strconv.Itoa(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		switch {
		case math.IsNaN(x):
			b.WriteString("NaN")
		case math.IsInf(x, 1):
			b.WriteString("Infinity")
		case math.IsInf(x, -1):
			b.WriteString("-Infinity")
		default:
			b.WriteString(pystr.FloatRepr(x))
		}
	case json.Number:
		if !strings.ContainsAny(string(x), ".eE") {
			b.WriteString(string(x))
			return nil
		}
		f, err := x.Float64()
		if err != nil && !math.IsInf(f, 0) {
			return fmt.Errorf("number %s: %w", x, err)
		}
		return dumps(b, f)
	case string:
		q, _ := json.Marshal(x)
		b.Write(q)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			if err := dumps(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case *Object:
		b.WriteByte('{')
		for i, k := range x.Keys {
			if i > 0 {
				b.WriteString(", ")
			}
			q, _ := json.Marshal(k)
			b.Write(q)
			b.WriteString(": ")
			if err := dumps(b, x.Vals[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return dumps(b, &Object{Keys: keys, Vals: x})
	default:
		q, err := json.Marshal(x)
		if err != nil {
			return fmt.Errorf("argument %v (%T) cannot travel as JSON: %w", x, x, err)
		}
		var d any
		dec := json.NewDecoder(bytes.NewReader(q))
		dec.UseNumber()
		if err := dec.Decode(&d); err != nil {
			return fmt.Errorf("argument %v (%T): %w", x, x, err)
		}
		return dumps(b, d)
	}
	return nil
}
