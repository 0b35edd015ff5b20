package tokenizer

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"ragen/llm/tokenizer/internal/jinja"
)

// Template is a compiled chat template. Templates are compiled and rendered
// by a copy of github.com/ardanlabs/jinja v1.8.0 (internal/jinja), a Jinja
// engine written for Hugging Face chat templates, with the settings
// transformers uses (trim_blocks, lstrip_blocks, loop controls, tojson with
// ensure_ascii off and insertion key order). On top of the engine, range()
// is bounded as in Jinja2's sandbox (at most 100,000 items), tojson with
// arguments (indent, sort_keys, separators) is Python's json.dumps keeping
// key order (see template_json.go), and every render is bounded by
// TemplateLimits, since a template comes with a downloaded model folder. A
// Template is safe for concurrent use.
type Template struct {
	src string
	t   *jinja.Template
	lim TemplateLimits
}

// TemplateLimits bound one render of a chat template, so that a hostile or
// broken template (a macro that calls itself, {{ 'x' * 300000000 }}, loops
// nested without end) fails with a *TemplateError naming the limit instead
// of exhausting the stack, memory or time. Zero fields take the defaults of
// DefaultTemplateLimits.
type TemplateLimits struct {
	// MaxDepth bounds the nesting of statements, expressions and macro
	// calls being evaluated, and of values printed or compared.
	MaxDepth int
	// MaxSteps bounds the statements, expressions, loop iterations and
	// value items visited.
	MaxSteps int64
	// MaxOutput bounds the output and any one string, in bytes.
	MaxOutput int64
	// MaxAlloc bounds the bytes of strings built and written in all.
	MaxAlloc int64
}

// DefaultTemplateLimits: a Qwen2.5 or Llama 3.1 conversation of a hundred
// turns with tools takes under 20,000 steps at depth 20, and the prompt of a
// million-token context is about 4 MiB; the limits are far above that, and
// a render that reaches them takes a few seconds at most.
var DefaultTemplateLimits = TemplateLimits{MaxDepth: 500, MaxSteps: 5_000_000, MaxOutput: 16 << 20, MaxAlloc: 256 << 20}

// WithLimits returns t rendering within lim (zero fields: the defaults).
func (t *Template) WithLimits(lim TemplateLimits) *Template {
	c := *t
	c.lim = lim
	return &c
}

// TemplateError is a chat-template parse or render error. Msg is the
// engine's message, which names the construct and, for parse errors, its
// line and column. Err is the cause where there is one to test with
// errors.Is or errors.As (the context's error when a render is stopped).
type TemplateError struct {
	Msg string
	Err error
}

func (e *TemplateError) Error() string { return "chat template: " + e.Msg }

func (e *TemplateError) Unwrap() error { return e.Err }

// ParseTemplate compiles Jinja source. Syntax errors are *TemplateError.
func ParseTemplate(src string) (t *Template, err error) {
	defer func() {
		if r := recover(); r != nil {
			t, err = nil, &TemplateError{Msg: fmt.Sprintf("internal error while parsing: %v", r)}
		}
	}()
	// The source is compiled once as written, so that syntax errors name
	// the user's lines, columns and tokens (the engine's call-argument
	// parser would accept "{{ a ; b }}" once wrapped in __ragen_str( )),
	// and then rewritten (rewriteTags: Python's str() and tojson with
	// arguments).
	norm := leadingBlockIndent(normalizeSource(src))
	if _, err := jinja.Compile(sentinel + norm); err != nil {
		return nil, &TemplateError{Msg: err.Error()}
	}
	jt, err := jinja.Compile(sentinel + rewriteTags(norm))
	if err != nil {
		return nil, &TemplateError{Msg: err.Error()}
	}
	return &Template{src: src, t: jt}, nil
}

// normalizeSource applies Jinja2's lexer defaults, which the engine leaves
// out: newlines ("\r\n", "\r") become "\n" and one trailing newline is
// dropped (keep_trailing_newline=False).
func normalizeSource(src string) string {
	if strings.ContainsRune(src, '\r') {
		src = strings.ReplaceAll(src, "\r\n", "\n")
		src = strings.ReplaceAll(src, "\r", "\n")
	}
	return strings.TrimSuffix(src, "\n")
}

