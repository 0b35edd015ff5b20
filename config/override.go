package config

import (
	"errors"
	"fmt"
	"math"
	"ragen/config/rule"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// OverrideKind is the form of a command-line override.
type OverrideKind int

const (
	// Set is key=value: the key must exist.
	Set OverrideKind = iota
	// Add is +key=value: the key must not exist (or be null).
	Add
	// ForceAdd is ++key=value: add or override.
	ForceAdd
	// Delete is ~key or ~key=value (delete only if the value matches).
	Delete
)

func (k OverrideKind) String() string {
	return [...]string{"set", "add", "force-add", "delete"}[k]
}

// Override is one parsed Hydra command-line override.
type Override struct {
	Kind     OverrideKind
	Key      string // dotted key
	Value    any    // nil, bool, int, float64, string, []any or *Map
	HasValue bool   // false only for "~key"
	Input    string // the override as given
}

// ErrOverride marks malformed overrides (errors.Is).
var ErrOverride = errors.New("invalid override")

func overrideErr(input, format string, args ...any) error {
	return fmt.Errorf("config: override %q: %s: %w", input, fmt.Sprintf(format, args...), ErrOverride)
}

// ParseOverride parses one override in Hydra's grammar: key=value, +key=value,
// ++key=value, ~key, ~key=value. Values are typed as Hydra types them: int, float
// (1e-6, inf, nan), bool (true/false, any case), null, quoted strings, lists [a,b],
// dicts {k:v}; anything else is a string (outer whitespace trimmed). A top-level
// comma (a sweep, x=1,2) is an error: quote it or use a list. One exception: a
// device list for a key named *_VISIBLE_DEVICES (system.CUDA_VISIBLE_DEVICES=0,1,
// what bash leaves of ="0,1") is that string, since such a key holds nothing else.
func ParseOverride(s string) (Override, error) {
	ov := Override{Input: s}
	if !utf8.ValidString(s) {
		return ov, overrideErr(s, "not valid UTF-8")
	}
	rest := s
	switch {
	case strings.HasPrefix(rest, "++"):
		ov.Kind, rest = ForceAdd, rest[2:]
	case strings.HasPrefix(rest, "+"):
		ov.Kind, rest = Add, rest[1:]
	case strings.HasPrefix(rest, "~"):
		ov.Kind, rest = Delete, rest[1:]
	}
	key, val, hasEq := strings.Cut(rest, "=")
	key = strings.TrimSpace(key)
	if !hasEq && ov.Kind != Delete {
		return ov, overrideErr(s, "missing '=' (want key=value)")
	}
	if key == "" {
		return ov, overrideErr(s, "empty key")
	}
	if strings.ContainsAny(key, " \t@") || strings.HasPrefix(key, "+") || strings.HasPrefix(key, "~") {
		if strings.Contains(key, "@") {
			return ov, overrideErr(s, "package overrides (key@pkg) are not supported")
		}
		return ov, overrideErr(s, "malformed key %q", key)
	}
	if _, err := splitPath(key); err != nil {
		return ov, overrideErr(s, "%v", err)
	}
	ov.Key = key
	if !hasEq {
		return ov, nil
	}
	ov.HasValue = true
	p := &valueParser{s: val, input: s, key: key}
	v, err := p.parseTop()
	if err != nil {
		return ov, err
	}
	ov.Value = v
	return ov, nil
}

type valueParser struct {
	s     string
	pos   int
	input string
	key   string
	depth int
}

// deviceList is a comma-separated list of device ids (indices, GPU-/MIG-
// UUIDs) as CUDA_VISIBLE_DEVICES takes them.
var deviceList = regexp.MustCompile(`^[A-Za-z0-9_:.-]+(\s*,\s*[A-Za-z0-9_:.-]+)+$`)

// isDeviceListKey names keys whose value is a device list
// (system.CUDA_VISIBLE_DEVICES, and HIP_/ROCR_/... alike).
func isDeviceListKey(key string) bool {
	leaf := key[strings.LastIndex(key, ".")+1:]
	return strings.HasSuffix(strings.ToUpper(leaf), "_VISIBLE_DEVICES")
}

func (p *valueParser) errf(format string, args ...any) error {
	return overrideErr(p.input, "%s", fmt.Sprintf(format, args...))
}

func (p *valueParser) skipWS() {
	for p.pos < len(p.s) && (p.s[p.pos] == ' ' || p.s[p.pos] == '\t') {
		p.pos++
	}
}

func (p *valueParser) parseTop() (any, error) {
	v, err := p.element(true)
	if err != nil {
		return nil, err
	}
	p.skipWS()
	if p.pos < len(p.s) {
		if p.s[p.pos] == ',' {
			if v := strings.TrimSpace(p.s); isDeviceListKey(p.key) && deviceList.MatchString(v) {
				return v, nil
			}
			return nil, p.errf("ambiguous value (a sweep): to use a list write key=[a,b]; to use a string quote it: key='a,b'; for a sweep run ragen train -m (Hydra multirun)")
		}
		return nil, p.errf("unexpected %q at offset %d", p.s[p.pos], p.pos)
	}
	return v, nil
}

// element parses a primitive, quoted string, list or dict. At top level an empty value is
// the empty string.
func (p *valueParser) element(top bool) (any, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > 64 {
		return nil, p.errf("nesting deeper than 64 levels")
	}
	p.skipWS()
	if p.pos >= len(p.s) {
		if top {
			return "", nil
		}
		return nil, p.errf("missing value at end")
	}
	switch p.s[p.pos] {
	case '[':
		return p.list()
	case '{':
		return p.dict()
	case '\'', '"':
		s, err := p.quoted()
		if err != nil {
			return nil, err
		}
		p.skipWS()
		if p.pos < len(p.s) && !strings.ContainsRune(",]}", rune(p.s[p.pos])) {
			return nil, p.errf("unexpected text after quoted string at offset %d", p.pos)
		}
		return s, nil
	}
	return p.primitive(top)
}

func (p *valueParser) list() (any, error) {
	p.pos++ // [
	out := []any{}
	p.skipWS()
	if p.pos < len(p.s) && p.s[p.pos] == ']' {
		p.pos++
		return out, nil
	}
	for {
		v, err := p.element(false)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		p.skipWS()
		if p.pos >= len(p.s) {
			return nil, p.errf("unterminated list: missing ']'")
		}
		switch p.s[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return out, nil
		default:
			return nil, p.errf("unexpected %q in list at offset %d", p.s[p.pos], p.pos)
		}
	}
}

func (p *valueParser) dict() (any, error) {
	p.pos++ // {
	m := newMap()
	p.skipWS()
	if p.pos < len(p.s) && p.s[p.pos] == '}' {
		p.pos++
		return m, nil
	}
	for {
		p.skipWS()
		start := p.pos
		for p.pos < len(p.s) && !strings.ContainsRune(":,{}[]'\"", rune(p.s[p.pos])) {
			p.pos++
		}
		k := strings.TrimSpace(p.s[start:p.pos])
		if k == "" {
			return nil, p.errf("missing dict key at offset %d", start)
		}
		if p.pos >= len(p.s) || p.s[p.pos] != ':' {
			return nil, p.errf("missing ':' after dict key %q", k)
		}
		p.pos++
		v, err := p.element(false)
		if err != nil {
			return nil, err
		}
		if _, dup := m.Get(k); dup {
			return nil, p.errf("duplicate dict key %q", k)
		}
		m.set(k, v)
		p.skipWS()
		if p.pos >= len(p.s) {
			return nil, p.errf("unterminated dict: missing '}'")
		}
		switch p.s[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return m, nil
		default:
			return nil, p.errf("unexpected %q in dict at offset %d", p.s[p.pos], p.pos)
		}
	}
}

// quoted parses a single- or double-quoted string; a backslash escapes the quote character
// and itself (Hydra's rule); other backslashes are kept.
func (p *valueParser) quoted() (string, error) {
	q := p.s[p.pos]
	p.pos++
	var b strings.Builder
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		if c == '\\' && p.pos+1 < len(p.s) && (p.s[p.pos+1] == q || p.s[p.pos+1] == '\\') {
			b.WriteByte(p.s[p.pos+1])
			p.pos += 2
			continue
		}
		if c == q {
			p.pos++
			return b.String(), nil
		}
		b.WriteByte(c)
		p.pos++
	}
	return "", p.errf("unterminated %c-quoted string", q)
}

