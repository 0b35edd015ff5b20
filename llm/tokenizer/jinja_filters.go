package tokenizer

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

func (r *renderer) evalFilter(e filterExpr) (any, error) {
	x, err := r.eval(e.x)
	if err != nil {
		return nil, err
	}
	args, kwargs, err := r.evalArgs(e.args, e.kwargs)
	if err != nil {
		return nil, err
	}
	bad := func(msg string) (any, error) {
		return nil, r.errAt(e.pos, "filter %s: %s", e.name, msg)
	}
	switch e.name {
	case "tojson":
		indent := ""
		if v, ok := kwargs["indent"]; ok && v != nil {
			n, _, isInt, ok := num(v)
			if !ok || !isInt || n < 0 {
				return bad("indent must be a non-negative integer")
			}
			indent = strings.Repeat(" ", int(n))
		} else if len(args) > 0 && args[0] != nil {
			n, _, isInt, ok := num(args[0])
			if !ok || !isInt || n < 0 {
				return bad("indent must be a non-negative integer")
			}
			indent = strings.Repeat(" ", int(n))
		}
		_, hasIndent := kwargs["indent"]
		hasIndent = (hasIndent && kwargs["indent"] != nil) || (len(args) > 0 && args[0] != nil)
		itemSep, keySep := ", ", ": "
		if hasIndent {
			itemSep = ","
		}
		if v, ok := kwargs["separators"]; ok && v != nil {
			l, ok := v.([]any)
			if !ok || len(l) != 2 {
				return bad("separators must be a pair of strings")
			}
			a, ok1 := l[0].(string)
			b, ok2 := l[1].(string)
			if !ok1 || !ok2 {
				return bad("separators must be a pair of strings")
			}
			itemSep, keySep = a, b
		}
		if v, ok := kwargs["ensure_ascii"]; ok && truthy(v) {
			return bad("ensure_ascii=True is not supported")
		}
		var sb strings.Builder
		if hasIndent {
			if err := toJSONIndent(&sb, x, indent, itemSep, keySep, truthy(kwargs["sort_keys"]), 0); err != nil {
				return nil, r.errAt(e.pos, "%v", err)
			}
		} else if err := toJSON(&sb, x, "", itemSep, keySep, truthy(kwargs["sort_keys"]), 0); err != nil {
			return nil, r.errAt(e.pos, "%v", err)
		}
		return sb.String(), nil
	case "length", "count":
		switch v := unTuple(x).(type) {
		case string:
			return int64(utf8.RuneCountInString(v)), nil
		case []any:
			return int64(len(v)), nil
		case *Dict:
			return int64(v.Len()), nil
		case undefined:
			return int64(0), nil
		}
		return bad("object of type " + typeName(x) + " has no len()")
	case "trim":
		s, ok := x.(string)
		if !ok {
			s = pyStr(x)
		}
		if len(args) > 0 {
			chars, ok := args[0].(string)
			if !ok {
				return bad("chars must be a string")
			}
			return strings.Trim(s, chars), nil
		}
		return strings.TrimSpace(s), nil
	case "string":
		return pyStr(x), nil
	case "safe", "e", "escape":
		if e.name == "safe" {
			return x, nil
		}
		return bad("HTML escaping is not supported (chat templates render without autoescape)")
	case "lower":
		return strings.ToLower(pyStr(x)), nil
	case "upper":
		return strings.ToUpper(pyStr(x)), nil
	case "title":
		return pyTitle(pyStr(x)), nil
	case "capitalize":
		return pyCapitalize(pyStr(x)), nil
	case "replace":
		if len(args) < 2 {
			return bad("needs old and new strings")
		}
		return r.callMethod(boundMethod{pyStr(x), "replace"}, args, nil, e.pos)
	case "join":
		items, err := r.iterate(x, e.pos)
		if err != nil {
			return nil, err
		}
		sep := ""
		if len(args) > 0 {
			sep = pyStr(args[0])
		}
		attr, _ := kwargs["attribute"].(string)
		parts := make([]string, len(items))
		for i, it := range items {
			if attr != "" {
				if it, err = r.getAttr(it, attr, e.pos); err != nil {
					return nil, err
				}
			}
			parts[i] = pyStr(it)
		}
		if joinedLen(parts, sep) > maxRenderOutput {
			return bad("result too large")
		}
		return strings.Join(parts, sep), nil
	case "default", "d":
		def := any("")
		if len(args) > 0 {
			def = args[0]
		}
		boolean := (len(args) > 1 && truthy(args[1])) || truthy(kwargs["boolean"])
		if _, isUndef := x.(undefined); isUndef || (boolean && !truthy(x)) {
			return def, nil
		}
		return x, nil
	case "first", "last":
		items, err := r.iterate(x, e.pos)
		if err != nil {
			return nil, err
		}
		if len(items) == 0 {
			return undefined{e.name}, nil
		}
		if e.name == "first" {
			return items[0], nil
		}
		return items[len(items)-1], nil
	case "list":
		items, err := r.iterate(x, e.pos)
		if err != nil {
			return nil, err
		}
		return append([]any{}, items...), nil
	case "reverse":
		if s, ok := x.(string); ok {
			rs := []rune(s)
			for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
				rs[i], rs[j] = rs[j], rs[i]
			}
			return string(rs), nil
		}
		items, err := r.iterate(x, e.pos)
		if err != nil {
			return nil, err
		}
		out := make([]any, len(items))
		for i, it := range items {
			out[len(items)-1-i] = it
		}
		return out, nil
	case "items":
		d, ok := x.(*Dict)
		if !ok {
			if _, u := x.(undefined); u {
				return []any{}, nil
			}
			return bad("needs a mapping")
		}
		return r.callMethod(boundMethod{d, "items"}, nil, nil, e.pos)
	case "unique":
		items, err := r.iterate(x, e.pos)
		if err != nil {
			return nil, err
		}
		var out []any
		for _, it := range items {
			dup := false
			for _, o := range out {
				dup = dup || equal(o, it)
			}
			if !dup {
				out = append(out, it)
			}
		}
		return out, nil
	case "int":
		switch v := x.(type) {
		case int64:
			return v, nil
		case bool:
			return b2i(v), nil
		case float64:
			return int64(v), nil
		case string:
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				return n, nil
			}
			if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
				return int64(f), nil
			}
		}
		if len(args) > 0 {
			return args[0], nil
		}
		return int64(0), nil
	case "float":
		switch v := x.(type) {
		case int64:
			return float64(v), nil
		case float64:
			return v, nil
		case bool:
			return float64(b2i(v)), nil
		case string:
			if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
				return f, nil
			}
		}
		return 0.0, nil
	case "abs":
		switch v := x.(type) {
		case int64:
			if v < 0 {
				return -v, nil
			}
			return v, nil
		case float64:
			return math.Abs(v), nil
		}
		return bad("needs a number")
	case "selectattr", "rejectattr":
		items, err := r.iterate(x, e.pos)
		if err != nil {
			return nil, err
		}
		if len(args) < 1 {
			return bad("needs an attribute name")
		}
		attr, ok := args[0].(string)
		if !ok {
			return bad("attribute name must be a string")
		}
		var out []any
		for _, it := range items {
			v, err := r.getAttr(it, attr, e.pos)
			if err != nil {
				return nil, err
			}
			keep := truthy(v)
			if len(args) > 1 {
				test, ok := args[1].(string)
				if !ok {
					return bad("test name must be a string")
				}
				if keep, err = r.applyTest(test, v, args[2:], e.pos); err != nil {
					return nil, err
				}
			}
			if keep == (e.name == "selectattr") {
				out = append(out, it)
			}
		}
		return out, nil
	case "map":
		items, err := r.iterate(x, e.pos)
		if err != nil {
			return nil, err
		}
		attr, ok := kwargs["attribute"].(string)
		if !ok {
			return bad("only map(attribute=...) is supported")
		}
		out := make([]any, len(items))
		for i, it := range items {
			v, err := r.getAttr(it, attr, e.pos)
			if err != nil {
				return nil, err
			}
			if _, u := v.(undefined); u {
				if d, ok := kwargs["default"]; ok {
					v = d
				}
			}
			out[i] = v
		}
		return out, nil
	}
	return nil, r.errAt(e.pos, "unsupported construct: filter %q", e.name)
}

