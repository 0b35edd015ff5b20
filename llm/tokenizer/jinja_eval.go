package tokenizer

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Template is a compiled chat template: the Jinja subset used by Hugging Face
// chat templates (Qwen2.5, Qwen3 and similar), rendered as transformers does
// (trim_blocks, lstrip_blocks, loop controls, tojson with ensure_ascii off).
//
// Supported: {{ }}, {% if/elif/else %}, {% for x[, y] in ... [if ...] %} with
// else, loop.index/index0/first/last/length/revindex/revindex0,
// {% set %} (also ns.attr and tuple targets), {% break/continue %},
// namespace(), range(), raise_exception(); literals, arithmetic, ~, and/or/
// not, comparisons, in, ternaries, attributes, subscripts and slices;
// filters tojson, length, count, trim, string, lower, upper, title,
// capitalize, join, default, first, last, list, reverse, items, safe, int,
// float, abs, replace, selectattr, rejectattr, map(attribute=), unique;
// tests defined, undefined, none, string, number, integer, float, mapping,
// iterable, sequence, boolean, true, false, eq, ne, in, callable, divisibleby,
// even, odd; string methods startswith, endswith, split, rsplit, strip,
// lstrip, rstrip, lower, upper, title, capitalize, replace, find, count, join,
// splitlines and dict methods get, items, keys, values. Anything else is an
// error naming the construct and its position. A Template is safe for
// concurrent use.
type Template struct {
	orig string // source as given
	src  string // normalised source; error positions refer to it
	body []jnode
}

// ParseTemplate compiles Jinja source.
func ParseTemplate(src string) (t *Template, err error) {
	defer func() {
		if r := recover(); r != nil {
			t, err = nil, fmt.Errorf("chat template: internal error while parsing: %v", r)
		}
	}()
	norm := normalizeSource(src)
	body, err := parseTemplate(norm)
	if err != nil {
		return nil, err
	}
	return &Template{orig: src, src: norm, body: body}, nil
}

// Source returns the template source.
func (t *Template) Source() string { return t.orig }

// Limits that keep hostile templates from running away.
const (
	maxRenderSteps  = 2_000_000
	maxRenderOutput = 64 << 20
	maxListLen      = 1 << 20
)

var (
	errBreak    = errors.New("break")
	errContinue = errors.New("continue")
)

type renderer struct {
	t      *Template
	scopes []map[string]any
	out    strings.Builder
	steps  int
}

// Render renders the template with vars as the global variables. Values may
// be Go scalars, slices, string-keyed maps (rendered with sorted keys),
// Message, []Message, *Dict (ordered) or values from JSONValue.
func (t *Template) Render(vars map[string]any) (s string, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = "", fmt.Errorf("chat template: internal error while rendering: %v", r)
		}
	}()
	globals := map[string]any{
		"namespace":       builtin(fnNamespace),
		"range":           builtin(fnRange),
		"raise_exception": builtin(fnRaise),
		"dict":            builtin(fnDict),
	}
	for k, v := range vars {
		c, err := toValue(v)
		if err != nil {
			return "", fmt.Errorf("chat template: variable %q: %w", k, err)
		}
		globals[k] = c
	}
	r := &renderer{t: t, scopes: []map[string]any{globals}}
	if err := r.exec(t.body); err != nil {
		if errors.Is(err, errBreak) || errors.Is(err, errContinue) {
			return "", errors.New("chat template: break or continue outside a loop")
		}
		return "", err
	}
	return r.out.String(), nil
}

func (r *renderer) errAt(pos int, format string, args ...any) error {
	return errAt(r.t.src, pos, format, args...)
}

func (r *renderer) lookup(name string) any {
	for i := len(r.scopes) - 1; i >= 0; i-- {
		if v, ok := r.scopes[i][name]; ok {
			return v
		}
	}
	return undefined{name}
}

