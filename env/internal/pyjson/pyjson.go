// Package pyjson decodes JSON the way Python's json.loads does and prints
// the result the way Python's str() and repr() do, for envs whose
// observations show server replies verbatim (service-envs.md).
//
// Decoded values are nil, bool, Int (Python int), float64, string, []any
// and *Object (keys in document order, as a Python dict keeps them).
// Errors carry json.JSONDecodeError's message, e.g. "Expecting value: line
// 1 column 1 (char 0)".
package pyjson

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf16"

	"ragen/internal/pystr"
)

// Int is a Python int, kept as its decimal text (JSON ints are unbounded).
type Int string

// Float returns the int as a float64 (what Python's float() gives).
func (i Int) Float() float64 {
	f, _ := strconv.ParseFloat(string(i), 64)
	return f
}

// Object is a Python dict decoded from a JSON object: Keys in first-seen
// order, a repeated key keeps its first position and its last value.
type Object struct {
	Keys []string
	Vals map[string]any
}

// Get returns the value of key k and whether it is present.
func (o *Object) Get(k string) (any, bool) {
	v, ok := o.Vals[k]
	return v, ok
}

// Error is a json.JSONDecodeError.
type Error struct {
	Msg string // e.g. "Expecting value"
	Pos int    // code-point offset
	doc []rune
}

func (e *Error) Error() string {
	line, col := 1, e.Pos+1
	for i := 0; i < e.Pos && i < len(e.doc); i++ {
		if e.doc[i] == '\n' {
			line++
			col = e.Pos - i
		}
	}
	return fmt.Sprintf("%s: line %d column %d (char %d)", e.Msg, line, col, e.Pos)
}

type decoder struct {
	s []rune
}

func (d *decoder) fail(msg string, pos int) *Error { return &Error{Msg: msg, Pos: pos, doc: d.s} }

func (d *decoder) ws(i int) int {
	for i < len(d.s) && (d.s[i] == ' ' || d.s[i] == '\t' || d.s[i] == '\n' || d.s[i] == '\r') {
		i++
	}
	return i
}

// Decode is json.loads(text).
func Decode(text string) (any, error) {
	d := &decoder{s: []rune(text)}
	i := d.ws(0)
	v, end, err := d.value(i)
	if err != nil {
		return nil, err
	}
	if end = d.ws(end); end != len(d.s) {
		return nil, d.fail("Extra data", end)
	}
	return v, nil
}

func (d *decoder) has(i int, lit string) bool {
	r := []rune(lit)
	if i+len(r) > len(d.s) {
		return false
	}
	for k, c := range r {
		if d.s[i+k] != c {
			return false
		}
	}
	return true
}

// value scans one value at i; a missing value is "Expecting value" at i.
func (d *decoder) value(i int) (any, int, error) {
	if i >= len(d.s) {
		return nil, i, d.fail("Expecting value", i)
	}
	switch c := d.s[i]; {
	case c == '"':
		return d.str(i + 1)
	case c == '{':
		return d.object(i + 1)
	case c == '[':
		return d.array(i + 1)
	case c == 'n' && d.has(i, "null"):
		return nil, i + 4, nil
	case c == 't' && d.has(i, "true"):
		return true, i + 4, nil
	case c == 'f' && d.has(i, "false"):
		return false, i + 5, nil
	case c == 'N' && d.has(i, "NaN"):
		return math.NaN(), i + 3, nil
	case c == 'I' && d.has(i, "Infinity"):
		return math.Inf(1), i + 8, nil
	case c == '-' && d.has(i, "-Infinity"):
		return math.Inf(-1), i + 9, nil
	}
	return d.number(i)
}

func isDigit(r rune) bool { return r >= '0' && r <= '9' }

// number matches (-?(?:0|[1-9]\d*))(\.\d+)?([eE][-+]?\d+)? at i.
func (d *decoder) number(i int) (any, int, error) {
	j := i
	if j < len(d.s) && d.s[j] == '-' {
		j++
	}
	switch {
	case j < len(d.s) && d.s[j] == '0':
		j++
	case j < len(d.s) && isDigit(d.s[j]):
		for j < len(d.s) && isDigit(d.s[j]) {
			j++
		}
	default:
		return nil, i, d.fail("Expecting value", i)
	}
	intEnd, isFloat := j, false
	if j+1 < len(d.s) && d.s[j] == '.' && isDigit(d.s[j+1]) {
		j += 2
		for j < len(d.s) && isDigit(d.s[j]) {
			j++
		}
		isFloat = true
	}
	if j < len(d.s) && (d.s[j] == 'e' || d.s[j] == 'E') {
		k := j + 1
		if k < len(d.s) && (d.s[k] == '+' || d.s[k] == '-') {
			k++
		}
		if k < len(d.s) && isDigit(d.s[k]) {
			for k < len(d.s) && isDigit(d.s[k]) {
				k++
			}
			j, isFloat = k, true
		}
	}
	text := string(d.s[i:j])
	if !isFloat {
		n, _ := new(big.Int).SetString(string(d.s[i:intEnd]), 10)
		return Int(n.String()), j, nil
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && !math.IsInf(f, 0) { // overflow gives ±inf, as Python's float()
		return nil, i, d.fail("Expecting value", i)
	}
	return f, j, nil
}

func hex4(rs []rune) (rune, bool) {
	if len(rs) < 4 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(rs[:4]), 16, 32)
	if err != nil || strings.ContainsAny(string(rs[:4]), "+-xX_") {
		return 0, false
	}
	return rune(n), true
}

