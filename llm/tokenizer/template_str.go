package tokenizer

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"ragen/internal/pystr"
	"ragen/llm/tokenizer/internal/jinja"
)

// Python Jinja2 turns values into text with Python's str(): {{ none }}
// prints "None", {{ 1.0 }} "1.0", {{ ['a', none] }} "['a', None]", and
// none | trim is "None". ardanlabs/jinja v1.8.0 prints None as "", floats
// with %g ("1") and list items with Go quoting, in its output tags and in
// its trim and string filters; it looks a filter up among the template's
// variables only when no built-in has its name. ParseTemplate therefore
// rewrites every {{ expr }} into {{ __ragen_str(expr) }} and the filters
// `| trim` and `| string` into __ragen_trim and __ragen_string (outside
// string literals, comments and raw blocks), and Render defines these three
// as Python's str(). Llama 3.1 prints a None message content through
// `message['content'] | trim`.

const (
	pyStrName    = "__ragen_str"
	pyTrimName   = "__ragen_trim"
	pyStringName = "__ragen_string"
)

// pyStrFns are the template globals that the rewritten source calls.
var pyStrFns = map[string]jinja.Value{
	pyStrName: jinja.NewCallable(pyStrName, func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 1 {
			return jinja.Undefined(), fmt.Errorf("expected one expression in {{ }}, got %d", len(args))
		}
		return jinja.NewString(pyStr(args[0])), nil
	}),
	pyStringName: jinja.NewCallable("string", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 1 {
			return jinja.Undefined(), fmt.Errorf("string: expected no arguments, got %d", len(args)-1)
		}
		return jinja.NewString(pyStr(args[0])), nil
	}),
	pyTrimName: jinja.NewCallable("trim", func(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
		chars := jinja.None()
		switch {
		case len(args) == 2 && len(kw) == 0:
			chars = args[1]
		case len(args) == 1 && len(kw) == 1 && kw["chars"].IsString():
			chars = kw["chars"]
		case len(args) != 1 || len(kw) != 0:
			return jinja.Undefined(), fmt.Errorf("trim: expected at most one argument (chars)")
		}
		s := pyStr(args[0])
		switch {
		case chars.IsNone() || chars.IsUndefined():
			return jinja.NewString(strings.TrimFunc(s, pyIsSpace)), nil
		case chars.IsString():
			return jinja.NewString(strings.Trim(s, chars.AsString())), nil
		}
		return jinja.Undefined(), fmt.Errorf("trim: strip arg must be None or str")
	}),
}

// pyIsSpace is Python's str.isspace for one character: Unicode White_Space
// plus the separators U+001C..U+001F.
func pyIsSpace(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) }

// pyStr is Python's str() of an engine value, as Jinja2 prints it: an
// undefined value prints as "".
func pyStr(v jinja.Value) string {
	switch {
	case v.IsUndefined():
		return ""
	case v.IsString():
		return v.AsString()
	}
	var sb strings.Builder
	pyRepr(&sb, v, 0)
	return sb.String()
}

// pyRepr writes Python's repr() of v (str() for everything but strings).
func pyRepr(sb *strings.Builder, v jinja.Value, depth int) {
	switch {
	case depth > maxJSONDepth:
		sb.WriteString("...")
	case v.IsUndefined():
		sb.WriteString("Undefined")
	case v.IsNone():
		sb.WriteString("None")
	case v.IsBool():
		sb.WriteString(map[bool]string{true: "True", false: "False"}[v.AsBool()])
	case v.IsInt():
		sb.WriteString(strconv.FormatInt(v.AsInt(), 10))
	case v.IsFloat():
		sb.WriteString(pystr.FloatRepr(v.AsFloat())) // str(float) is repr(float)
	case v.IsString():
		sb.WriteString(pystr.Quote(v.AsString()))
	case v.IsList():
		sb.WriteByte('[')
		for i, it := range v.AsList().Items {
			if i > 0 {
				sb.WriteString(", ")
			}
			pyRepr(sb, it, depth+1)
		}
		sb.WriteByte(']')
	case v.IsDict():
		d := v.AsDict()
		sb.WriteByte('{')
		for i, k := range d.OrderedKeys() {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(pystr.Quote(k))
			sb.WriteString(": ")
			val, _ := d.Get(k)
			pyRepr(sb, val, depth+1)
		}
		sb.WriteByte('}')
	default: // a callable: the engine prints nothing
	}
}