func (r *renderer) exec(body []jnode) error {
	for _, n := range body {
		r.steps++
		if r.steps > maxRenderSteps {
			return errors.New("chat template: too many steps")
		}
		if r.out.Len() > maxRenderOutput {
			return errors.New("chat template: output too large")
		}
		switch n := n.(type) {
		case textNode:
			r.out.WriteString(n.text)
		case outputNode:
			v, err := r.eval(n.x)
			if err != nil {
				return err
			}
			r.out.WriteString(pyStr(v))
		case *ifNode:
			done := false
			for i, c := range n.conds {
				v, err := r.eval(c)
				if err != nil {
					return err
				}
				if truthy(v) {
					if err := r.exec(n.bodies[i]); err != nil {
						return err
					}
					done = true
					break
				}
			}
			if !done && n.elseBody != nil {
				if err := r.exec(n.elseBody); err != nil {
					return err
				}
			}
		case *forNode:
			if err := r.execFor(n); err != nil {
				return err
			}
		case *setNode:
			if err := r.execSet(n); err != nil {
				return err
			}
		case loopCtlNode:
			if n.brk {
				return errBreak
			}
			return errContinue
		}
	}
	return nil
}

func (r *renderer) execSet(n *setNode) error {
	v, err := r.eval(n.value)
	if err != nil {
		return err
	}
	scope := r.scopes[len(r.scopes)-1]
	if n.attr != "" {
		obj := r.lookup(n.targets[0])
		d, ok := obj.(*Dict)
		if !ok || !d.ns {
			return r.errAt(n.pos, "cannot assign attribute %q on %s %q (only namespace objects allow it)", n.attr, typeName(obj), n.targets[0])
		}
		d.Set(n.attr, v)
		return nil
	}
	if len(n.targets) == 1 {
		scope[n.targets[0]] = v
		return nil
	}
	items, err := r.iterate(v, n.pos)
	if err != nil {
		return err
	}
	if len(items) != len(n.targets) {
		return r.errAt(n.pos, "cannot unpack %d values into %d names", len(items), len(n.targets))
	}
	for i, t := range n.targets {
		scope[t] = items[i]
	}
	return nil
}

func (r *renderer) execFor(n *forNode) error {
	seq, err := r.eval(n.iter)
	if err != nil {
		return err
	}
	items, err := r.iterate(seq, n.pos)
	if err != nil {
		return err
	}
	bind := func(scope map[string]any, item any) error {
		if len(n.targets) == 1 {
			scope[n.targets[0]] = item
			return nil
		}
		parts, err := r.iterate(item, n.pos)
		if err != nil {
			return err
		}
		if len(parts) != len(n.targets) {
			return r.errAt(n.pos, "cannot unpack %d values into %d loop variables", len(parts), len(n.targets))
		}
		for i, t := range n.targets {
			scope[t] = parts[i]
		}
		return nil
	}
	if n.filter != nil {
		var kept []any
		for _, it := range items {
			scope := map[string]any{}
			if err := bind(scope, it); err != nil {
				return err
			}
			r.scopes = append(r.scopes, scope)
			v, err := r.eval(n.filter)
			r.scopes = r.scopes[:len(r.scopes)-1]
			if err != nil {
				return err
			}
			if truthy(v) {
				kept = append(kept, it)
			}
		}
		items = kept
	}
	if len(items) == 0 {
		if n.elseBody != nil {
			return r.exec(n.elseBody)
		}
		return nil
	}
	for i, it := range items {
		r.steps++
		if r.steps > maxRenderSteps {
			return errors.New("chat template: too many steps")
		}
		loop := &loopVar{i: i, items: items}
		scope := map[string]any{"loop": loop}
		if err := bind(scope, it); err != nil {
			return err
		}
		r.scopes = append(r.scopes, scope)
		err := r.exec(n.body)
		r.scopes = r.scopes[:len(r.scopes)-1]
		if errors.Is(err, errBreak) {
			break
		}
		if err != nil && !errors.Is(err, errContinue) {
			return err
		}
	}
	return nil
}

// iterate lists the items of a sequence value: list items, dict keys or
// string characters; undefined iterates as empty.
func (r *renderer) iterate(v any, pos int) ([]any, error) {
	switch x := unTuple(v).(type) {
	case []any:
		return x, nil
	case *Dict:
		out := make([]any, len(x.keys))
		for i, k := range x.keys {
			out[i] = k
		}
		return out, nil
	case string:
		out := make([]any, 0, len(x))
		for _, c := range x {
			out = append(out, string(c))
		}
		return out, nil
	case undefined:
		return nil, nil
	}
	return nil, r.errAt(pos, "%s object is not iterable", typeName(v))
}

