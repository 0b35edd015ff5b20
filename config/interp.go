package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"ragen/config/rule"
	"ragen/internal/pystr"
)

// ErrInterpolation marks interpolation failures (missing target, cycle, bad syntax,
// unset environment variable) for errors.Is.
var ErrInterpolation = errors.New("interpolation failed")

type resolver struct {
	root     *Map
	getenv   func(string) (string, bool)
	active   map[string]bool // paths being resolved (cycle detection)
	chain    []string
	done     map[string]bool
	allPaths []string
}

func interpErr(at, format string, args ...any) error {
	return fmt.Errorf("config: %s: %s: %w", at, fmt.Sprintf(format, args...), ErrInterpolation)
}

// resolveAll replaces every ${...} in root by its value, in place.
func resolveAll(root *Map, getenv func(string) (string, bool)) error {
	r := &resolver{root: root, getenv: getenv, active: map[string]bool{}, done: map[string]bool{}}
	var errs []error
	var walk func(segs []string, v any)
	walk = func(segs []string, v any) {
		switch x := v.(type) {
		case *Map:
			for _, k := range x.Keys() {
				walk(append(append([]string(nil), segs...), k), x.vals[k])
			}
		case []any:
			for i := range x {
				walk(append(append([]string(nil), segs...), strconv.Itoa(i)), x[i])
			}
		case string:
			if _, err := r.resolvePath(segs); err != nil {
				errs = append(errs, err)
			}
		}
	}
	walk(nil, root)
	return errors.Join(errs...)
}

// resolvePath resolves the value at segs (recursively for containers), stores the result
// in the tree and returns it.
func (r *resolver) resolvePath(segs []string) (any, error) {
	key := joinPath(segs)
	v, ok := lookup(r.root, segs)
	if !ok {
		return nil, fmt.Errorf("missing key %s", key)
	}
	if r.done[key] {
		return v, nil
	}
	switch x := v.(type) {
	case *Map:
		for _, k := range x.Keys() {
			if _, err := r.resolvePath(append(append([]string(nil), segs...), k)); err != nil {
				return nil, err
			}
		}
		r.done[key] = true
		return x, nil
	case []any:
		for i := range x {
			if _, err := r.resolvePath(append(append([]string(nil), segs...), strconv.Itoa(i))); err != nil {
				return nil, err
			}
		}
		r.done[key] = true
		return x, nil
	case string:
		if !strings.Contains(x, "${") {
			r.done[key] = true
			return x, nil
		}
		if r.active[key] {
			return nil, interpErr(key, "interpolation cycle: %s -> %s", strings.Join(r.chain, " -> "), key)
		}
		r.active[key] = true
		r.chain = append(r.chain, key)
		res, err := r.evalTemplate(x, segs)
		r.chain = r.chain[:len(r.chain)-1]
		delete(r.active, key)
		if err != nil {
			return nil, err
		}
		parent, _ := lookup(r.root, segs[:len(segs)-1])
		if err := setChild(parent, segs[len(segs)-1], res); err != nil {
			return nil, interpErr(key, "%v", err)
		}
		r.done[key] = true
		return res, nil
	}
	r.done[key] = true
	return v, nil
}

// evalTemplate evaluates a string that contains interpolations. A string that is exactly
// one interpolation takes the target's type; otherwise pieces are concatenated as text.
func (r *resolver) evalTemplate(s string, at []string) (any, error) {
	atKey := joinPath(at)
	var parts []any
	var lit strings.Builder
	single := true
	for i := 0; i < len(s); {
		if strings.HasPrefix(s[i:], `\${`) {
			lit.WriteString("${")
			i += 3
			single = false
			continue
		}
		if strings.HasPrefix(s[i:], "${") {
			end, err := interpEnd(s, i)
			if err != nil {
				return nil, interpErr(atKey, "%v", err)
			}
			if lit.Len() > 0 {
				parts = append(parts, lit.String())
				lit.Reset()
			}
			v, err := r.evalInterp(s[i+2:end-1], at)
			if err != nil {
				return nil, err
			}
			parts = append(parts, interpValue{v})
			i = end
			continue
		}
		lit.WriteByte(s[i])
		i++
	}
	if lit.Len() > 0 {
		parts = append(parts, lit.String())
	}
	if single && len(parts) == 1 {
		if iv, ok := parts[0].(interpValue); ok {
			return clone(iv.v), nil
		}
	}
	var b strings.Builder
	for _, p := range parts {
		switch x := p.(type) {
		case string:
			b.WriteString(x)
		case interpValue:
			b.WriteString(pyStr(x.v))
		}
	}
	return b.String(), nil
}

type interpValue struct{ v any }

// evalInterp evaluates the body of ${...}: a (possibly relative) key or resolver:args.
func (r *resolver) evalInterp(body string, at []string) (any, error) {
	atKey := joinPath(at)
	if name, args, isRes := splitResolver(body); isRes {
		return r.callResolver(name, args, at)
	}
	body = strings.TrimSpace(body)
	if body == "" {
		return nil, interpErr(atKey, "empty interpolation ${}")
	}
	target, err := r.targetPath(body, at)
	if err != nil {
		return nil, interpErr(atKey, "%v", err)
	}
	if _, ok := lookup(r.root, target); !ok {
		if r.allPaths == nil {
			leafKeys("", r.root, true, &r.allPaths)
		}
		tk := joinPath(target)
		return nil, interpErr(atKey, "${%s} refers to missing key %s%s", body, tk, rule.DidYouMean(tk, r.allPaths))
	}
	return r.resolvePath(target)
}

