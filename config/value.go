package config

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Values inside a Tree are one of: nil, bool, int, float64, string, []any, *Map.
// Strings may hold ${...} interpolations until the tree is resolved.

// Map is an insertion-ordered string-keyed map: the order of keys follows the YAML files
// (later additions at the end), so printed configs read like upstream's.
type Map struct {
	keys []string
	vals map[string]any
}

func newMap() *Map { return &Map{vals: map[string]any{}} }

// Len returns the number of keys.
func (m *Map) Len() int { return len(m.keys) }

// Keys returns the keys in insertion order.
func (m *Map) Keys() []string { return append([]string(nil), m.keys...) }

// String renders the map in YAML flow style.
func (m *Map) String() string { return flowString(m) }

// Get returns the value stored under k.
func (m *Map) Get(k string) (any, bool) {
	v, ok := m.vals[k]
	return v, ok
}

// set stores v under k, keeping k's position if it exists.
func (m *Map) set(k string, v any) {
	if _, ok := m.vals[k]; !ok {
		m.keys = append(m.keys, k)
	}
	m.vals[k] = v
}

func (m *Map) del(k string) {
	if _, ok := m.vals[k]; !ok {
		return
	}
	delete(m.vals, k)
	for i, kk := range m.keys {
		if kk == k {
			m.keys = append(m.keys[:i], m.keys[i+1:]...)
			break
		}
	}
}

// clone returns a deep copy of v.
func clone(v any) any { return copyTree(v, false) }

// copyTree returns a deep copy of v; dropNulls leaves out the map entries
// whose value is null.
func copyTree(v any, dropNulls bool) any {
	switch x := v.(type) {
	case *Map:
		c := &Map{vals: make(map[string]any, len(x.vals))}
		for _, k := range x.keys {
			if e := x.vals[k]; e != nil || !dropNulls {
				c.keys = append(c.keys, k)
				c.vals[k] = copyTree(e, dropNulls)
			}
		}
		return c
	case []any:
		c := make([]any, len(x))
		for i, e := range x {
			c[i] = copyTree(e, dropNulls)
		}
		return c
	default:
		return v
	}
}

// merge merges src into dst the way OmegaConf.merge does for untyped configs: maps merge
// key by key (recursively), everything else (lists included) is replaced by src's value.
// It returns the merged value; dst may be modified in place.
func merge(dst, src any) any {
	dm, ok1 := dst.(*Map)
	sm, ok2 := src.(*Map)
	if !ok1 || !ok2 {
		return clone(src)
	}
	for _, k := range sm.keys {
		sv := sm.vals[k]
		if dv, ok := dm.vals[k]; ok {
			dm.set(k, merge(dv, sv))
		} else {
			dm.set(k, clone(sv))
		}
	}
	return dm
}

// typeName names the dynamic type of a config value for error messages.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "bool"
	case int:
		return "int"
	case float64:
		return "float"
	case string:
		return "string"
	case []any:
		return "list"
	case *Map:
		return "map"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// describe renders a value briefly for error messages: type and value.
func describe(v any) string {
	switch v.(type) {
	case *Map:
		return "map"
	case []any:
		return "list " + flowString(v)
	case nil:
		return "null"
	default:
		return typeName(v) + " " + flowString(v)
	}
}