var (
	hydraInt   = regexp.MustCompile(`^[+-]?(?:0|[1-9](?:_?[0-9])*)$`)
	hydraFloat = regexp.MustCompile(`^[+-]?(?:(?:(?:[0-9](?:_?[0-9])*)?\.[0-9](?:_?[0-9])*|[0-9](?:_?[0-9])*\.)(?:[eE][+-]?[0-9](?:_?[0-9])*)?|[0-9](?:_?[0-9])*[eE][+-]?[0-9](?:_?[0-9])*|[iI][nN][fF]|[nN][aA][nN])$`)
	castCall   = regexp.MustCompile(`^(int|float|str|bool|choice|range|interval|sort|shuffle|tag|glob|extend_list)\((.*)\)$`)
)

// primitive reads an unquoted value up to a structural delimiter, honouring backslash
// escapes and ${...} interpolations (which may contain commas and braces).
func (p *valueParser) primitive(top bool) (any, error) {
	var b strings.Builder
	escaped := false
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		if c == '\\' && p.pos+1 < len(p.s) && strings.ContainsRune(`\()[]{}:=, '"`+"\t", rune(p.s[p.pos+1])) && !strings.HasPrefix(p.s[p.pos:], `\${`) {
			b.WriteByte(p.s[p.pos+1])
			p.pos += 2
			escaped = true
			continue
		}
		if strings.HasPrefix(p.s[p.pos:], "${") || strings.HasPrefix(p.s[p.pos:], `\${`) {
			end, err := interpEnd(p.s, p.pos+strings.Index(p.s[p.pos:], "${"))
			if err != nil {
				return nil, p.errf("%v", err)
			}
			b.WriteString(p.s[p.pos:end])
			p.pos = end
			continue
		}
		if c == ',' || (!top && (c == ']' || c == '}')) {
			break
		}
		if strings.IndexByte("[]{}'\"", c) >= 0 {
			return nil, p.errf("unexpected %q at offset %d (quote the value)", c, p.pos)
		}
		if c == '(' {
			// function call form: consume up to the matching ')'
			depth := 0
			for p.pos < len(p.s) {
				ch := p.s[p.pos]
				b.WriteByte(ch)
				p.pos++
				if ch == '(' {
					depth++
				} else if ch == ')' {
					depth--
					if depth == 0 {
						break
					}
				}
			}
			if depth != 0 {
				return nil, p.errf("unbalanced '('")
			}
			continue
		}
		b.WriteByte(c)
		p.pos++
	}
	text := strings.TrimSpace(b.String())
	if escaped {
		return text, nil
	}
	if m := castCall.FindStringSubmatch(text); m != nil {
		return p.call(m[1], m[2])
	}
	return typePrimitive(text), nil
}

