package tokenizer

import (
	"math"
	"testing"
)

// TestTemplatePyStr checks that values print as Python's str() prints them
// and that the source rewrite leaves string literals, comments, raw blocks
// and {% filter %} blocks alone. The wanted outputs were rendered by
// Debian's python3-jinja2 3.1.2 with transformers' settings.
func TestTemplatePyStr(t *testing.T) {
	u := "é\u00a0\u2028\x7f\U0001F600\u200b'"
	for _, tc := range []struct {
		src  string
		vars map[string]any
		want string
	}{
		{"{{ '}} | trim' }}|{{ x | trim }}|{{ x|string }}|{{- y -}} |", map[string]any{"x": nil, "y": 2.5}, "}} | trim|None|None|2.5|"},
		{"{% raw %}{{ x }}{% endraw %}{# {{ x }} ' #}{{ x }}", map[string]any{"x": nil}, "{{ x }}None"},
		{"{% filter trim %}  {{ x }}  {% endfilter %}|{{ s | trim('xy') }}|{{ s|trim(chars='x') }}", map[string]any{"x": nil, "s": "xyaxy"}, "None|a|yaxy"},
		{"{{ u }}|{{ [u] }}|{{ {'k': u} }}", map[string]any{"u": u}, u + `|["é\xa0\u2028\x7f😀\u200b'"]|{'k': "é\xa0\u2028\x7f😀\u200b'"}`},
		{"{% set v = x | trim %}{{ v }}{{ v | length }}|{{ f }}|{{ [f, g, h] }}|{{ b | trim }}",
			map[string]any{"x": nil, "f": 1e16, "g": math.Copysign(0, -1), "h": math.NaN(), "b": false}, "None4|1e+16|[1e+16, -0.0, nan]|False"},
		{"{{ s | trim }}|", map[string]any{"s": "\x1c a \u3000"}, "a|"},
	} {
		tm, err := ParseTemplate(tc.src)
		if err != nil {
			t.Fatalf("%q: %v", tc.src, err)
		}
		got, err := tm.Render(tc.vars)
		if err != nil {
			t.Fatalf("%q: %v", tc.src, err)
		}
		if got != tc.want {
			t.Errorf("%q:\n got %q\nwant %q", tc.src, got, tc.want)
		}
	}
}

func TestRewriteTags(t *testing.T) {
	for in, want := range map[string]string{
		"a {{- x | trim -}} b":                     "a {{-__ragen_str( x | __ragen_trim )-}} b",
		"{% if m.content|string %}{{ '|trim' }}":   "{% if m.content|__ragen_string %}{{__ragen_str( '|trim' )}}",
		"{% filter trim %}x{% endfilter %}{{ }}":   "{% filter trim %}x{% endfilter %}{{ }}",
		"{% raw %}{{ x|trim }}{% endraw %}{{ y }}": "{% raw %}{{ x|trim }}{% endraw %}{{__ragen_str( y )}}",
		"{# {{ x }} ' #}{{ x | trimmed }}":         "{# {{ x }} ' #}{{__ragen_str( x | trimmed )}}",
		"{{ x ":                                    "{{ x ",
		// tojson with arguments (template_json.go)
		"{{ t | tojson(indent=4) }}": "{{__ragen_str( __ragen_tojson(t, indent=4) )}}",
		"{%- set s = m.tool_calls[0].function|tojson(separators=(',', ':')) %}": "{%- set s = __ragen_tojson(m.tool_calls[0].function, separators=(',', ':')) %}",
		"text x | tojson(indent=2) {{ x | tojson }}":                            "text x | tojson(indent=2) {{__ragen_str( x | tojson )}}",
		"{# t | tojson(indent=4) #}":                                            "{# t | tojson(indent=4) #}",
		"{{ 'a' }} {{ d['k'] | tojson(indent=2) }}":                             "{{__ragen_str( 'a' )}} {{__ragen_str( __ragen_tojson(d['k'], indent=2) )}}",
		"{{ t | tojson(indent=4)":                                               "{{ t | tojson(indent=4)",
	} {
		if got := rewriteTags(in); got != want {
			t.Errorf("rewriteTags(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestTemplateToJSONFloats checks floats under tojson with arguments
// (template_json.go) against Python's json.dumps(v, indent=1).
func TestTemplateToJSONFloats(t *testing.T) {
	tm, err := ParseTemplate("{{ v | tojson(indent=1) }}")
	if err != nil {
		t.Fatal(err)
	}
	v := []any{0.5, 3.0, 1e-05, 1e16, math.Copysign(0, -1), 12345.678, 0.0001, 123456789012345.6}
	got, err := tm.Render(map[string]any{"v": v})
	if err != nil {
		t.Fatal(err)
	}
	if want := "[\n 0.5,\n 3.0,\n 1e-05,\n 1e+16,\n -0.0,\n 12345.678,\n 0.0001,\n 123456789012345.6\n]"; got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}
