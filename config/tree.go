package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"ragen/config/rule"
	"reflect"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// ErrNotFound marks a missing key (errors.Is).
var ErrNotFound = errors.New("key not found")

// ErrType marks a value of the wrong type (errors.Is).
var ErrType = errors.New("wrong type")

// Tree is a composed, overridden and resolved configuration.
type Tree struct {
	name string
	root *Map
	raw  *Map // before interpolation
}

// Name is the config name the tree was loaded from.
func (t *Tree) Name() string { return t.name }

// Get returns a copy of the value at the dotted path (nil, bool, int, float64, string,
// []any or *Map).
func (t *Tree) Get(path string) (any, error) {
	v, err := t.get(path)
	if err != nil {
		return nil, err
	}
	return clone(v), nil
}

// Has reports whether the dotted path exists.
func (t *Tree) Has(path string) bool {
	_, err := t.get(path)
	return err == nil
}

func (t *Tree) get(path string) (any, error) {
	segs, err := splitPath(path)
	if err != nil {
		return nil, fmt.Errorf("config: %v", err)
	}
	v, ok := lookup(t.root, segs)
	if !ok {
		return nil, fmt.Errorf("config: %s: %w%s", path, ErrNotFound, rule.DidYouMean(path, t.allKeys()))
	}
	if s, ok := v.(string); ok && s == "???" {
		return nil, fmt.Errorf("config: %s: missing mandatory value (???)", path)
	}
	return v, nil
}

func (t *Tree) typeErr(path, want string, v any) error {
	return fmt.Errorf("config: %s: want %s, found %s: %w", path, want, describe(v), ErrType)
}

// Int returns the integer at path. Floats are not converted.
func (t *Tree) Int(path string) (int, error) {
	v, err := t.get(path)
	if err != nil {
		return 0, err
	}
	i, ok := v.(int)
	if !ok {
		return 0, t.typeErr(path, "int", v)
	}
	return i, nil
}

// Float returns the number at path (an int is widened).
func (t *Tree) Float(path string) (float64, error) {
	v, err := t.get(path)
	if err != nil {
		return 0, err
	}
	switch x := v.(type) {
	case float64:
		return x, nil
	case int:
		return float64(x), nil
	}
	return 0, t.typeErr(path, "float", v)
}

// String returns the string at path.
func (t *Tree) String(path string) (string, error) {
	v, err := t.get(path)
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", t.typeErr(path, "string", v)
	}
	return s, nil
}

// Bool returns the boolean at path.
func (t *Tree) Bool(path string) (bool, error) {
	v, err := t.get(path)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, t.typeErr(path, "bool", v)
	}
	return b, nil
}

// StringSlice returns the list of strings at path.
func (t *Tree) StringSlice(path string) ([]string, error) {
	v, err := t.get(path)
	if err != nil {
		return nil, err
	}
	l, ok := v.([]any)
	if !ok {
		return nil, t.typeErr(path, "list of strings", v)
	}
	out := make([]string, len(l))
	for i, e := range l {
		s, ok := e.(string)
		if !ok {
			return nil, t.typeErr(fmt.Sprintf("%s[%d]", path, i), "string", e)
		}
		out[i] = s
	}
	return out, nil
}

// IntSlice returns the list of integers at path.
func (t *Tree) IntSlice(path string) ([]int, error) {
	v, err := t.get(path)
	if err != nil {
		return nil, err
	}
	l, ok := v.([]any)
	if !ok {
		return nil, t.typeErr(path, "list of ints", v)
	}
	out := make([]int, len(l))
	for i, e := range l {
		n, ok := e.(int)
		if !ok {
			return nil, t.typeErr(fmt.Sprintf("%s[%d]", path, i), "int", e)
		}
		out[i] = n
	}
	return out, nil
}

// Set stores a value (nil, bool, int, float64, string, []any, *Map, or any other int/float
// kind) at an existing or new path, creating intermediate maps; used for derived keys
// such as data.train_batch_size. The value is not interpolated.
func (t *Tree) Set(path string, v any) error {
	v, err := normalize(v)
	if err != nil {
		return fmt.Errorf("config: set %s: %w", path, err)
	}
	ov := Override{Kind: ForceAdd, Key: path, Value: v, HasValue: true, Input: "++" + path}
	if err := applyOverride(t.root, ov); err != nil {
		return err
	}
	return applyOverride(t.raw, ov)
}

func normalize(v any) (any, error) {
	switch x := v.(type) {
	case nil, bool, int, float64, string:
		return x, nil
	case *Map:
		return clone(x), nil
	case []string:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = s
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			n, err := normalize(e)
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return int(rv.Int()), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if rv.Uint() > math.MaxInt64 {
			return nil, fmt.Errorf("%d overflows int", rv.Uint())
		}
		return int(rv.Uint()), nil
	case reflect.Float32, reflect.Float64:
		return rv.Float(), nil
	}
	return nil, fmt.Errorf("unsupported value type %T", v)
}

// Keys returns every dotted leaf key (scalars, lists and empty maps) in file order.
func (t *Tree) Keys() []string {
	var out []string
	leafKeys("", t.root, false, &out)
	return out
}

func (t *Tree) allKeys() []string {
	var out []string
	leafKeys("", t.root, true, &out)
	return out
}

// YAML renders the resolved config (like `--cfg job --resolve`).
func (t *Tree) YAML() string { return renderYAML(t.root) }

// RawYAML renders the composed and overridden config before interpolation (`--cfg job`).
func (t *Tree) RawYAML() string { return renderYAML(t.raw) }

func renderYAML(m *Map) string {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(toNode(m)); err != nil {
		panic(fmt.Sprintf("config: encoding a config tree failed: %v", err)) // our node tree is always encodable
	}
	_ = enc.Close()
	return b.String()
}