// sentinel is prepended to every template so that the first text segment
// the engine sees is at the template start. ardanlabs/jinja v1.8.0 treats
// the first text segment as the start of the template even when tags come
// before it, so in "{% for %}{{ x }} {% endfor %}" it strips the " " that
// Jinja2's lstrip_blocks keeps. Render removes the sentinel.
const sentinel = "\x00"

// leadingBlockIndent drops spaces and tabs at the very start of src when a
// block or comment tag follows: Jinja2's lstrip_blocks removes them there,
// and with the sentinel in front the engine would no longer see them at the
// template start.
func leadingBlockIndent(src string) string {
	rest := strings.TrimLeft(src, " \t")
	if len(rest) == len(src) || len(rest) < 3 {
		return src
	}
	if (strings.HasPrefix(rest, "{%") || strings.HasPrefix(rest, "{#")) && rest[2] != '+' {
		return rest
	}
	return src
}

// Source returns the template source.
func (t *Template) Source() string { return t.src }

// maxRange is Jinja2's sandbox limit on range() (jinja2.sandbox.MAX_RANGE).
const maxRange = 100_000

// rangeFn replaces the engine's range() with one bounded as Jinja2's sandbox
// bounds it, so a template cannot allocate an unbounded list.
var rangeFn = jinja.NewCallable("range", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) < 1 || len(args) > 3 {
		return jinja.Undefined(), fmt.Errorf("range expected 1 to 3 arguments, got %d", len(args))
	}
	n := make([]int64, len(args))
	for i, a := range args {
		if !a.IsInt() && !a.IsBool() {
			return jinja.Undefined(), fmt.Errorf("range: %s object cannot be interpreted as an integer", pyType(a))
		}
		if a.IsBool() {
			if a.AsBool() {
				n[i] = 1
			}
		} else {
			n[i] = a.AsInt()
		}
	}
	start, stop, step := int64(0), n[0], int64(1)
	if len(n) >= 2 {
		start, stop = n[0], n[1]
	}
	if len(n) == 3 {
		step = n[2]
	}
	if step == 0 {
		return jinja.Undefined(), fmt.Errorf("range() arg 3 must not be zero")
	}
	var count int64
	switch {
	case step > 0 && stop > start:
		count = (stop - start + step - 1) / step
	case step < 0 && stop < start:
		count = (start - stop - step - 1) / -step
	}
	if count > maxRange {
		return jinja.Undefined(), fmt.Errorf("range too big: %d items, the limit is %d (Jinja2 sandbox MAX_RANGE)", count, maxRange)
	}
	items := make([]jinja.Value, count)
	for i := range items {
		items[i] = jinja.NewInt(start + int64(i)*step)
	}
	return jinja.NewList(items), nil
})

// pyType is the Python type name of an engine value, for error messages.
func pyType(v jinja.Value) string {
	switch {
	case v.IsUndefined():
		return "Undefined"
	case v.IsNone():
		return "NoneType"
	case v.IsBool():
		return "bool"
	case v.IsInt():
		return "int"
	case v.IsFloat():
		return "float"
	case v.IsString():
		return "str"
	case v.IsList():
		return "list"
	case v.IsDict():
		return "dict"
	}
	return "function"
}

// Render renders the template with vars as the global variables. Values may
// be Go scalars, slices, string-keyed maps (rendered with sorted keys),
// Message, []Message, *Dict (ordered), json.RawMessage or values from
// JSONValue.
func (t *Template) Render(vars map[string]any) (s string, err error) {
	return t.RenderContext(context.Background(), vars)
}

// RenderContext is Render stopped with an error when ctx is done.
func (t *Template) RenderContext(ctx context.Context, vars map[string]any) (s string, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = "", &TemplateError{Msg: fmt.Sprintf("internal error while rendering: %v", r)}
		}
	}()
	data := make(map[string]jinja.Value, len(vars)+2+len(pyStrFns))
	l, d := t.lim, DefaultTemplateLimits
	lim := jinja.Limits{MaxDepth: cmp.Or(max(l.MaxDepth, 0), d.MaxDepth), MaxSteps: cmp.Or(max(l.MaxSteps, 0), d.MaxSteps),
		MaxString: cmp.Or(max(l.MaxOutput, 0), d.MaxOutput), MaxAlloc: cmp.Or(max(l.MaxAlloc, 0), d.MaxAlloc)}
	data["range"] = rangeFn
	data[jsonDumpsName] = newJSONDumps(lim.MaxString)
	for k, f := range pyStrFns {
		data[k] = f
	}
	for k, v := range vars {
		jv, err := toJinja(v)
		if err != nil {
			return "", fmt.Errorf("chat template: variable %q: %w", k, err)
		}
		data[k] = jv
	}
	out, err := t.t.RenderValuesContext(ctx, lim, data)
	if err != nil {
		return "", &TemplateError{Msg: err.Error(), Err: err}
	}
	rest, ok := strings.CutPrefix(out, sentinel)
	if !ok {
		return "", &TemplateError{Msg: "internal error: rendered output lost its start marker"}
	}
	return rest, nil
}

