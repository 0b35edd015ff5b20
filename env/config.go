package env

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// DecodeConfig applies env_config overrides onto dst, a pointer to a struct
// already holding the env's defaults (upstream: dataclass(**env_config)).
// Keys match the fields' `yaml:"name"` tags. Each value is converted with
// yaml.v3's rules for the field's type, so YAML-decoded maps and lists land
// in typed fields (map[int]string, [2]int, ...), and ints are accepted for
// float fields. An unknown key is an error naming the key, the nearest valid
// key and every valid key; a value of the wrong type is an error naming the
// key. A null value resets pointer, map, slice and interface fields to nil
// and is an error for other kinds. All problems are reported at once.
func DecodeConfig(envConfig map[string]any, dst any) error {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		panic(fmt.Sprintf("env: DecodeConfig: dst must be a non-nil pointer to a struct, got %T", dst))
	}
	sv := rv.Elem()
	st := sv.Type()
	fields := map[string]int{}
	var names []string
	for i := 0; i < st.NumField(); i++ {
		f := st.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := strings.Split(f.Tag.Get("yaml"), ",")[0]
		if tag == "" || tag == "-" {
			continue
		}
		fields[tag] = i
		names = append(names, tag)
	}
	sort.Strings(names)

	keys := make([]string, 0, len(envConfig))
	for k := range envConfig {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs []string
	for _, k := range keys {
		idx, ok := fields[k]
		if !ok {
			msg := fmt.Sprintf("unknown key %q", k)
			if near := nearest(k, names); near != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", near)
			}
			msg += fmt.Sprintf("; valid keys: %s", strings.Join(names, ", "))
			errs = append(errs, msg)
			continue
		}
		if err := setField(sv.Field(idx), envConfig[k]); err != nil {
			errs = append(errs, fmt.Sprintf("key %q: %v", k, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("env config: %s", strings.Join(errs, "; "))
	}
	return nil
}

func setField(fv reflect.Value, v any) error {
	if v == nil {
		switch fv.Kind() {
		case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface:
			fv.Set(reflect.Zero(fv.Type()))
			return nil
		}
		return fmt.Errorf("null is not allowed for a %s field", fv.Type())
	}
	// Fast paths for the common scalar cases.
	switch x := v.(type) {
	case string:
		if fv.Kind() == reflect.String {
			fv.SetString(x)
			return nil
		}
	case bool:
		if fv.Kind() == reflect.Bool {
			fv.SetBool(x)
			return nil
		}
	case int:
		switch fv.Kind() {
		case reflect.Int, reflect.Int64, reflect.Int32:
			fv.SetInt(int64(x))
			return nil
		case reflect.Float64:
			fv.SetFloat(float64(x))
			return nil
		}
	case float64:
		switch fv.Kind() {
		case reflect.Float64:
			fv.SetFloat(x)
			return nil
		case reflect.Int, reflect.Int64, reflect.Int32:
			if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
				return fmt.Errorf("value %v is not an integer", x)
			}
			fv.SetInt(int64(x))
			return nil
		}
	case map[string]any:
		// Maps keyed by ints (grid_lookup) may arrive with string keys
		// from JSON or command-line overrides.
		if fv.Kind() == reflect.Map && isIntKind(fv.Type().Key().Kind()) {
			m := make(map[any]any, len(x))
			for k, e := range x {
				n, err := strconv.Atoi(k)
				if err != nil {
					return fmt.Errorf("map key %q is not an integer", k)
				}
				m[n] = e
			}
			v = m
		}
	}
	b, err := yaml.Marshal(v)
	if err != nil {
		return fmt.Errorf("cannot encode value %v: %v", v, err)
	}
	nv := reflect.New(fv.Type())
	if err := yaml.Unmarshal(b, nv.Interface()); err != nil {
		return fmt.Errorf("value %v (%T) does not fit a %s field: %v", v, v, fv.Type(), err)
	}
	fv.Set(nv.Elem())
	return nil
}

// nearest returns the valid name closest to k by edit distance, or "" when
// nothing is reasonably close.
func nearest(k string, names []string) string {
	best, bestD := "", len(k)/2+2
	for _, n := range names {
		if d := editDistance(k, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			c = min(c, prev[j]+1, cur[j-1]+1)
			cur[j] = c
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func isIntKind(k reflect.Kind) bool {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return true
	}
	return false
}