func (r *renderer) evalTest(e testExpr) (bool, error) {
	x, err := r.eval(e.x)
	if err != nil {
		return false, err
	}
	args := make([]any, len(e.args))
	for i, a := range e.args {
		if args[i], err = r.eval(a); err != nil {
			return false, err
		}
	}
	return r.applyTest(e.name, x, args, e.pos)
}

func (r *renderer) applyTest(name string, x any, args []any, pos int) (bool, error) {
	_, isUndef := x.(undefined)
	need := func(n int) error {
		if len(args) != n {
			return r.errAt(pos, "test %q takes %d argument(s)", name, n)
		}
		return nil
	}
	switch name {
	case "defined":
		return !isUndef, nil
	case "undefined":
		return isUndef, nil
	case "none":
		return x == nil, nil
	case "string":
		_, ok := x.(string)
		return ok, nil
	case "number":
		switch x.(type) {
		case int64, float64, bool:
			return true, nil
		}
		return false, nil
	case "integer":
		_, ok := x.(int64)
		return ok, nil
	case "float":
		_, ok := x.(float64)
		return ok, nil
	case "boolean":
		_, ok := x.(bool)
		return ok, nil
	case "true":
		b, ok := x.(bool)
		return ok && b, nil
	case "false":
		b, ok := x.(bool)
		return ok && !b, nil
	case "mapping":
		_, ok := x.(*Dict)
		return ok, nil
	case "sequence", "iterable":
		switch unTuple(x).(type) {
		case string, []any, *Dict:
			return true, nil
		case undefined:
			return name == "iterable", nil
		}
		return false, nil
	case "callable":
		switch x.(type) {
		case builtin, boundMethod:
			return true, nil
		}
		return false, nil
	case "eq", "equalto", "==", "ne", "!=":
		if err := need(1); err != nil {
			return false, err
		}
		eq := equal(x, args[0])
		if name == "ne" || name == "!=" {
			return !eq, nil
		}
		return eq, nil
	case "in":
		if err := need(1); err != nil {
			return false, err
		}
		return r.contains(args[0], x, pos)
	case "divisibleby", "even", "odd":
		n, _, isInt, ok := num(x)
		if !ok || !isInt {
			return false, r.errAt(pos, "test %q needs an integer", name)
		}
		switch name {
		case "even":
			return n%2 == 0, nil
		case "odd":
			return n%2 != 0, nil
		}
		if err := need(1); err != nil {
			return false, err
		}
		d, _, isInt, ok := num(args[0])
		if !ok || !isInt || d == 0 {
			return false, r.errAt(pos, "divisibleby needs a non-zero integer")
		}
		return n%d == 0, nil
	}
	return false, r.errAt(pos, "unsupported construct: test %q", name)
}

