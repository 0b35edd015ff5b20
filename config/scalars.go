package config

import (
	"fmt"
	"math"
	"reflect"
	"strings"
)

// checkScalars walks v against the Go type typ and reports scalars that
// yaml.v3 would convert silently or reject without naming the key: a
// non-integral or non-finite float for an integer field (yaml.v3 truncates
// 2.7 to 2), and a non-bool for a bool field (yaml.v3's error names no
// key). Keys with no matching field are skipped (Decode reports those, and
// DecodeLoose ignores them).
func checkScalars(path string, v any, typ reflect.Type, depth int) []error {
	if depth > 64 || typ == nil {
		return nil
	}
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if typ.Implements(unmarshalerType) || reflect.PointerTo(typ).Implements(unmarshalerType) {
		return nil
	}
	where := path
	if where == "" {
		where = "<root>"
	}
	switch x := v.(type) {
	case *Map:
		switch typ.Kind() {
		case reflect.Struct:
			fields := map[string]reflect.Type{}
			var inlineMap reflect.Type
			collectFields(typ, fields, &inlineMap)
			var errs []error
			for _, k := range x.keys {
				ft, ok := fields[k]
				if !ok && inlineMap != nil {
					ft, ok = inlineMap.Elem(), true
				}
				if ok {
					errs = append(errs, checkScalars(joinKey(path, k), x.vals[k], ft, depth+1)...)
				}
			}
			return errs
		case reflect.Map:
			var errs []error
			for _, k := range x.keys {
				errs = append(errs, checkScalars(joinKey(path, k), x.vals[k], typ.Elem(), depth+1)...)
			}
			return errs
		}
	case []any:
		if typ.Kind() == reflect.Slice || typ.Kind() == reflect.Array {
			var errs []error
			for i, e := range x {
				errs = append(errs, checkScalars(fmt.Sprintf("%s[%d]", path, i), e, typ.Elem(), depth+1)...)
			}
			return errs
		}
	case float64:
		switch typ.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			if math.IsNaN(x) || math.IsInf(x, 0) || x != math.Trunc(x) {
				return []error{fmt.Errorf("config: %s: want an integer, found %s: %w", where, describe(x), ErrType)}
			}
		case reflect.Bool:
			return []error{fmt.Errorf("config: %s: want true or false, found %s: %w", where, describe(x), ErrType)}
		}
	case int, string, []byte:
		if typ.Kind() == reflect.Bool {
			hint := ""
			if s, ok := x.(string); ok && isYAML11Bool(s) {
				hint = " (YAML 1.2 reads only true/false as booleans)"
			}
			return []error{fmt.Errorf("config: %s: want true or false, found %s%s: %w", where, describe(x), hint, ErrType)}
		}
	}
	return nil
}

func isYAML11Bool(s string) bool {
	switch strings.ToLower(s) {
	case "yes", "no", "on", "off", "y", "n":
		return true
	}
	return false
}
