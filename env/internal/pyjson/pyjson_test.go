package pyjson

import "testing"

// Expected texts are what CPython 3's json.loads raises and what str()
// prints for the decoded value (service-envs.md: py-str; §1 step 4 quotes
// "Expecting value: line 1 column 1 (char 0)").
func TestDecodeErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "Expecting value: line 1 column 1 (char 0)"},
		{"<html>", "Expecting value: line 1 column 1 (char 0)"},
		{"  \n x", "Expecting value: line 2 column 2 (char 4)"},
		{`{"a": 1} x`, "Extra data: line 1 column 10 (char 9)"},
		{`01`, "Extra data: line 1 column 2 (char 1)"},
		{`{a: 1}`, "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"},
		{`{"a" 1}`, "Expecting ':' delimiter: line 1 column 6 (char 5)"},
		{`{"a": 1 "b"}`, "Expecting ',' delimiter: line 1 column 9 (char 8)"},
		{`[1, ]`, "Expecting value: line 1 column 5 (char 4)"},
		{`"abc`, "Unterminated string starting at: line 1 column 1 (char 0)"},
		{"\"a\tb\"", "Invalid control character at: line 1 column 3 (char 2)"},
		{`"\q"`, "Invalid \\escape: line 1 column 2 (char 1)"},
		{`"é` + "\n" + `x`, "Invalid control character at: line 1 column 3 (char 2)"},
	} {
		_, err := Decode(c.in)
		if err == nil || err.Error() != c.want {
			t.Errorf("Decode(%q) error %v, want %q", c.in, err, c.want)
		}
	}
}

func TestDecodeStr(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`7`, "7"},
		{`-0`, "0"},
		{`7.0`, "7.0"},
		{`1e3`, "1000.0"},
		{`1e400`, "inf"},
		{`0.1`, "0.1"},
		{`true`, "True"},
		{`null`, "None"},
		{`"doc_1"`, "doc_1"},
		{`[1, "a", null, 2.5]`, "[1, 'a', None, 2.5]"},
		{`{"k": 1, "b": [true], "k": 2}`, "{'k': 2, 'b': [True]}"},
		{`["it's"]`, `["it's"]`},
		{`["a\"'b"]`, `['a"\'b']`},
		{`["\u00a0\n\u2028é"]`, `['\xa0\n\u2028é']`},
		{`"\ud83d\ude00"`, "😀"},
		{`NaN`, "nan"},
		{`123456789012345678901234567890`, "123456789012345678901234567890"},
	} {
		v, err := Decode(c.in)
		if err != nil {
			t.Errorf("Decode(%q): %v", c.in, err)
			continue
		}
		if got := Str(v); got != c.want {
			t.Errorf("Str(Decode(%q)) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestTypeNameAndFloat(t *testing.T) {
	for _, c := range []struct {
		in   string
		name string
		f    float64
		ok   bool
	}{
		{`1`, "int", 1, true}, {`1.5`, "float", 1.5, true}, {`true`, "bool", 1, true},
		{`"1"`, "str", 0, false}, {`null`, "NoneType", 0, false}, {`[]`, "list", 0, false}, {`{}`, "dict", 0, false},
	} {
		v, _ := Decode(c.in)
		f, ok := Float(v)
		if TypeName(v) != c.name || f != c.f || ok != c.ok {
			t.Errorf("%s: %s %v %v", c.in, TypeName(v), f, ok)
		}
	}
}

// TestTruthy: bool() of 0, "", [], {}, None, False is False, of "0",
// [0], 0.5, True is True.
func TestTruthy(t *testing.T) {
	empty, _ := Decode("{}")
	for _, v := range []any{Int("0"), "", []any{}, empty, nil, false, 0.0} {
		if Truthy(v) {
			t.Errorf("Truthy(%#v) = true, want false", v)
		}
	}
	for _, v := range []any{"0", []any{Int("0")}, 0.5, true, Int("7")} {
		if !Truthy(v) {
			t.Errorf("Truthy(%#v) = false, want true", v)
		}
	}
}
