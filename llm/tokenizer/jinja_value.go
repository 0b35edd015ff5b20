package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Dict is an insertion-ordered string-keyed map, the template value of a
// JSON object or Python dict. Order matters for tojson output.
type Dict struct {
	keys []string
	m    map[string]any
	ns   bool // a namespace(): attributes may be assigned
}

// NewDict returns an empty Dict.
func NewDict() *Dict { return &Dict{m: map[string]any{}} }

// Set sets key to v, appending key if it is new.
func (d *Dict) Set(key string, v any) {
	if _, ok := d.m[key]; !ok {
		d.keys = append(d.keys, key)
	}
	d.m[key] = v
}

// Get returns the value of key.
func (d *Dict) Get(key string) (any, bool) {
	v, ok := d.m[key]
	return v, ok
}

// Keys returns the keys in insertion order.
func (d *Dict) Keys() []string { return append([]string(nil), d.keys...) }

// Len is the number of keys.
func (d *Dict) Len() int { return len(d.keys) }

// tuple is a Python tuple: a list that prints with parentheses.
type tuple []any

// unTuple returns a tuple as a plain list, other values unchanged.
func unTuple(v any) any {
	if t, ok := v.(tuple); ok {
		return []any(t)
	}
	return v
}

// undefined is Jinja2's Undefined: printing it gives "", it is false and
// iterates as empty; most other uses are errors.
type undefined struct{ name string }

// builtin is a callable template value.
type builtin func(r *renderer, args []any, kwargs map[string]any, pos int) (any, error)

// boundMethod is a method looked up on a value, called later.
type boundMethod struct {
	recv any
	name string
}

// JSONValue decodes JSON into template values: objects become *Dict with
// key order kept, arrays []any, integers int64, other numbers float64.
func JSONValue(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := jsonValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, fmt.Errorf("json: trailing data after value")
	}
	return v, nil
}

func jsonValue(dec *json.Decoder) (any, error) {
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch x := t.(type) {
	case json.Delim:
		switch x {
		case '{':
			d := NewDict()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := jsonValue(dec)
				if err != nil {
					return nil, err
				}
				d.Set(k, v)
			}
			_, err := dec.Token()
			return d, err
		case '[':
			l := []any{}
			for dec.More() {
				v, err := jsonValue(dec)
				if err != nil {
					return nil, err
				}
				l = append(l, v)
			}
			_, err := dec.Token()
			return l, err
		}
		return nil, fmt.Errorf("json: unexpected %v", x)
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return i, nil
		}
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return nil, fmt.Errorf("json: bad number %s", x)
		}
		return f, nil
	default:
		return x, nil // string, bool, nil
	}
}

// toValue converts Go values to template values. Go maps become Dicts with
// sorted keys (Go maps have no order); structs are not supported.
func toValue(v any) (any, error) {
	switch x := v.(type) {
	case nil, bool, string, int64, float64, *Dict, undefined, builtin:
		return x, nil
	case int:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case float32:
		return float64(x), nil
	case Message:
		d := NewDict()
		d.Set("role", x.Role)
		d.Set("content", x.Content)
		return d, nil
	case []Message:
		l := make([]any, len(x))
		for i, m := range x {
			l[i], _ = toValue(m)
		}
		return l, nil
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			c, err := toValue(e)
			if err != nil {
				return nil, err
			}
			l[i] = c
		}
		return l, nil
	case json.RawMessage:
		return JSONValue(x)
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		l := make([]any, rv.Len())
		for i := range l {
			c, err := toValue(rv.Index(i).Interface())
			if err != nil {
				return nil, err
			}
			l[i] = c
		}
		return l, nil
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return nil, fmt.Errorf("unsupported map key type %s", rv.Type().Key())
		}
		keys := make([]string, 0, rv.Len())
		for _, k := range rv.MapKeys() {
			keys = append(keys, k.String())
		}
		sort.Strings(keys)
		d := NewDict()
		for _, k := range keys {
			c, err := toValue(rv.MapIndex(reflect.ValueOf(k).Convert(rv.Type().Key())).Interface())
			if err != nil {
				return nil, err
			}
			d.Set(k, c)
		}
		return d, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int(), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return int64(rv.Uint()), nil
	case reflect.Float32, reflect.Float64:
		return rv.Float(), nil
	case reflect.String:
		return rv.String(), nil
	case reflect.Bool:
		return rv.Bool(), nil
	case reflect.Pointer:
		if rv.IsNil() {
			return nil, nil
		}
		return toValue(rv.Elem().Interface())
	}
	return nil, fmt.Errorf("unsupported Go value of type %T", v)
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "NoneType"
	case undefined:
		return "Undefined"
	case bool:
		return "bool"
	case int64:
		return "int"
	case float64:
		return "float"
	case string:
		return "str"
	case []any:
		return "list"
	case tuple:
		return "tuple"
	case *Dict:
		return "dict"
	case builtin, boundMethod:
		return "function"
	case *loopVar:
		return "LoopContext"
	}
	return fmt.Sprintf("%T", v)
}

func truthy(v any) bool {
	switch x := unTuple(v).(type) {
	case nil, undefined:
		return false
	case bool:
		return x
	case int64:
		return x != 0
	case float64:
		return x != 0
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case *Dict:
		return x.Len() > 0
	}
	return true
}

