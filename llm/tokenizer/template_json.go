package tokenizer

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"ragen/internal/pystr"
	"ragen/llm/tokenizer/internal/jinja"
)

// ardanlabs/jinja v1.8.0 encodes tojson with arguments through Go's
// encoding/json: tojson(indent=N) sorts the keys and escapes <, > and & as
// \u003c..., and sort_keys is ignored. Llama 3.1 and 3.2's tool templates
// print tool schemas with `t | tojson(indent=4)`. ParseTemplate therefore
// rewrites `operand | tojson(args)` (operand a name with attribute and
// subscript suffixes, the form these templates use) into a call of
// jsonDumps, which writes what transformers' tojson (json.dumps with
// ensure_ascii=False) writes. Plain `| tojson` stays with the engine, whose
// encoder already matches.

const jsonDumpsName = "__ragen_tojson"

var tojsonArgs = regexp.MustCompile(`([A-Za-z_]\w*(?:\.[A-Za-z_]\w*|\[[^\[\]{}%]*\])*)\s*\|\s*tojson\s*\(((?:[^()]|\([^()]*\))*)\)`)

// rewriteTojson applies the rewrite to the body of one {{ }} or {% %} tag
// (rewriteTags finds the tags).
func rewriteTojson(body string) string {
	if !strings.Contains(body, "tojson") {
		return body
	}
	return tojsonArgs.ReplaceAllString(body, jsonDumpsName+"($1, $2)")
}

// jsonDumps is Python's json.dumps(x, ensure_ascii=False, indent=None,
// separators=None, sort_keys=False) over engine values, keeping dict order.
// Its output is bounded by maxOut bytes.
func newJSONDumps(maxOut int64) jinja.Value {
	return jinja.NewCallable(jsonDumpsName, func(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
		return jsonDumps(args, kw, maxOut)
	})
}

func jsonDumps(args []jinja.Value, kw map[string]jinja.Value, maxOut int64) (jinja.Value, error) {
	if len(args) != 1 {
		return jinja.Undefined(), fmt.Errorf("tojson: expected one value, got %d", len(args))
	}
	e := jsonEnc{item: ", ", key: ": ", max: maxOut}
	for name, v := range kw {
		switch name {
		case "indent":
			switch {
			case v.IsNone() || v.IsUndefined():
			case v.IsInt():
				e.indent = strings.Repeat(" ", int(max(0, min(v.AsInt(), 64))))
				e.indented, e.item = true, ","
			case v.IsString():
				e.indent, e.indented, e.item = v.AsString(), true, ","
			default:
				return jinja.Undefined(), fmt.Errorf("tojson: indent must be an int or a string")
			}
		case "sort_keys":
			e.sort = v.IsTruthy()
		case "separators":
			if !v.IsList() || v.AsList().Len() != 2 || !v.AsList().Get(0).IsString() || !v.AsList().Get(1).IsString() {
				return jinja.Undefined(), fmt.Errorf("tojson: separators must be two strings")
			}
			e.item, e.key = v.AsList().Get(0).AsString(), v.AsList().Get(1).AsString()
		case "ensure_ascii":
			e.ascii = v.IsTruthy()
		default:
			return jinja.Undefined(), fmt.Errorf("tojson: unexpected keyword argument %q", name)
		}
	}
	if err := e.value(args[0], 0); err != nil {
		return jinja.Undefined(), err
	}
	if err := e.full(); err != nil {
		return jinja.Undefined(), err
	}
	return jinja.NewString(e.sb.String()), nil
}

type jsonEnc struct {
	sb          strings.Builder
	indent      string
	indented    bool
	item, key   string
	sort, ascii bool
	max         int64 // bytes of output
}

// full fails once the output is over e.max bytes.
func (e *jsonEnc) full() error {
	if int64(e.sb.Len()) > e.max {
		return fmt.Errorf("tojson: output over the %d-byte limit", e.max)
	}
	return nil
}

func (e *jsonEnc) newline(depth int) error {
	if e.indented {
		e.sb.WriteByte('\n')
		for range depth {
			if err := e.full(); err != nil {
				return err
			}
			e.sb.WriteString(e.indent)
		}
	}
	return nil
}

func (e *jsonEnc) value(v jinja.Value, depth int) error {
	if depth > 1000 {
		return fmt.Errorf("tojson: nested deeper than 1000")
	}
	if err := e.full(); err != nil {
		return err
	}
	switch {
	case v.IsNone() || v.IsUndefined():
		e.sb.WriteString("null")
	case v.IsBool():
		e.sb.WriteString(map[bool]string{true: "true", false: "false"}[v.AsBool()])
	case v.IsInt():
		e.sb.WriteString(strconv.FormatInt(v.AsInt(), 10))
	case v.IsFloat():
		e.sb.WriteString(pyFloatRepr(v.AsFloat()))
	case v.IsString():
		e.str(v.AsString())
	case v.IsList():
		items := v.AsList().Items
		if len(items) == 0 {
			e.sb.WriteString("[]")
			return nil
		}
		e.sb.WriteByte('[')
		for i, it := range items {
			if i > 0 {
				e.sb.WriteString(e.item)
			}
			if err := e.newline(depth + 1); err != nil {
				return err
			}
			if err := e.value(it, depth+1); err != nil {
				return err
			}
		}
		if err := e.newline(depth); err != nil {
			return err
		}
		e.sb.WriteByte(']')
	case v.IsDict():
		d := v.AsDict()
		keys := d.OrderedKeys()
		if len(keys) == 0 {
			e.sb.WriteString("{}")
			return nil
		}
		if e.sort {
			sort.Strings(keys)
		}
		e.sb.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				e.sb.WriteString(e.item)
			}
			if err := e.newline(depth + 1); err != nil {
				return err
			}
			e.str(k)
			e.sb.WriteString(e.key)
			val, _ := d.Get(k)
			if err := e.value(val, depth+1); err != nil {
				return err
			}
		}
		if err := e.newline(depth); err != nil {
			return err
		}
		e.sb.WriteByte('}')
	default:
		return fmt.Errorf("tojson: a %s is not JSON serializable", pyType(v))
	}
	return nil
}

// str writes s as Python's json.dumps does.
func (e *jsonEnc) str(s string) {
	e.sb.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			e.sb.WriteString(`\"`)
		case '\\':
			e.sb.WriteString(`\\`)
		case '\n':
			e.sb.WriteString(`\n`)
		case '\r':
			e.sb.WriteString(`\r`)
		case '\t':
			e.sb.WriteString(`\t`)
		case '\b':
			e.sb.WriteString(`\b`)
		case '\f':
			e.sb.WriteString(`\f`)
		default:
			switch {
			case r < 0x20 || (e.ascii && r == 0x7f):
				fmt.Fprintf(&e.sb, `\u%04x`, r)
			case e.ascii && r > 0x7f:
				if r > 0xffff {
					r -= 0x10000
					fmt.Fprintf(&e.sb, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
				} else {
					fmt.Fprintf(&e.sb, `\u%04x`, r)
				}
			default:
				e.sb.WriteRune(r)
			}
		}
	}
	e.sb.WriteByte('"')
}

// pyFloatRepr is Python's repr of a float, as json.dumps writes it.
func pyFloatRepr(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return pystr.FloatRepr(f)
}