// rewriteTags rewrites the tags of a template for the engine: in {{ }} and
// {% %} tags, tojson with arguments becomes a jsonDumps call
// (template_json.go) and the trim and string filters are renamed; the
// expression of every {{ }} tag is wrapped in __ragen_str( ). It finds tags
// as the engine's scanner does (quotes inside a tag hide closers; comments
// end at the first #}) and leaves comments and {% raw %} blocks alone.
func rewriteTags(src string) string {
	var sb strings.Builder
	raw := false
	for i := 0; ; {
		open := indexTagOpen(src, i)
		if open < 0 {
			sb.WriteString(src[i:])
			return sb.String()
		}
		kind := src[open+1]
		start := open + 2
		if start < len(src) && src[start] == '-' {
			start++
		}
		end, next := findTagClose(src, start, kind)
		if end < 0 { // unclosed: the engine reports it
			sb.WriteString(src[i:])
			return sb.String()
		}
		sb.WriteString(src[i:start])
		body := src[start:end]
		switch {
		case kind == '#':
			sb.WriteString(body)
		case kind == '%':
			word, _, _ := strings.Cut(strings.TrimSpace(body)+" ", " ")
			switch {
			case raw && word == "endraw":
				raw = false
			case !raw && word == "raw":
				raw = true
			}
			if raw || word == "endraw" {
				sb.WriteString(body)
			} else {
				sb.WriteString(renameStrFilters(rewriteTojson(body)))
			}
		case raw || strings.TrimSpace(body) == "":
			sb.WriteString(body)
		default:
			sb.WriteString(pyStrName + "(" + renameStrFilters(rewriteTojson(body)) + ")")
		}
		sb.WriteString(src[end:next])
		i = next
	}
}

// indexTagOpen is the index of the next "{{", "{%" or "{#" at or after i.
func indexTagOpen(src string, i int) int {
	for j := i; j+1 < len(src); j++ {
		if src[j] == '{' && (src[j+1] == '{' || src[j+1] == '%' || src[j+1] == '#') {
			return j
		}
	}
	return -1
}

// findTagClose returns where the body of a tag opened with kind ends (at
// "-}}" or "}}" for '{') and the index after the closer, or -1.
func findTagClose(src string, i int, kind byte) (end, next int) {
	closer := map[byte]string{'{': "}}", '%': "%}", '#': "#}"}[kind]
	for i < len(src) {
		c := src[i]
		if kind != '#' && (c == '\'' || c == '"') {
			i = skipQuoted(src, i)
			continue
		}
		if c == '-' && strings.HasPrefix(src[i+1:], closer) {
			return i, i + 3
		}
		if strings.HasPrefix(src[i:], closer) {
			return i, i + 2
		}
		i++
	}
	return -1, -1
}

// skipQuoted returns the index after the string literal that starts at i
// (the engine's rule: a backslash escapes the next byte).
func skipQuoted(src string, i int) int {
	q := src[i]
	for i++; i < len(src) && src[i] != q; i++ {
		if src[i] == '\\' {
			i++
		}
	}
	return min(i+1, len(src))
}

// renameStrFilters renames `| trim` and `| string` outside string literals.
func renameStrFilters(body string) string {
	if !strings.Contains(body, "trim") && !strings.Contains(body, "string") {
		return body
	}
	var sb strings.Builder
	for i := 0; i < len(body); {
		c := body[i]
		if c == '\'' || c == '"' {
			j := skipQuoted(body, i)
			sb.WriteString(body[i:j])
			i = j
			continue
		}
		sb.WriteByte(c)
		i++
		if c != '|' {
			continue
		}
		j := i
		for j < len(body) && (body[j] == ' ' || body[j] == '\t' || body[j] == '\n') {
			j++
		}
		k := j
		for k < len(body) && isIdentByte(body[k]) {
			k++
		}
		switch body[j:k] {
		case "trim":
			sb.WriteString(body[i:j] + pyTrimName)
			i = k
		case "string":
			sb.WriteString(body[i:j] + pyStringName)
			i = k
		}
	}
	return sb.String()
}

func isIdentByte(c byte) bool {
	return c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}