// toJSONIndent is toJSON with Python's indented layout: newline and indent
// before each item, item separator without trailing space.
func toJSONIndent(sb *strings.Builder, v any, indent, itemSep, keySep string, sortKeys bool, depth int) error {
	if depth > 200 {
		return errTooDeep
	}
	pad := func(d int) { sb.WriteByte('\n'); sb.WriteString(strings.Repeat(indent, d)) }
	switch x := unTuple(v).(type) {
	case []any:
		if len(x) == 0 {
			sb.WriteString("[]")
			return nil
		}
		sb.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				sb.WriteString(itemSep)
			}
			pad(depth + 1)
			if err := toJSONIndent(sb, e, indent, itemSep, keySep, sortKeys, depth+1); err != nil {
				return err
			}
		}
		pad(depth)
		sb.WriteByte(']')
		return nil
	case *Dict:
		if x.Len() == 0 {
			sb.WriteString("{}")
			return nil
		}
		keys := x.Keys()
		if sortKeys {
			sortStrings(keys)
		}
		sb.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				sb.WriteString(itemSep)
			}
			pad(depth + 1)
			jsonString(sb, k)
			sb.WriteString(keySep)
			if err := toJSONIndent(sb, x.m[k], indent, itemSep, keySep, sortKeys, depth+1); err != nil {
				return err
			}
		}
		pad(depth)
		sb.WriteByte('}')
		return nil
	}
	return toJSON(sb, v, "", itemSep, keySep, sortKeys, depth)
}