// Dict is an insertion-ordered string-keyed map, the template value of a
// JSON object or Python dict. Order matters for tojson output.
type Dict struct {
	keys []string
	m    map[string]any
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

// JSONValue decodes JSON into template values: objects become *Dict with
// key order kept, arrays []any, integers int64, other numbers float64.
func JSONValue(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := jsonValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, fmt.Errorf("json: trailing data after value")
	}
	return v, nil
}

// maxJSONDepth bounds nesting so hostile input cannot exhaust the stack.
const maxJSONDepth = 1000

func jsonValue(dec *json.Decoder, depth int) (any, error) {
	if depth > maxJSONDepth {
		return nil, fmt.Errorf("json: nested deeper than %d", maxJSONDepth)
	}
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
				v, err := jsonValue(dec, depth+1)
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
				v, err := jsonValue(dec, depth+1)
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

// toJinja converts Go values to engine values. *Dict and Message keep their
// key order; Go maps get sorted keys (Go maps have no order).
func toJinja(v any) (jinja.Value, error) {
	switch x := v.(type) {
	case nil:
		return jinja.None(), nil
	case jinja.Value:
		return x, nil
	case bool:
		return jinja.NewBool(x), nil
	case string:
		return jinja.NewString(x), nil
	case int:
		return jinja.NewInt(int64(x)), nil
	case int64:
		return jinja.NewInt(x), nil
	case float64:
		return jinja.NewFloat(x), nil
	case Message:
		d := jinja.NewDict()
		d.AsDict().Set("role", jinja.NewString(x.Role))
		d.AsDict().Set("content", jinja.NewString(x.Content))
		return d, nil
	case *Dict:
		if x == nil {
			return jinja.None(), nil
		}
		d := jinja.NewDict()
		for _, k := range x.keys {
			c, err := toJinja(x.m[k])
			if err != nil {
				return jinja.Value{}, fmt.Errorf("key %q: %w", k, err)
			}
			d.AsDict().Set(k, c)
		}
		return d, nil
	case json.RawMessage:
		j, err := JSONValue(x)
		if err != nil {
			return jinja.Value{}, err
		}
		return toJinja(j)
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		items := make([]jinja.Value, rv.Len())
		for i := range items {
			c, err := toJinja(rv.Index(i).Interface())
			if err != nil {
				return jinja.Value{}, fmt.Errorf("item %d: %w", i, err)
			}
			items[i] = c
		}
		return jinja.NewList(items), nil
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return jinja.Value{}, fmt.Errorf("unsupported map key type %s", rv.Type().Key())
		}
		keys := make([]string, 0, rv.Len())
		vals := map[string]any{}
		for it := rv.MapRange(); it.Next(); {
			k := it.Key().String()
			keys = append(keys, k)
			vals[k] = it.Value().Interface()
		}
		sort.Strings(keys)
		d := jinja.NewDict()
		for _, k := range keys {
			c, err := toJinja(vals[k])
			if err != nil {
				return jinja.Value{}, fmt.Errorf("key %q: %w", k, err)
			}
			d.AsDict().Set(k, c)
		}
		return d, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return jinja.NewInt(rv.Int()), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		u := rv.Uint()
		if u > math.MaxInt64 {
			return jinja.Value{}, fmt.Errorf("integer %d out of range", u)
		}
		return jinja.NewInt(int64(u)), nil
	case reflect.Float32, reflect.Float64:
		return jinja.NewFloat(rv.Float()), nil
	case reflect.String:
		return jinja.NewString(rv.String()), nil
	case reflect.Bool:
		return jinja.NewBool(rv.Bool()), nil
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return jinja.None(), nil
		}
		return toJinja(rv.Elem().Interface())
	}
	return jinja.Value{}, fmt.Errorf("unsupported Go value of type %T", v)
}
