package pyjson

import (
	"strconv"

	"ragen/env/countdown/parquet"
)

// FromParquet is a value of parquet.File.ReadValues as Decode would give
// it: ints as Int, a struct as an *Object (a repeated field name keeps its
// first place and its last value, as a Python dict built from the pairs),
// lists converted element by element.
func FromParquet(v any) any {
	switch x := v.(type) {
	case int64:
		return Int(strconv.FormatInt(x, 10))
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = FromParquet(e)
		}
		return out
	case *parquet.Group:
		o := &Object{Vals: make(map[string]any, len(x.Names))}
		for i, name := range x.Names {
			if _, dup := o.Vals[name]; !dup {
				o.Keys = append(o.Keys, name)
			}
			o.Vals[name] = FromParquet(x.Values[i])
		}
		return o
	}
	return v
}