// typePrimitive types an unquoted Hydra primitive.
func typePrimitive(text string) any {
	switch strings.ToLower(text) {
	case "null":
		return nil
	case "true":
		return true
	case "false":
		return false
	}
	if hydraInt.MatchString(text) {
		if i, err := strconv.ParseInt(strings.ReplaceAll(text, "_", ""), 10, 64); err == nil {
			return int(i)
		}
		f, _ := strconv.ParseFloat(strings.ReplaceAll(text, "_", ""), 64)
		return f
	}
	if hydraFloat.MatchString(text) {
		t := strings.ToLower(strings.ReplaceAll(text, "_", ""))
		switch strings.TrimLeft(t, "+-") {
		case "inf":
			if t[0] == '-' {
				return math.Inf(-1)
			}
			return math.Inf(1)
		case "nan":
			return math.NaN()
		}
		f, _ := strconv.ParseFloat(t, 64)
		return f
	}
	return text
}

// call evaluates Hydra's cast functions int(x), float(x), str(x), bool(x); sweep functions
// are rejected.
func (p *valueParser) call(fn, arg string) (any, error) {
	switch fn {
	case "int", "float", "str", "bool":
	default:
		return nil, p.errf("%s(...) is a sweep function; for a sweep run ragen train -m (Hydra multirun)", fn)
	}
	sub := &valueParser{s: arg, input: p.input, depth: p.depth}
	v, err := sub.parseTop()
	if err != nil {
		return nil, err
	}
	bad := func() (any, error) { return nil, p.errf("cannot cast %s to %s", describe(v), fn) }
	switch fn {
	case "str":
		if _, ok := v.(string); ok {
			return v, nil
		}
		switch v.(type) {
		case *Map, []any:
			return bad()
		}
		return flowString(v), nil
	case "int":
		switch x := v.(type) {
		case int:
			return x, nil
		case float64:
			if math.IsInf(x, 0) || math.IsNaN(x) {
				return bad()
			}
			return int(x), nil
		case bool:
			if x {
				return 1, nil
			}
			return 0, nil
		case string:
			if i, ok := typePrimitive(x).(int); ok {
				return i, nil
			}
			if f, ok := typePrimitive(x).(float64); ok && !math.IsInf(f, 0) && !math.IsNaN(f) {
				return int(f), nil
			}
		}
		return bad()
	case "float":
		switch x := v.(type) {
		case int:
			return float64(x), nil
		case float64:
			return x, nil
		case bool:
			if x {
				return 1.0, nil
			}
			return 0.0, nil
		case string:
			switch y := typePrimitive(x).(type) {
			case int:
				return float64(y), nil
			case float64:
				return y, nil
			}
		}
		return bad()
	default: // bool
		switch x := v.(type) {
		case bool:
			return x, nil
		case int:
			return x != 0, nil
		case float64:
			return x != 0, nil
		case string:
			if b, ok := typePrimitive(x).(bool); ok {
				return b, nil
			}
		}
		return bad()
	}
}