func (r *renderer) eval(e jexpr) (any, error) {
	r.steps++
	if r.steps > maxRenderSteps {
		return nil, errors.New("chat template: too many steps")
	}
	switch e := e.(type) {
	case litExpr:
		return e.v, nil
	case nameExpr:
		return r.lookup(e.name), nil
	case listExpr:
		out := make([]any, len(e.items))
		for i, it := range e.items {
			v, err := r.eval(it)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		if e.tuple {
			return tuple(out), nil
		}
		return out, nil
	case dictExpr:
		d := NewDict()
		for i := range e.keys {
			k, err := r.eval(e.keys[i])
			if err != nil {
				return nil, err
			}
			ks, ok := k.(string)
			if !ok {
				return nil, errors.New("chat template: dict literal keys must be strings")
			}
			v, err := r.eval(e.vals[i])
			if err != nil {
				return nil, err
			}
			d.Set(ks, v)
		}
		return d, nil
	case attrExpr:
		obj, err := r.eval(e.obj)
		if err != nil {
			return nil, err
		}
		return r.getAttr(obj, e.name, e.pos)
	case indexExpr:
		obj, err := r.eval(e.obj)
		if err != nil {
			return nil, err
		}
		idx, err := r.eval(e.idx)
		if err != nil {
			return nil, err
		}
		return r.getItem(obj, idx, e.pos)
	case sliceExpr:
		return r.evalSlice(e)
	case callExpr:
		return r.evalCall(e)
	case filterExpr:
		return r.evalFilter(e)
	case testExpr:
		v, err := r.evalTest(e)
		if err != nil {
			return nil, err
		}
		return v != e.neg, nil
	case unaryExpr:
		v, err := r.eval(e.x)
		if err != nil {
			return nil, err
		}
		switch e.op {
		case "not":
			return !truthy(v), nil
		case "-":
			switch x := v.(type) {
			case int64:
				return -x, nil
			case float64:
				return -x, nil
			case bool:
				return -b2i(x), nil
			}
			return nil, r.errAt(e.pos, "bad operand type for unary -: %s", typeName(v))
		default:
			switch v.(type) {
			case int64, float64:
				return v, nil
			case bool:
				return b2i(v.(bool)), nil
			}
			return nil, r.errAt(e.pos, "bad operand type for unary +: %s", typeName(v))
		}
	case condExpr:
		c, err := r.eval(e.cond)
		if err != nil {
			return nil, err
		}
		if truthy(c) {
			return r.eval(e.a)
		}
		if e.b == nil {
			return undefined{"ternary"}, nil
		}
		return r.eval(e.b)
	case binExpr:
		l, err := r.eval(e.l)
		if err != nil {
			return nil, err
		}
		switch e.op {
		case "and":
			if !truthy(l) {
				return l, nil
			}
			return r.eval(e.r)
		case "or":
			if truthy(l) {
				return l, nil
			}
			return r.eval(e.r)
		}
		rv, err := r.eval(e.r)
		if err != nil {
			return nil, err
		}
		return r.binop(e.op, l, rv, e.pos)
	case compareExpr:
		left, err := r.eval(e.first)
		if err != nil {
			return nil, err
		}
		for i, op := range e.ops {
			right, err := r.eval(e.rest[i])
			if err != nil {
				return nil, err
			}
			ok, err := r.compare(op, left, right, e.pos)
			if err != nil {
				return nil, err
			}
			if !ok {
				return false, nil
			}
			left = right
		}
		return true, nil
	}
	return nil, fmt.Errorf("chat template: unknown expression %T", e)
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// num returns v as a number; isInt reports whether it is integral.
func num(v any) (i int64, f float64, isInt, ok bool) {
	switch x := v.(type) {
	case int64:
		return x, float64(x), true, true
	case bool:
		return b2i(x), float64(b2i(x)), true, true
	case float64:
		return 0, x, false, true
	}
	return 0, 0, false, false
}

func (r *renderer) binop(op string, l, rv any, pos int) (any, error) {
	if op == "~" {
		a, b := pyStr(l), pyStr(rv)
		if len(a)+len(b) > maxRenderOutput {
			return nil, r.errAt(pos, "string too large")
		}
		return a + b, nil
	}
	if _, ok := l.(undefined); ok {
		return nil, r.errAt(pos, "%q is undefined", l.(undefined).name)
	}
	if _, ok := rv.(undefined); ok {
		return nil, r.errAt(pos, "%q is undefined", rv.(undefined).name)
	}
	switch op {
	case "+":
		l, rv := unTuple(l), unTuple(rv)
		if a, ok := l.(string); ok {
			if b, ok := rv.(string); ok {
				if len(a)+len(b) > maxRenderOutput {
					return nil, r.errAt(pos, "string too large")
				}
				return a + b, nil
			}
		}
		if a, ok := l.([]any); ok {
			if b, ok := rv.([]any); ok {
				if len(a)+len(b) > maxListLen {
					return nil, r.errAt(pos, "list too large")
				}
				out := append(append([]any{}, a...), b...)
				return out, nil
			}
		}
	case "*":
		if s, ok := l.(string); ok {
			if n, _, isInt, ok := num(rv); ok && isInt {
				if n < 0 {
					n = 0
				}
				if n*int64(len(s)) > maxRenderOutput {
					return nil, r.errAt(pos, "string repetition too large")
				}
				return strings.Repeat(s, int(n)), nil
			}
		}
	}
	ai, af, aInt, okA := num(l)
	bi, bf, bInt, okB := num(rv)
	if !okA || !okB {
		return nil, r.errAt(pos, "unsupported operand types for %s: %s and %s", op, typeName(l), typeName(rv))
	}
	if aInt && bInt {
		switch op {
		case "+":
			return ai + bi, nil
		case "-":
			return ai - bi, nil
		case "*":
			return ai * bi, nil
		case "//", "%":
			if bi == 0 {
				return nil, r.errAt(pos, "integer division or modulo by zero")
			}
			q, m := ai/bi, ai%bi
			if m != 0 && (m < 0) != (bi < 0) { // Python floors
				q--
				m += bi
			}
			if op == "//" {
				return q, nil
			}
			return m, nil
		case "**":
			if bi >= 0 {
				return int64(math.Pow(float64(ai), float64(bi))), nil
			}
		}
	}
	switch op {
	case "+":
		return af + bf, nil
	case "-":
		return af - bf, nil
	case "*":
		return af * bf, nil
	case "/":
		if bf == 0 {
			return nil, r.errAt(pos, "division by zero")
		}
		return af / bf, nil
	case "//":
		if bf == 0 {
			return nil, r.errAt(pos, "float floor division by zero")
		}
		return math.Floor(af / bf), nil
	case "%":
		if bf == 0 {
			return nil, r.errAt(pos, "float modulo by zero")
		}
		m := math.Mod(af, bf)
		if m != 0 && (m < 0) != (bf < 0) {
			m += bf
		}
		return m, nil
	case "**":
		return math.Pow(af, bf), nil
	}
	return nil, r.errAt(pos, "unsupported operator %s", op)
}

func equal(a, b any) bool {
	a, b = unTuple(a), unTuple(b)
	if ai, af, _, ok := num(a); ok {
		if bi, bf, _, ok := num(b); ok {
			_, aIsF := a.(float64)
			_, bIsF := b.(float64)
			if !aIsF && !bIsF {
				return ai == bi
			}
			return af == bf
		}
		return false
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case undefined:
		_, ok := b.(undefined)
		return ok
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case *Dict:
		y, ok := b.(*Dict)
		if !ok || x.Len() != y.Len() {
			return false
		}
		for _, k := range x.keys {
			yv, ok := y.m[k]
			if !ok || !equal(x.m[k], yv) {
				return false
			}
		}
		return true
	}
	return false
}

func (r *renderer) compare(op string, a, b any, pos int) (bool, error) {
	switch op {
	case "==":
		return equal(a, b), nil
	case "!=":
		return !equal(a, b), nil
	case "in", "not in":
		in, err := r.contains(b, a, pos)
		if err != nil {
			return false, err
		}
		return in == (op == "in"), nil
	}
	var c int
	if as, ok := a.(string); ok {
		bs, ok := b.(string)
		if !ok {
			return false, r.errAt(pos, "'%s' not supported between str and %s", op, typeName(b))
		}
		c = strings.Compare(as, bs)
	} else {
		_, af, _, okA := num(a)
		_, bf, _, okB := num(b)
		if !okA || !okB {
			return false, r.errAt(pos, "'%s' not supported between %s and %s", op, typeName(a), typeName(b))
		}
		switch {
		case af < bf:
			c = -1
		case af > bf:
			c = 1
		}
	}
	switch op {
	case "<":
		return c < 0, nil
	case "<=":
		return c <= 0, nil
	case ">":
		return c > 0, nil
	}
	return c >= 0, nil
}

func (r *renderer) contains(container, item any, pos int) (bool, error) {
	switch c := unTuple(container).(type) {
	case string:
		s, ok := item.(string)
		if !ok {
			return false, r.errAt(pos, "'in <string>' requires string as left operand, not %s", typeName(item))
		}
		return strings.Contains(c, s), nil
	case []any:
		for _, x := range c {
			if equal(x, item) {
				return true, nil
			}
		}
		return false, nil
	case *Dict:
		s, ok := item.(string)
		if !ok {
			return false, nil
		}
		_, in := c.m[s]
		return in, nil
	case undefined:
		return false, nil
	}
	return false, r.errAt(pos, "argument of type %s is not iterable", typeName(container))
}

var dictMethods = map[string]bool{"get": true, "items": true, "keys": true, "values": true}
var strMethods = map[string]bool{
	"startswith": true, "endswith": true, "split": true, "rsplit": true, "strip": true, "lstrip": true,
	"rstrip": true, "lower": true, "upper": true, "title": true, "capitalize": true, "replace": true,
	"find": true, "count": true, "join": true, "splitlines": true,
}

// loopVar is the "loop" variable of a for loop.
type loopVar struct {
	i     int
	items []any
}

func (l *loopVar) attr(name string) (any, bool) {
	n := len(l.items)
	switch name {
	case "index":
		return int64(l.i + 1), true
	case "index0":
		return int64(l.i), true
	case "first":
		return l.i == 0, true
	case "last":
		return l.i == n-1, true
	case "length":
		return int64(n), true
	case "revindex":
		return int64(n - l.i), true
	case "revindex0":
		return int64(n - l.i - 1), true
	case "previtem":
		if l.i > 0 {
			return l.items[l.i-1], true
		}
	case "nextitem":
		if l.i+1 < n {
			return l.items[l.i+1], true
		}
	}
	return nil, false
}

// getAttr is Jinja2's obj.name: a dict key (methods first, as Python
// getattr wins), a string method, or undefined.
func (r *renderer) getAttr(obj any, name string, pos int) (any, error) {
	switch x := obj.(type) {
	case undefined:
		return nil, r.errAt(pos, "%q is undefined (no attribute %q)", x.name, name)
	case *Dict:
		if !x.ns && dictMethods[name] {
			return boundMethod{x, name}, nil
		}
		if v, ok := x.m[name]; ok {
			return v, nil
		}
	case string:
		if strMethods[name] {
			return boundMethod{x, name}, nil
		}
	case *loopVar:
		if v, ok := x.attr(name); ok {
			return v, nil
		}
	}
	return undefined{name}, nil
}

// getItem is Jinja2's obj[idx].
func (r *renderer) getItem(obj, idx any, pos int) (any, error) {
	switch x := unTuple(obj).(type) {
	case undefined:
		return nil, r.errAt(pos, "%q is undefined (cannot index it)", x.name)
	case *Dict:
		if k, ok := idx.(string); ok {
			if v, ok := x.m[k]; ok {
				return v, nil
			}
			return undefined{k}, nil
		}
		return undefined{pyStr(idx)}, nil
	case []any:
		i, _, isInt, ok := num(idx)
		if !ok || !isInt {
			return nil, r.errAt(pos, "list indices must be integers, not %s", typeName(idx))
		}
		if i < 0 {
			i += int64(len(x))
		}
		if i < 0 || i >= int64(len(x)) {
			return undefined{"list index"}, nil
		}
		return x[i], nil
	case string:
		i, _, isInt, ok := num(idx)
		if !ok || !isInt {
			return nil, r.errAt(pos, "string indices must be integers, not %s", typeName(idx))
		}
		rs := []rune(x)
		if i < 0 {
			i += int64(len(rs))
		}
		if i < 0 || i >= int64(len(rs)) {
			return undefined{"string index"}, nil
		}
		return string(rs[i]), nil
	}
	if s, ok := idx.(string); ok {
		return r.getAttr(obj, s, pos)
	}
	return nil, r.errAt(pos, "%s object is not subscriptable", typeName(obj))
}

func (r *renderer) evalSlice(e sliceExpr) (any, error) {
	obj, err := r.eval(e.obj)
	if err != nil {
		return nil, err
	}
	var bounds [3]*int64
	for k, part := range []jexpr{e.lo, e.hi, e.step} {
		if part == nil {
			continue
		}
		v, err := r.eval(part)
		if err != nil {
			return nil, err
		}
		if v == nil {
			continue
		}
		i, _, isInt, ok := num(v)
		if !ok || !isInt {
			return nil, r.errAt(e.pos, "slice indices must be integers or None, not %s", typeName(v))
		}
		bounds[k] = &i
	}
	var items []any
	_, isTuple := obj.(tuple)
	obj = unTuple(obj)
	str, isStr := obj.(string)
	var runes []rune
	switch x := obj.(type) {
	case []any:
		items = x
	case string:
		runes = []rune(x)
	default:
		return nil, r.errAt(e.pos, "%s object is not sliceable", typeName(obj))
	}
	_ = str
	n := int64(len(items))
	if isStr {
		n = int64(len(runes))
	}
	idx, err := sliceIndices(n, bounds)
	if err != nil {
		return nil, r.errAt(e.pos, "%v", err)
	}
	if isStr {
		out := make([]rune, len(idx))
		for i, j := range idx {
			out[i] = runes[j]
		}
		return string(out), nil
	}
	out := make([]any, len(idx))
	for i, j := range idx {
		out[i] = items[j]
	}
	if isTuple {
		return tuple(out), nil
	}
	return out, nil
}

// sliceIndices implements Python's slice.indices and iteration.
func sliceIndices(n int64, b [3]*int64) ([]int64, error) {
	step := int64(1)
	if b[2] != nil {
		step = *b[2]
	}
	if step == 0 {
		return nil, errors.New("slice step cannot be zero")
	}
	clamp := func(p *int64, def int64) int64 {
		if p == nil {
			return def
		}
		v := *p
		if v < 0 {
			v += n
			if v < 0 {
				if step < 0 {
					return -1
				}
				return 0
			}
		} else if v >= n {
			if step < 0 {
				return n - 1
			}
			return n
		}
		return v
	}
	var start, stop int64
	if step > 0 {
		start, stop = clamp(b[0], 0), clamp(b[1], n)
	} else {
		start, stop = clamp(b[0], n-1), clamp(b[1], -1)
	}
	var out []int64
	for i := start; (step > 0 && i < stop) || (step < 0 && i > stop); i += step {
		out = append(out, i)
	}
	return out, nil
}

func (r *renderer) evalArgs(args []jexpr, kwargs []kwarg) ([]any, map[string]any, error) {
	av := make([]any, len(args))
	for i, a := range args {
		v, err := r.eval(a)
		if err != nil {
			return nil, nil, err
		}
		av[i] = v
	}
	kv := map[string]any{}
	for _, k := range kwargs {
		v, err := r.eval(k.x)
		if err != nil {
			return nil, nil, err
		}
		kv[k.name] = v
	}
	return av, kv, nil
}

func (r *renderer) evalCall(e callExpr) (any, error) {
	fn, err := r.eval(e.fn)
	if err != nil {
		return nil, err
	}
	args, kwargs, err := r.evalArgs(e.args, e.kwargs)
	if err != nil {
		return nil, err
	}
	switch f := fn.(type) {
	case builtin:
		return f(r, args, kwargs, e.pos)
	case boundMethod:
		return r.callMethod(f, args, kwargs, e.pos)
	case undefined:
		return nil, r.errAt(e.pos, "unsupported construct: call of undefined %q", f.name)
	}
	return nil, r.errAt(e.pos, "%s object is not callable", typeName(fn))
}

func argStr(args []any, i int, def string) (string, bool) {
	if i >= len(args) || args[i] == nil {
		return def, true
	}
	s, ok := args[i].(string)
	return s, ok
}

func (r *renderer) callMethod(m boundMethod, args []any, kwargs map[string]any, pos int) (any, error) {
	if len(kwargs) > 0 {
		return nil, r.errAt(pos, "unsupported construct: keyword arguments to .%s()", m.name)
	}
	if d, ok := m.recv.(*Dict); ok {
		switch m.name {
		case "get":
			if len(args) < 1 || len(args) > 2 {
				return nil, r.errAt(pos, "get() takes 1 or 2 arguments")
			}
			k, _ := args[0].(string)
			if v, ok := d.m[k]; ok {
				return v, nil
			}
			if len(args) == 2 {
				return args[1], nil
			}
			return nil, nil
		case "items":
			out := make([]any, len(d.keys))
			for i, k := range d.keys {
				out[i] = tuple{k, d.m[k]}
			}
			return out, nil
		case "keys":
			out := make([]any, len(d.keys))
			for i, k := range d.keys {
				out[i] = k
			}
			return out, nil
		case "values":
			out := make([]any, len(d.keys))
			for i, k := range d.keys {
				out[i] = d.m[k]
			}
			return out, nil
		}
	}
	s := m.recv.(string)
	bad := func() (any, error) {
		return nil, r.errAt(pos, "bad arguments to str.%s()", m.name)
	}
	switch m.name {
	case "startswith", "endswith":
		if len(args) != 1 {
			return bad()
		}
		var prefixes []any
		switch a := unTuple(args[0]).(type) {
		case string:
			prefixes = []any{a}
		case []any:
			prefixes = a
		default:
			return bad()
		}
		for _, p := range prefixes {
			ps, ok := p.(string)
			if !ok {
				return bad()
			}
			if (m.name == "startswith" && strings.HasPrefix(s, ps)) || (m.name == "endswith" && strings.HasSuffix(s, ps)) {
				return true, nil
			}
		}
		return false, nil
	case "split", "rsplit":
		sep, ok := argStr(args, 0, "")
		if !ok || len(args) > 2 {
			return bad()
		}
		maxSplit := int64(-1)
		if len(args) == 2 {
			n, _, isInt, ok := num(args[1])
			if !ok || !isInt {
				return bad()
			}
			maxSplit = n
		}
		var parts []string
		if len(args) == 0 || args[0] == nil {
			parts = strings.Fields(s)
			if maxSplit >= 0 && int64(len(parts)) > maxSplit+1 {
				return nil, r.errAt(pos, "unsupported construct: split() on whitespace with maxsplit")
			}
		} else if sep == "" {
			return nil, r.errAt(pos, "empty separator in str.%s()", m.name)
		} else if m.name == "split" {
			parts = strings.SplitN(s, sep, int(maxSplit+1))
			if maxSplit < 0 {
				parts = strings.Split(s, sep)
			}
		} else {
			parts = strings.Split(s, sep)
			if maxSplit >= 0 && int64(len(parts)) > maxSplit+1 {
				k := len(parts) - int(maxSplit)
				parts = append([]string{strings.Join(parts[:k], sep)}, parts[k:]...)
			}
		}
		out := make([]any, len(parts))
		for i, p := range parts {
			out[i] = p
		}
		return out, nil
	case "strip", "lstrip", "rstrip":
		chars, ok := argStr(args, 0, "")
		if !ok || len(args) > 1 {
			return bad()
		}
		ws := len(args) == 0 || args[0] == nil
		trimF := func(c rune) bool {
			if ws {
				return unicode.IsSpace(c)
			}
			return strings.ContainsRune(chars, c)
		}
		switch m.name {
		case "strip":
			return strings.TrimFunc(s, trimF), nil
		case "lstrip":
			return strings.TrimLeftFunc(s, trimF), nil
		}
		return strings.TrimRightFunc(s, trimF), nil
	case "lower":
		return strings.ToLower(s), nil
	case "upper":
		return strings.ToUpper(s), nil
	case "title":
		return pyTitle(s), nil
	case "capitalize":
		return pyCapitalize(s), nil
	case "replace":
		if len(args) < 2 || len(args) > 3 {
			return bad()
		}
		old, ok1 := args[0].(string)
		nw, ok2 := args[1].(string)
		if !ok1 || !ok2 {
			return bad()
		}
		n := -1
		if len(args) == 3 {
			c, _, isInt, ok := num(args[2])
			if !ok || !isInt {
				return bad()
			}
			n = int(c)
		}
		if c := strings.Count(s, old); len(s)+c*len(nw) > maxRenderOutput {
			return nil, r.errAt(pos, "string too large")
		}
		return strings.Replace(s, old, nw, n), nil
	case "find", "count":
		sub, ok := argStr(args, 0, "")
		if !ok || len(args) != 1 {
			return bad()
		}
		if m.name == "count" {
			return int64(strings.Count(s, sub)), nil
		}
		i := strings.Index(s, sub)
		if i < 0 {
			return int64(-1), nil
		}
		return int64(utf8.RuneCountInString(s[:i])), nil
	case "join":
		if len(args) != 1 {
			return bad()
		}
		items, err := r.iterate(args[0], pos)
		if err != nil {
			return nil, err
		}
		parts := make([]string, len(items))
		for i, it := range items {
			str, ok := it.(string)
			if !ok {
				return nil, r.errAt(pos, "join: sequence item %d: expected str, %s found", i, typeName(it))
			}
			parts[i] = str
		}
		if joinedLen(parts, s) > maxRenderOutput {
			return nil, r.errAt(pos, "string too large")
		}
		return strings.Join(parts, s), nil
	case "splitlines":
		lines := strings.FieldsFunc(strings.ReplaceAll(s, "\r\n", "\n"), func(c rune) bool { return c == '\n' || c == '\r' })
		out := make([]any, len(lines))
		for i, l := range lines {
			out[i] = l
		}
		return out, nil
	}
	return nil, r.errAt(pos, "unsupported construct: method .%s()", m.name)
}

func joinedLen(parts []string, sep string) int {
	n := len(sep) * len(parts)
	for _, p := range parts {
		n += len(p)
	}
	return n
}

func pyCapitalize(s string) string {
	if s == "" {
		return s
	}
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + strings.ToLower(s[n:])
}

func pyTitle(s string) string {
	var sb strings.Builder
	prevCased := false
	for _, c := range s {
		if unicode.IsLetter(c) {
			if prevCased {
				sb.WriteRune(unicode.ToLower(c))
			} else {
				sb.WriteRune(unicode.ToUpper(c))
			}
			prevCased = true
		} else {
			sb.WriteRune(c)
			prevCased = false
		}
	}
	return sb.String()
}

func fnNamespace(r *renderer, args []any, kwargs map[string]any, pos int) (any, error) {
	d := NewDict()
	d.ns = true
	for _, a := range args {
		src, ok := a.(*Dict)
		if !ok {
			return nil, r.errAt(pos, "namespace() positional argument must be a dict")
		}
		for _, k := range src.keys {
			d.Set(k, src.m[k])
		}
	}
	keys := make([]string, 0, len(kwargs))
	for k := range kwargs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		d.Set(k, kwargs[k])
	}
	return d, nil
}

func fnDict(r *renderer, args []any, kwargs map[string]any, pos int) (any, error) {
	d, err := fnNamespace(r, args, kwargs, pos)
	if err != nil {
		return nil, err
	}
	d.(*Dict).ns = false
	return d, nil
}

func fnRange(r *renderer, args []any, kwargs map[string]any, pos int) (any, error) {
	var b [3]int64
	b[2] = 1
	if len(args) < 1 || len(args) > 3 || len(kwargs) > 0 {
		return nil, r.errAt(pos, "range() takes 1 to 3 integer arguments")
	}
	for i, a := range args {
		n, _, isInt, ok := num(a)
		if !ok || !isInt {
			return nil, r.errAt(pos, "range() arguments must be integers, not %s", typeName(a))
		}
		b[i] = n
	}
	start, stop, step := int64(0), b[0], int64(1)
	if len(args) >= 2 {
		start, stop = b[0], b[1]
	}
	if len(args) == 3 {
		step = b[2]
	}
	if step == 0 {
		return nil, r.errAt(pos, "range() step must not be zero")
	}
	var out []any
	for i := start; (step > 0 && i < stop) || (step < 0 && i > stop); i += step {
		if len(out) >= maxListLen {
			return nil, r.errAt(pos, "range() too long")
		}
		out = append(out, i)
	}
	return out, nil
}

func fnRaise(r *renderer, args []any, kwargs map[string]any, pos int) (any, error) {
	msg := ""
	if len(args) > 0 {
		msg = pyStr(args[0])
	}
	return nil, r.errAt(pos, "raise_exception: %s", msg)
}