// flowString renders a value in YAML flow style on one line (strings quoted when needed).
func flowString(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(x)
	case int:
		return strconv.Itoa(x)
	case float64:
		return formatFloat(x)
	case string:
		return quoteIfNeeded(x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = flowString(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case *Map:
		parts := make([]string, 0, len(x.keys))
		for _, k := range x.keys {
			parts = append(parts, quoteIfNeeded(k)+": "+flowString(x.vals[k]))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprint(v)
}

// formatFloat prints a float so that it reads back as a float (YAML/Hydra): always with a
// '.', an exponent, or as .inf/.nan.
func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return ".inf"
	case math.IsInf(f, -1):
		return "-.inf"
	case math.IsNaN(f):
		return ".nan"
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	if i := strings.Index(s, "e"); i >= 0 && !strings.Contains(s[:i], ".") {
		// 1e-06 -> 1.0e-06 reads back as float under YAML 1.1 and 1.2 alike.
		s = s[:i] + ".0" + s[i:]
	}
	return s
}

// quoteIfNeeded returns s, double-quoted when reading it back unquoted would give another
// type or fail to parse.
func quoteIfNeeded(s string) string {
	if s == "" || strings.ContainsAny(s, ":#{}[],&*!|>'\"%@`\n\t") || strings.TrimSpace(s) != s ||
		strings.HasPrefix(s, "-") || strings.HasPrefix(s, "?") || strings.HasPrefix(s, "~") {
		return strconv.Quote(s)
	}
	if _, isStr := parseScalarText(s).(string); !isStr {
		return strconv.Quote(s)
	}
	return s
}

// YAML 1.1 implicit types as OmegaConf's loader (PyYAML SafeLoader + OmegaConf's float
// resolver, timestamps off) resolves them.
var (
	yamlBool  = regexp.MustCompile(`^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$`)
	yamlNull  = regexp.MustCompile(`^(?:~|null|Null|NULL|)$`)
	yamlInt   = regexp.MustCompile(`^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+)$`)
	yamlFloat = regexp.MustCompile(`^(?:[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+]?[0-9]+)?|[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+|\.[0-9_]+(?:[eE][-+][0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$`)
)

// parseScalarText resolves an unquoted YAML scalar to bool, nil, int, float64 or string.
func parseScalarText(s string) any {
	switch {
	case yamlNull.MatchString(s):
		return nil
	case yamlBool.MatchString(s):
		switch s[0] {
		case 'y', 'Y', 't', 'T':
			return true
		case 'o', 'O':
			return s[1] == 'n' || s[1] == 'N'
		}
		return false
	case yamlInt.MatchString(s):
		if i, ok := parseYAMLInt(s); ok {
			return i
		}
		if f, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64); err == nil {
			return f // beyond int64: keep the magnitude as a float
		}
		return s
	case yamlFloat.MatchString(s):
		return parseYAMLFloat(s)
	}
	return s
}

func parseYAMLInt(s string) (int, bool) {
	t := strings.ReplaceAll(s, "_", "")
	sign := ""
	if t[0] == '+' || t[0] == '-' {
		sign, t = t[:1], t[1:]
	}
	base := 10
	switch {
	case strings.HasPrefix(t, "0b"):
		base, t = 2, t[2:]
	case strings.HasPrefix(t, "0x"):
		base, t = 16, t[2:]
	case len(t) > 1 && t[0] == '0':
		base, t = 8, t[1:]
	}
	v, err := strconv.ParseInt(sign+t, base, 64)
	return int(v), err == nil
}

func parseYAMLFloat(s string) float64 {
	t := strings.ReplaceAll(s, "_", "")
	switch strings.ToLower(strings.TrimLeft(t, "+-")) {
	case ".inf":
		if t[0] == '-' {
			return math.Inf(-1)
		}
		return math.Inf(1)
	case ".nan":
		return math.NaN()
	}
	f, _ := strconv.ParseFloat(t, 64) // out of range gives ±Inf, as Python does
	return f
}

// fromNode converts a parsed YAML node into config values.
func fromNode(n *yaml.Node, depth int) (any, error) {
	if depth > 100 {
		return nil, fmt.Errorf("line %d: nesting deeper than 100 levels", n.Line)
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return newMap(), nil
		}
		return fromNode(n.Content[0], depth+1)
	case yaml.AliasNode:
		return fromNode(n.Alias, depth+1)
	case yaml.MappingNode:
		m := newMap()
		for i := 0; i+1 < len(n.Content); i += 2 {
			kn, vn := n.Content[i], n.Content[i+1]
			if kn.Tag == "!!merge" || (kn.Kind == yaml.ScalarNode && kn.Value == "<<" && kn.Style == 0) {
				if err := mergeKey(m, vn, depth); err != nil {
					return nil, err
				}
				continue
			}
			if kn.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: map keys must be scalars", kn.Line)
			}
			v, err := fromNode(vn, depth+1)
			if err != nil {
				return nil, err
			}
			k := kn.Value
			if _, dup := m.vals[k]; dup {
				return nil, fmt.Errorf("line %d: duplicate key %q", kn.Line, k)
			}
			m.set(k, v)
		}
		return m, nil
	case yaml.SequenceNode:
		l := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := fromNode(c, depth+1)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		return l, nil
	case yaml.ScalarNode:
		return scalarFromNode(n)
	}
	return nil, fmt.Errorf("line %d: unsupported YAML node", n.Line)
}

func mergeKey(m *Map, vn *yaml.Node, depth int) error {
	srcs := []*yaml.Node{vn}
	if vn.Kind == yaml.SequenceNode {
		srcs = vn.Content
	}
	for _, s := range srcs {
		v, err := fromNode(s, depth+1)
		if err != nil {
			return err
		}
		sm, ok := v.(*Map)
		if !ok {
			return fmt.Errorf("line %d: << merge needs a map", s.Line)
		}
		for _, k := range sm.keys {
			if _, exists := m.vals[k]; !exists {
				m.set(k, sm.vals[k])
			}
		}
	}
	return nil
}

func scalarFromNode(n *yaml.Node) (any, error) {
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return n.Value, nil
	}
	if n.Style&yaml.TaggedStyle == 0 {
		// Plain scalar: resolve with OmegaConf's YAML 1.1 rules, not yaml.v3's 1.2 ones.
		return parseScalarText(n.Value), nil
	}
	switch n.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!bool", "!!int", "!!float":
		v := parseScalarText(n.Value)
		want := map[string]string{"!!bool": "bool", "!!int": "int", "!!float": "float"}[n.ShortTag()]
		if n.ShortTag() == "!!float" {
			if i, ok := v.(int); ok {
				v = float64(i)
			}
		}
		if typeName(v) != want {
			return nil, fmt.Errorf("line %d: cannot read %q as %s", n.Line, n.Value, want)
		}
		return v, nil
	}
	return n.Value, nil
}

// toNode converts config values into a YAML node tree for printing and decoding.
func toNode(v any) *yaml.Node {
	switch x := v.(type) {
	case *Map:
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		for _, k := range x.keys {
			kn := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k}
			if _, isInt := parseScalarText(k).(int); isInt {
				kn.Tag = "!!int" // int-looking keys (grid_lookup: {0: W}) decode into map[int]T
			}
			n.Content = append(n.Content, kn, toNode(x.vals[k]))
		}
		return n
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle}
		for _, e := range x {
			c := toNode(e)
			if c.Kind != yaml.ScalarNode || strings.Contains(c.Value, "\n") {
				n.Style = 0 // block style unless every element is a one-line scalar
			}
			n.Content = append(n.Content, c)
		}
		return n
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(x)}
	case int:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(x)}
	case float64:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: formatFloat(x)}
	case string:
		n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: x}
		if _, isStr := parseScalarText(x).(string); !isStr {
			n.Style = yaml.DoubleQuotedStyle
		}
		return n
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: fmt.Sprint(v)}
}

// sortedKeys returns the keys of m in byte order (used for canonical hashing).
func sortedKeys(m *Map) []string {
	ks := append([]string(nil), m.keys...)
	sort.Strings(ks)
	return ks
}
