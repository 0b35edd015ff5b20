package settings

import (
	"fmt"
	"math"
	"reflect"
	"strings"

	"ragen/config/rule"
)

// nonFinite reports every NaN or infinite float64 field of v (a config
// struct), by its yaml key path: a non-finite learning rate or coefficient
// only shows up later as NaN weights.
func nonFinite(prefix string, v reflect.Value) []error {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return nonFinite(prefix, v.Elem())
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			return []error{rule.Errorf(prefix, "%g is not finite: want a finite number", f)}
		}
	case reflect.Slice, reflect.Array:
		var errs []error
		for i := 0; i < v.Len(); i++ {
			errs = append(errs, nonFinite(fmt.Sprintf("%s[%d]", prefix, i), v.Index(i))...)
		}
		return errs
	case reflect.Struct:
		var errs []error
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = strings.ToLower(f.Name)
			}
			p := prefix
			if !strings.Contains(","+opts+",", ",inline,") {
				p = strings.TrimPrefix(prefix+"."+name, ".")
			}
			errs = append(errs, nonFinite(p, v.Field(i))...)
		}
		return errs
	}
	return nil
}