// str scans a string whose opening quote is at i-1.
func (d *decoder) str(i int) (any, int, error) {
	begin := i - 1
	var b strings.Builder
	for {
		if i >= len(d.s) {
			return nil, i, d.fail("Unterminated string starting at", begin)
		}
		c := d.s[i]
		switch {
		case c == '"':
			return b.String(), i + 1, nil
		case c < 0x20:
			return nil, i, d.fail("Invalid control character at", i)
		case c != '\\':
			b.WriteRune(c)
			i++
			continue
		}
		i++
		if i >= len(d.s) {
			return nil, i, d.fail("Unterminated string starting at", begin)
		}
		switch e := d.s[i]; e {
		case '"', '\\', '/':
			b.WriteRune(e)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, ok := hex4(d.s[i+1:])
			if !ok {
				return nil, i, d.fail("Invalid \\uXXXX escape", i-1)
			}
			i += 4
			if utf16.IsSurrogate(r) && r < 0xdc00 && i+2 < len(d.s) && d.s[i+1] == '\\' && d.s[i+2] == 'u' {
				if r2, ok := hex4(d.s[i+3:]); ok && r2 >= 0xdc00 && r2 <= 0xdfff {
					r = utf16.DecodeRune(r, r2)
					i += 6
				}
			}
			b.WriteRune(r)
		default:
			return nil, i, d.fail("Invalid \\escape", i-1)
		}
		i++
	}
}

func (d *decoder) object(i int) (any, int, error) {
	o := &Object{Vals: map[string]any{}}
	i = d.ws(i)
	if i < len(d.s) && d.s[i] == '}' {
		return o, i + 1, nil
	}
	for {
		if i >= len(d.s) || d.s[i] != '"' {
			return nil, i, d.fail("Expecting property name enclosed in double quotes", i)
		}
		k, j, err := d.str(i + 1)
		if err != nil {
			return nil, j, err
		}
		i = d.ws(j)
		if i >= len(d.s) || d.s[i] != ':' {
			return nil, i, d.fail("Expecting ':' delimiter", i)
		}
		i = d.ws(i + 1)
		v, j, err := d.value(i)
		if err != nil {
			return nil, j, err
		}
		key := k.(string)
		if _, dup := o.Vals[key]; !dup {
			o.Keys = append(o.Keys, key)
		}
		o.Vals[key] = v
		i = d.ws(j)
		if i < len(d.s) && d.s[i] == '}' {
			return o, i + 1, nil
		}
		if i >= len(d.s) || d.s[i] != ',' {
			return nil, i, d.fail("Expecting ',' delimiter", i)
		}
		i = d.ws(i + 1)
	}
}

func (d *decoder) array(i int) (any, int, error) {
	out := []any{}
	i = d.ws(i)
	if i < len(d.s) && d.s[i] == ']' {
		return out, i + 1, nil
	}
	for {
		v, j, err := d.value(i)
		if err != nil {
			return nil, j, err
		}
		out = append(out, v)
		i = d.ws(j)
		if i < len(d.s) && d.s[i] == ']' {
			return out, i + 1, nil
		}
		if i >= len(d.s) || d.s[i] != ',' {
			return nil, i, d.fail("Expecting ',' delimiter", i)
		}
		i = d.ws(i + 1)
	}
}

// TypeName is Python's type(v).__name__ for a decoded value.
func TypeName(v any) string {
	switch v.(type) {
	case nil:
		return "NoneType"
	case bool:
		return "bool"
	case Int, int, int64:
		return "int"
	case float64:
		return "float"
	case string:
		return "str"
	case []any:
		return "list"
	case *Object, map[string]any:
		return "dict"
	}
	return fmt.Sprintf("%T", v)
}

// Str is Python's str(v): strings as themselves, everything else as Repr.
func Str(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return Repr(v)
}

// Repr is Python's repr(v). It also accepts Go ints, json.Number (an int
// as its text, anything else as a float) and map[string]any (keys sorted,
// having no order of their own).
func Repr(v any) string {
	var b strings.Builder
	repr(&b, v)
	return b.String()
}

func repr(b *strings.Builder, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteString("None")
	case bool:
		if x {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case Int:
		b.WriteString(string(x))
	case int:
		b.WriteString(strconv.Itoa(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		b.WriteString(pystr.FloatRepr(x))
	case json.Number:
		if strings.ContainsAny(string(x), ".eE") {
			f, _ := x.Float64()
			b.WriteString(pystr.FloatRepr(f))
		} else {
			b.WriteString(string(x))
		}
	case string:
		b.WriteString(pystr.Quote(x))
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			repr(b, e)
		}
		b.WriteByte(']')
	case *Object:
		b.WriteByte('{')
		for i, k := range x.Keys {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(pystr.Quote(k))
			b.WriteString(": ")
			repr(b, x.Vals[k])
		}
		b.WriteByte('}')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sortStrings(keys)
		o := &Object{Keys: keys, Vals: x}
		repr(b, o)
	default:
		fmt.Fprint(b, x)
	}
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// Float is Python's float(v) for a decoded value: ok=false where Python
// raises (None, str that is not a number, list, dict).
func Float(v any) (float64, bool) {
	switch x := v.(type) {
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case Int:
		return x.Float(), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// Truthy is Python's bool() of a decoded value.
func Truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case *Object:
		return len(x.Keys) > 0
	}
	f, _ := Float(v)
	return f != 0
}