// Hash returns a stable hex SHA-256 of the resolved config: independent of key order,
// distinguishing types (1 vs 1.0 vs "1").
func (t *Tree) Hash() string {
	h := sha256.New()
	var w func(v any)
	w = func(v any) {
		switch x := v.(type) {
		case *Map:
			fmt.Fprintf(h, "{%d", x.Len())
			for _, k := range sortedKeys(x) {
				fmt.Fprintf(h, "%d:%s", len(k), k)
				w(x.vals[k])
			}
			h.Write([]byte("}"))
		case []any:
			fmt.Fprintf(h, "[%d", len(x))
			for _, e := range x {
				w(e)
			}
			h.Write([]byte("]"))
		case string:
			fmt.Fprintf(h, "s%d:%s", len(x), x)
		case int:
			fmt.Fprintf(h, "i%d;", x)
		case float64:
			fmt.Fprintf(h, "f%s;", strconv.FormatUint(math.Float64bits(x), 16))
		case bool:
			fmt.Fprintf(h, "b%t;", x)
		case nil:
			h.Write([]byte("n;"))
		}
	}
	w(t.root)
	return hex.EncodeToString(h.Sum(nil))
}

// Decode decodes the subtree at path ("" = whole config) into dst (a pointer to a struct,
// map, ...) through its yaml tags. Keys that match no field are an error naming the full
// key and the nearest field.
func (t *Tree) Decode(path string, dst any) error {
	var v any = t.root
	if path != "" {
		var err error
		if v, err = t.get(path); err != nil {
			return err
		}
	}
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("config: decode %s: destination must be a non-nil pointer, got %T", path, dst)
	}
	if errs := append(checkFields(path, v, rv.Type().Elem(), 0), checkScalars(path, v, rv.Type().Elem(), 0)...); len(errs) > 0 {
		return errors.Join(errs...)
	}
	node := toNode(v)
	if err := node.Decode(dst); err != nil {
		where := path
		if where == "" {
			where = "<root>"
		}
		return fmt.Errorf("config: decode %s: %w", where, err)
	}
	return nil
}

// checkFields walks v against the Go type typ and reports map keys with no matching
// struct field.
func checkFields(path string, v any, typ reflect.Type, depth int) []error {
	if depth > 64 {
		return nil
	}
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch x := v.(type) {
	case *Map:
		switch typ.Kind() {
		case reflect.Struct:
			if typ.Implements(unmarshalerType) || reflect.PointerTo(typ).Implements(unmarshalerType) {
				return nil
			}
			fields := map[string]reflect.Type{}
			var inlineMap reflect.Type
			collectFields(typ, fields, &inlineMap)
			var errs []error
			for _, k := range x.keys {
				p := k
				if path != "" {
					p = path + "." + k
				}
				ft, ok := fields[k]
				if !ok {
					if inlineMap != nil {
						errs = append(errs, checkFields(p, x.vals[k], inlineMap.Elem(), depth+1)...)
						continue
					}
					names := make([]string, 0, len(fields))
					for n := range fields {
						names = append(names, n)
					}
					hint := ""
					if s := rule.NearestKey(k, names); s != "" {
						hint = " (did you mean " + joinKey(path, s) + "?)"
					}
					tn := typ.String()
					if typ.Name() == "" {
						tn = "anonymous struct"
					}
					errs = append(errs, fmt.Errorf("config: %s: unknown key for %s%s", p, tn, hint))
					continue
				}
				errs = append(errs, checkFields(p, x.vals[k], ft, depth+1)...)
			}
			return errs
		case reflect.Map:
			var errs []error
			for _, k := range x.keys {
				errs = append(errs, checkFields(joinKey(path, k), x.vals[k], typ.Elem(), depth+1)...)
			}
			return errs
		}
	case []any:
		if typ.Kind() == reflect.Slice || typ.Kind() == reflect.Array {
			var errs []error
			for i, e := range x {
				errs = append(errs, checkFields(fmt.Sprintf("%s[%d]", path, i), e, typ.Elem(), depth+1)...)
			}
			return errs
		}
	}
	return nil
}

var unmarshalerType = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()

func joinKey(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// collectFields maps yaml key names to field types, following yaml.v3's tag rules
// (name from the tag or the lower-cased field name, ",inline", "-").
func collectFields(typ reflect.Type, out map[string]reflect.Type, inlineMap *reflect.Type) {
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		if f.PkgPath != "" && !f.Anonymous {
			continue
		}
		tag := f.Tag.Get("yaml")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if strings.Contains(","+opts+",", ",inline,") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Map {
				*inlineMap = ft
			} else if ft.Kind() == reflect.Struct {
				collectFields(ft, out, inlineMap)
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
}

// DecodeLoose decodes the subtree at path into dst like Decode, but ignores
// keys with no matching field. Library packages use it to pick their part
// out of the whole key tree: the tree itself was already checked against
// the shipped configs (overrides of unknown keys are errors), so a key the
// struct lacks belongs to another package.
func (t *Tree) DecodeLoose(path string, dst any) error {
	var v any = t.root
	if path != "" {
		var err error
		if v, err = t.get(path); err != nil {
			return err
		}
	}
	if rv := reflect.ValueOf(dst); rv.Kind() == reflect.Pointer && !rv.IsNil() {
		if errs := checkScalars(path, v, rv.Type().Elem(), 0); len(errs) > 0 {
			return errors.Join(errs...)
		}
	}
	if err := toNode(v).Decode(dst); err != nil {
		if path == "" {
			path = "<root>"
		}
		return fmt.Errorf("config: decode %s: %w", path, err)
	}
	return nil
}
