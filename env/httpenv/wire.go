package httpenv

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"ragen/env"
)

// Request and reply bodies of the protocol (see the package doc).

type createRequest struct {
	EnvType   string         `json:"env_type"`
	EnvConfig map[string]any `json:"env_config"`
}

type createReply struct {
	ID string `json:"id"`
	envState
}

// envState is the part of a reply that mirrors the env after a call: its
// Render() text, its action lookup and grid when it has them.
type envState struct {
	Render       *string        `json:"render"`
	ActionLookup map[int]string `json:"action_lookup,omitempty"`
	Grid         [][]int        `json:"grid,omitempty"`
}

type resetRequest struct {
	Seed *int64 `json:"seed"`
	Mode string `json:"mode"`
}

type resetReply struct {
	Observation *string `json:"observation"`
	envState
}

type wireAction struct {
	ID   int    `json:"id"`
	Text string `json:"text"`
}

type stepRequest struct {
	Action *wireAction `json:"action"`
}

type stepReply struct {
	Observation *string         `json:"observation"`
	Reward      json.RawMessage `json:"reward"`
	RewardIsInt *bool           `json:"reward_is_int"`
	Done        *bool           `json:"done"`
	Info        map[string]any  `json:"info"`
	envState
}

type renderReply struct {
	Observation *string `json:"observation"`
}

type healthReply struct {
	Status string   `json:"status"`
	Envs   int      `json:"envs"`
	Types  []string `json:"env_types"`
}

type errorReply struct {
	Error string `json:"error"`
}

// decodeStrict decodes exactly one JSON value from r into dst: unknown
// fields and trailing data are errors, numbers stay json.Number.
func decodeStrict(r io.Reader, dst any) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(dst); err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("empty body")
		}
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// marshalValue encodes v as JSON with Python's number convention, so that
// the int/float distinction survives the wire: integers are written
// without a point, floats always with a point or an exponent (1.0, 1e-05),
// as Python's json module does. Maps become objects (keys formatted with
// fmt), slices and arrays become arrays. NaN, infinities and other types
// are errors.
func marshalValue(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := appendValue(&b, reflect.ValueOf(v)); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func appendValue(b *bytes.Buffer, rv reflect.Value) error {
	if !rv.IsValid() {
		b.WriteString("null")
		return nil
	}
	switch rv.Kind() {
	case reflect.Interface, reflect.Pointer:
		if rv.IsNil() {
			b.WriteString("null")
			return nil
		}
		return appendValue(b, rv.Elem())
	case reflect.Bool:
		b.WriteString(strconv.FormatBool(rv.Bool()))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		b.WriteString(strconv.FormatInt(rv.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		b.WriteString(strconv.FormatUint(rv.Uint(), 10))
	case reflect.Float32, reflect.Float64:
		s, err := pyFloat(rv.Float(), rv.Type().Bits())
		if err != nil {
			return err
		}
		b.WriteString(s)
	case reflect.String:
		s, _ := json.Marshal(rv.String())
		b.Write(s)
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			b.WriteString("null")
			return nil
		}
		b.WriteByte('[')
		for i := 0; i < rv.Len(); i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := appendValue(b, rv.Index(i)); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
		b.WriteByte(']')
	case reflect.Map:
		if rv.IsNil() {
			b.WriteString("null")
			return nil
		}
		keys := make([]string, 0, rv.Len())
		vals := make(map[string]reflect.Value, rv.Len())
		for it := rv.MapRange(); it.Next(); {
			k := fmt.Sprint(it.Key().Interface())
			if _, dup := vals[k]; dup {
				return fmt.Errorf("map key %q occurs twice once formatted", k)
			}
			keys = append(keys, k)
			vals[k] = it.Value()
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			s, _ := json.Marshal(k)
			b.Write(s)
			b.WriteByte(':')
			if err := appendValue(b, vals[k]); err != nil {
				return fmt.Errorf("%q: %w", k, err)
			}
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("cannot send a value of type %s", rv.Type())
	}
	return nil
}

// pyFloat formats f as Python's json module does (repr: shortest
// round-trip digits, always with a point or an exponent). A float32 is
// first rounded to its own shortest digits, so float32(0.1) is sent as 0.1.
func pyFloat(f float64, bits int) (string, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", fmt.Errorf("%v is not representable in JSON", f)
	}
	if bits == 32 {
		f, _ = strconv.ParseFloat(strconv.FormatFloat(f, 'g', -1, 32), 64)
	}
	return env.PyFloatRepr(f), nil
}

// number converts a JSON number to int when written without a point or an
// exponent and to float64 otherwise.
func number(n json.Number) (any, error) {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		i, err := strconv.ParseInt(s, 10, 0)
		if err != nil {
			return nil, fmt.Errorf("integer %s out of range", s)
		}
		return int(i), nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("number %s out of range", s)
	}
	return f, nil
}

// fromWire replaces every json.Number inside v (decoded with UseNumber) by
// an int or a float64, so that env_config values reach DecodeConfig with
// the types a YAML file would have given them.
func fromWire(v any) (any, error) {
	switch x := v.(type) {
	case json.Number:
		return number(x)
	case map[string]any:
		for k, e := range x {
			c, err := fromWire(e)
			if err != nil {
				return nil, fmt.Errorf("%q: %w", k, err)
			}
			x[k] = c
		}
	case []any:
		for i, e := range x {
			c, err := fromWire(e)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			x[i] = c
		}
	}
	return v, nil
}

// checkInfo reports the first key (in sorted order) whose value is not
// JSON data: a number, a bool, a string, null, or a list ([]any, []string,
// []map[string]any) or object (map[string]any) of such values, as the
// service envs' infos hold (Search's reward_metadata, Lean's
// message_objects).
func checkInfo(info env.Info) error {
	keys := make([]string, 0, len(info))
	for k := range info {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := checkValue(info[k]); err != nil {
			return fmt.Errorf("info key %q: %w", k, err)
		}
	}
	return nil
}

func checkValue(v any) error {
	switch x := v.(type) {
	case nil, bool, string, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, []string:
	case float32:
		if _, err := pyFloat(float64(x), 32); err != nil {
			return err
		}
	case float64:
		if _, err := pyFloat(x, 64); err != nil {
			return err
		}
	case []any:
		for i, e := range x {
			if err := checkValue(e); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
	case []map[string]any:
		for i, e := range x {
			if err := checkValue(e); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
	case map[string]any:
		for k, e := range x {
			if err := checkValue(e); err != nil {
				return fmt.Errorf("%q: %w", k, err)
			}
		}
	default:
		return fmt.Errorf("value of type %T is not JSON data (number, bool, string, null, list or object)", v)
	}
	return nil
}

// infoFromWire converts a decoded info object: numbers become int or
// float64 (also inside lists and objects), objects map[string]any, lists
// []any, null nil.
func infoFromWire(m map[string]any) (env.Info, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	info := make(env.Info, len(m))
	for _, k := range keys {
		v, err := fromWire(m[k])
		if err != nil {
			return nil, fmt.Errorf("info key %q: %w", k, err)
		}
		info[k] = v
	}
	return info, nil
}