// targetPath turns an interpolation key into absolute segments. "a.b" is absolute;
// ".x" is a sibling of the node at `at`, "..x" a sibling of its container, and so on.
func (r *resolver) targetPath(body string, at []string) ([]string, error) {
	dots := len(body) - len(strings.TrimLeft(body, "."))
	if dots == 0 {
		return splitPath(body)
	}
	base := at[:len(at)-1] // the container holding the node
	up := dots - 1
	if up > len(base) {
		return nil, fmt.Errorf("relative key %q climbs above the root", body)
	}
	base = base[:len(base)-up]
	rest := body[dots:]
	if rest == "" {
		return append([]string(nil), base...), nil
	}
	segs, err := splitPath(rest)
	if err != nil {
		return nil, err
	}
	return append(append([]string(nil), base...), segs...), nil
}

// splitResolver splits "name:args" when the body has a ':' outside nested interpolations.
func splitResolver(body string) (name, args string, ok bool) {
	depth := 0
	for i := 0; i < len(body); i++ {
		switch {
		case strings.HasPrefix(body[i:], "${"):
			depth++
			i++
		case body[i] == '}':
			depth--
		case body[i] == ':' && depth == 0:
			return strings.TrimSpace(body[:i]), body[i+1:], true
		}
	}
	return "", "", false
}

// splitArgs splits resolver arguments at top-level commas (outside quotes and ${}).
func splitArgs(s string) []string {
	var out []string
	depth, start := 0, 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case strings.HasPrefix(s[i:], "${"):
			depth++
			i++
		case c == '}':
			depth--
		case c == ',' && depth == 0:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// argValue evaluates one resolver argument: quoted strings and interpolations are
// resolved, other text is typed like an override value.
func (r *resolver) argValue(a string, at []string) (any, error) {
	a = strings.TrimSpace(a)
	if len(a) >= 2 && (a[0] == '\'' || a[0] == '"') && a[len(a)-1] == a[0] {
		p := &valueParser{s: a, input: a}
		s, err := p.quoted()
		if err != nil {
			return nil, interpErr(joinPath(at), "%v", err)
		}
		if strings.Contains(s, "${") {
			return r.evalTemplate(s, at)
		}
		return s, nil
	}
	if strings.Contains(a, "${") {
		return r.evalTemplate(a, at)
	}
	return typePrimitive(a), nil
}

func (r *resolver) callResolver(name, args string, at []string) (any, error) {
	atKey := joinPath(at)
	var argv []any
	if strings.TrimSpace(args) != "" {
		for _, a := range splitArgs(args) {
			v, err := r.argValue(a, at)
			if err != nil {
				return nil, err
			}
			argv = append(argv, v)
		}
	}
	switch name {
	case "oc.env", "env":
		if len(argv) < 1 || len(argv) > 2 {
			return nil, interpErr(atKey, "${%s:VAR[,default]} takes 1 or 2 arguments, got %d", name, len(argv))
		}
		v, ok := argv[0].(string)
		if !ok || v == "" {
			return nil, interpErr(atKey, "${%s:...}: variable name must be a string", name)
		}
		if val, ok := r.getenv(v); ok {
			return val, nil
		}
		if len(argv) == 2 {
			if argv[1] == nil {
				return nil, nil
			}
			return pyStr(argv[1]), nil // OmegaConf: defaults are converted to strings
		}
		return nil, interpErr(atKey, "environment variable %s is not set and ${%s:%s} has no default", v, name, v)
	case "oc.select":
		if len(argv) < 1 || len(argv) > 2 {
			return nil, interpErr(atKey, "${oc.select:key[,default]} takes 1 or 2 arguments, got %d", len(argv))
		}
		k, ok := argv[0].(string)
		if !ok {
			return nil, interpErr(atKey, "${oc.select:...}: key must be a string")
		}
		target, err := r.targetPath(k, at)
		if err != nil {
			return nil, interpErr(atKey, "%v", err)
		}
		if _, ok := lookup(r.root, target); !ok {
			if len(argv) == 2 {
				return argv[1], nil
			}
			return nil, nil
		}
		return r.resolvePath(target)
	case "oc.decode":
		if len(argv) != 1 {
			return nil, interpErr(atKey, "${oc.decode:value} takes 1 argument")
		}
		s, ok := argv[0].(string)
		if !ok {
			return argv[0], nil
		}
		p := &valueParser{s: s, input: s}
		v, err := p.parseTop()
		if err != nil {
			return nil, interpErr(atKey, "oc.decode: %v", err)
		}
		return v, nil
	}
	return nil, interpErr(atKey, "unknown resolver %q (supported: oc.env, oc.select, oc.decode)", name)
}

// pyStr converts a value to text the way Python's str() does (used when an interpolation
// is embedded in a longer string, as OmegaConf does).
func pyStr(v any) string {
	switch x := v.(type) {
	case nil:
		return "None"
	case bool:
		if x {
			return "True"
		}
		return "False"
	case int:
		return strconv.Itoa(x)
	case float64:
		return pystr.FloatRepr(x)
	case string:
		return x
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = pyRepr(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case *Map:
		parts := make([]string, 0, x.Len())
		for _, k := range x.keys {
			parts = append(parts, pyRepr(k)+": "+pyRepr(x.vals[k]))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprint(v)
}

func pyRepr(v any) string {
	if s, ok := v.(string); ok {
		return pystr.Quote(s)
	}
	return pyStr(v)
}
