package config

import (
	"fmt"
	"strconv"
	"strings"
)

// splitPath splits a dotted key ("a.b.c", "a.list[0].x", "a.list.0.x") into segments.
func splitPath(p string) ([]string, error) {
	if p == "" {
		return nil, fmt.Errorf("empty key")
	}
	var segs []string
	for _, part := range strings.Split(p, ".") {
		// a[0][1] -> a, 0, 1
		base := part
		var idx []string
		for strings.HasSuffix(base, "]") {
			open := strings.LastIndex(base, "[")
			if open < 0 {
				return nil, fmt.Errorf("key %q: unbalanced ']'", p)
			}
			n := base[open+1 : len(base)-1]
			if _, err := strconv.Atoi(n); err != nil {
				return nil, fmt.Errorf("key %q: list index %q is not an integer", p, n)
			}
			idx = append([]string{n}, idx...)
			base = base[:open]
		}
		if strings.ContainsAny(base, "[]") {
			return nil, fmt.Errorf("key %q: misplaced bracket", p)
		}
		if base == "" {
			if len(idx) == 0 || len(segs) == 0 {
				return nil, fmt.Errorf("key %q: empty segment", p)
			}
		} else {
			segs = append(segs, base)
		}
		segs = append(segs, idx...)
	}
	return segs, nil
}

func joinPath(segs []string) string { return strings.Join(segs, ".") }

// child returns the element of container c named seg.
func child(c any, seg string) (any, bool) {
	switch x := c.(type) {
	case *Map:
		return x.Get(seg)
	case []any:
		i, err := strconv.Atoi(seg)
		if err != nil || i < 0 || i >= len(x) {
			return nil, false
		}
		return x[i], true
	}
	return nil, false
}

// lookup follows segs from root.
func lookup(root any, segs []string) (any, bool) {
	cur := root
	for _, s := range segs {
		v, ok := child(cur, s)
		if !ok {
			return nil, false
		}
		cur = v
	}
	return cur, true
}

// setChild stores v as element seg of container c (which must exist; list indexes must be in
// range).
func setChild(c any, seg string, v any) error {
	switch x := c.(type) {
	case *Map:
		x.set(seg, v)
		return nil
	case []any:
		i, err := strconv.Atoi(seg)
		if err != nil || i < 0 || i >= len(x) {
			return fmt.Errorf("list index %q out of range [0,%d)", seg, len(x))
		}
		x[i] = v
		return nil
	}
	return fmt.Errorf("cannot set %q inside a %s", seg, typeName(c))
}

// leafKeys appends the dotted paths of all leaves under v (scalars, lists and empty maps are
// leaves) to out; when all is true intermediate map paths are included too.
func leafKeys(prefix string, v any, all bool, out *[]string) {
	m, ok := v.(*Map)
	if !ok || m.Len() == 0 {
		if prefix != "" {
			*out = append(*out, prefix)
		}
		return
	}
	if all && prefix != "" {
		*out = append(*out, prefix)
	}
	for _, k := range m.keys {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		leafKeys(p, m.vals[k], all, out)
	}
}