// pyFloat formats f as Python's repr does.
func pyFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX
	mant, expS, _ := strings.Cut(s, "e")
	exp, _ := strconv.Atoi(expS)
	neg := strings.HasPrefix(mant, "-")
	mant = strings.TrimPrefix(mant, "-")
	digits := strings.Replace(mant, ".", "", 1)
	sign := ""
	if neg {
		sign = "-"
	}
	if exp < -4 || exp >= 16 {
		m := digits[:1]
		if len(digits) > 1 {
			m += "." + digits[1:]
		}
		es := "+"
		if exp < 0 {
			es = "-"
			exp = -exp
		}
		return fmt.Sprintf("%s%se%s%02d", sign, m, es, exp)
	}
	if exp < 0 {
		return sign + "0." + strings.Repeat("0", -exp-1) + digits
	}
	if len(digits) <= exp+1 {
		return sign + digits + strings.Repeat("0", exp+1-len(digits)) + ".0"
	}
	return sign + digits[:exp+1] + "." + digits[exp+1:]
}

// pyStr is Python's str() of a value; undefined prints as "".
func pyStr(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case undefined:
		return ""
	}
	return pyRepr(v)
}

// pyRepr is Python's repr() of a value.
func pyRepr(v any) string {
	switch x := v.(type) {
	case nil:
		return "None"
	case undefined:
		return ""
	case bool:
		if x {
			return "True"
		}
		return "False"
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return pyFloat(x)
	case string:
		return pyQuote(x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = pyRepr(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case tuple:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = pyRepr(e)
		}
		if len(x) == 1 {
			return "(" + parts[0] + ",)"
		}
		return "(" + strings.Join(parts, ", ") + ")"
	case *Dict:
		parts := make([]string, len(x.keys))
		for i, k := range x.keys {
			parts[i] = pyQuote(k) + ": " + pyRepr(x.m[k])
		}
		if x.ns {
			return "<Namespace {" + strings.Join(parts, ", ") + "}>"
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprintf("<%s>", typeName(v))
}

func pyQuote(s string) string {
	q := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		q = '"'
	}
	var sb strings.Builder
	sb.WriteByte(q)
	for _, r := range s {
		switch {
		case r == rune(q) || r == '\\':
			sb.WriteByte('\\')
			sb.WriteRune(r)
		case r == '\n':
			sb.WriteString(`\n`)
		case r == '\r':
			sb.WriteString(`\r`)
		case r == '\t':
			sb.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&sb, `\x%02x`, r)
		default:
			sb.WriteRune(r)
		}
	}
	sb.WriteByte(q)
	return sb.String()
}

var errTooDeep = fmt.Errorf("tojson: value nested too deeply")

func sortStrings(s []string) { sort.Strings(s) }

// toJSON writes v on one line as Python's json.dumps(v, ensure_ascii=False,
// separators, sort_keys) does; toJSONIndent handles indent.
func toJSON(sb *strings.Builder, v any, indent string, itemSep, keySep string, sortKeys bool, depth int) error {
	if depth > 200 {
		return errTooDeep
	}
	switch x := unTuple(v).(type) {
	case nil:
		sb.WriteString("null")
	case bool:
		if x {
			sb.WriteString("true")
		} else {
			sb.WriteString("false")
		}
	case int64:
		sb.WriteString(strconv.FormatInt(x, 10))
	case float64:
		switch {
		case math.IsNaN(x):
			sb.WriteString("NaN")
		case math.IsInf(x, 1):
			sb.WriteString("Infinity")
		case math.IsInf(x, -1):
			sb.WriteString("-Infinity")
		default:
			sb.WriteString(pyFloat(x))
		}
	case string:
		jsonString(sb, x)
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
			if err := toJSON(sb, e, indent, itemSep, keySep, sortKeys, depth+1); err != nil {
				return err
			}
		}
		sb.WriteByte(']')
	case *Dict:
		if x.Len() == 0 {
			sb.WriteString("{}")
			return nil
		}
		keys := x.keys
		if sortKeys {
			keys = append([]string(nil), keys...)
			sort.Strings(keys)
		}
		sb.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				sb.WriteString(itemSep)
			}
			jsonString(sb, k)
			sb.WriteString(keySep)
			if err := toJSON(sb, x.m[k], indent, itemSep, keySep, sortKeys, depth+1); err != nil {
				return err
			}
		}
		sb.WriteByte('}')
	default:
		return fmt.Errorf("tojson: object of type %s is not JSON serializable", typeName(v))
	}
	return nil
}

func jsonString(sb *strings.Builder, s string) {
	sb.WriteByte('"')
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '"':
			sb.WriteString(`\"`)
		case r == '\\':
			sb.WriteString(`\\`)
		case r == '\n':
			sb.WriteString(`\n`)
		case r == '\r':
			sb.WriteString(`\r`)
		case r == '\t':
			sb.WriteString(`\t`)
		case r == '\b':
			sb.WriteString(`\b`)
		case r == '\f':
			sb.WriteString(`\f`)
		case r < 0x20:
			fmt.Fprintf(sb, `\u%04x`, r)
		default:
			sb.WriteString(s[i : i+n])
		}
		i += n
	}
	sb.WriteByte('"')
}