// interpEnd returns the index just past the "}" closing the interpolation that starts at
// s[start:] == "${...".
func interpEnd(s string, start int) (int, error) {
	depth := 0
	for i := start; i < len(s); i++ {
		switch {
		case strings.HasPrefix(s[i:], "${"):
			depth++
			i++
		case s[i] == '}':
			depth--
			if depth == 0 {
				return i + 1, nil
			}
		}
	}
	return 0, fmt.Errorf("unterminated interpolation %q", s[start:])
}

// applyOverride applies one override to the composed (unresolved) config.
func applyOverride(root *Map, ov Override) error {
	segs, err := splitPath(ov.Key)
	if err != nil {
		return overrideErr(ov.Input, "%v", err)
	}
	cur, exists := lookup(root, segs)
	keys := func() []string {
		var out []string
		leafKeys("", root, true, &out)
		return out
	}
	switch ov.Kind {
	case Delete:
		if _, inert := Inert(ov.Key); !exists && inert {
			return nil // deleting an inert key that is not there: nothing to do
		}
		if !exists {
			return fmt.Errorf("config: could not delete %s: key does not exist%s", ov.Key, rule.DidYouMean(ov.Key, keys()))
		}
		if ov.HasValue && !equalValues(cur, ov.Value) {
			return fmt.Errorf("config: could not delete %s: its value is %s, not %s", ov.Key, flowString(cur), flowString(ov.Value))
		}
		parent, _ := lookup(root, segs[:len(segs)-1])
		switch p := parent.(type) {
		case *Map:
			p.del(segs[len(segs)-1])
		case []any:
			i, _ := strconv.Atoi(segs[len(segs)-1])
			nl := append(append([]any{}, p[:i]...), p[i+1:]...)
			pp, _ := lookup(root, segs[:len(segs)-2])
			if err := setChild(pp, segs[len(segs)-2], nl); err != nil {
				return fmt.Errorf("config: could not delete %s: %v", ov.Key, err)
			}
		}
		return nil
	case Set:
		if _, inert := Inert(ov.Key); !exists && !inert { // inert keys: see inert.go
			return fmt.Errorf("config: could not override %s: key does not exist%s; to add it use +%s",
				ov.Key, rule.DidYouMean(ov.Key, keys()), strings.TrimLeft(ov.Input, "+~"))
		}
	case Add:
		_, isMap := ov.Value.(*Map)
		_, isList := ov.Value.([]any)
		if exists && cur != nil && !isMap && !isList {
			return fmt.Errorf("config: could not add %s: a value is already there (%s); drop the + to override it (%s) or use ++ to add or override (+%s)",
				ov.Key, flowString(cur), ov.Input[1:], ov.Input)
		}
	}
	// Set, Add, ForceAdd: create intermediate maps and merge the value in.
	var parent any = root
	for i, s := range segs[:len(segs)-1] {
		next, ok := child(parent, s)
		if !ok || next == nil {
			if _, isList := parent.([]any); isList {
				return fmt.Errorf("config: could not set %s: list index %s out of range", ov.Key, joinPath(segs[:i+1]))
			}
			next = newMap()
			if err := setChild(parent, s, next); err != nil {
				return fmt.Errorf("config: could not set %s: %v", ov.Key, err)
			}
		}
		switch next.(type) {
		case *Map, []any:
		default:
			return fmt.Errorf("config: could not set %s: %s is a %s, not a map", ov.Key, joinPath(segs[:i+1]), typeName(next))
		}
		parent = next
	}
	last := segs[len(segs)-1]
	old, _ := child(parent, last)
	if err := setChild(parent, last, merge(old, ov.Value)); err != nil {
		return fmt.Errorf("config: could not set %s: %v", ov.Key, err)
	}
	return nil
}

// equalValues compares two config values structurally (ints and floats of equal value are
// equal, as in Python).
func equalValues(a, b any) bool {
	switch x := a.(type) {
	case int:
		switch y := b.(type) {
		case int:
			return x == y
		case float64:
			return float64(x) == y
		}
		return false
	case float64:
		switch y := b.(type) {
		case int:
			return x == float64(y)
		case float64:
			return x == y
		}
		return false
	case *Map:
		y, ok := b.(*Map)
		if !ok || x.Len() != y.Len() {
			return false
		}
		for _, k := range x.keys {
			yv, ok := y.vals[k]
			if !ok || !equalValues(x.vals[k], yv) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalValues(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}
