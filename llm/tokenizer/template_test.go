package tokenizer

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

func chatTemplates(t testing.TB) map[string]*Template {
	t.Helper()
	var cfg struct {
		ChatTemplate string `json:"chat_template"`
	}
	b, err := os.ReadFile("testdata/qwen3/tokenizer_config.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	q3, err := ParseTemplate(cfg.ChatTemplate)
	if err != nil {
		t.Fatalf("qwen3 template: %v", err)
	}
	q25, err := ParseTemplate(Qwen25ChatTemplate)
	if err != nil {
		t.Fatalf("qwen2.5 template: %v", err)
	}
	b, err = os.ReadFile("testdata/llama3_chat_template.jinja")
	if err != nil {
		t.Fatal(err)
	}
	l3, err := ParseTemplate(string(b))
	if err != nil {
		t.Fatalf("llama3 template: %v", err)
	}
	return map[string]*Template{"qwen25": q25, "qwen3": q3, "llama3": l3}
}

// TestTemplateCases renders every case of testdata/chat_cases.json (Python
// Jinja2 configured as transformers, scripts/tokenizer/render_chat.py) and
// requires byte equality: plain chats, Sokoban turns, <think> stripping,
// tools, tool calls, reasoning_content and enable_thinking.
func TestTemplateCases(t *testing.T) {
	tmpls := chatTemplates(t)
	cases := loadChatCases(t)
	if len(cases) < 100 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, c := range cases {
		vars, err := JSONValue(c.Vars)
		if err != nil {
			t.Fatal(err)
		}
		d := vars.(*Dict)
		m := map[string]any{}
		for _, k := range d.Keys() {
			m[k], _ = d.Get(k)
		}
		if _, ok := m["tools"]; !ok {
			m["tools"] = nil
		}
		got, err := tmpls[c.Template].Render(m)
		if c.Output == nil {
			if err == nil {
				t.Errorf("%s: rendered %q, reference failed with %s", c.Name, got, c.Error)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.Name, err)
			continue
		}
		if got != *c.Output {
			t.Errorf("%s:\n got %q\nwant %q", c.Name, got, *c.Output)
		}
	}
}

// TestHFChatTemplate checks HF.ApplyChatTemplate (the template from
// tokenizer_config.json, with its special tokens as variables) against the
// reference and against RenderQwen25.
func TestHFChatTemplate(t *testing.T) {
	tok := loadQwen25(t)
	n := 0
	for _, c := range loadChatCases(t) {
		if !c.Plain || c.Template != "qwen25" {
			continue
		}
		var v struct {
			Messages []Message `json:"messages"`
			Gen      bool      `json:"add_generation_prompt"`
		}
		if err := json.Unmarshal(c.Vars, &v); err != nil {
			t.Fatal(err)
		}
		got, err := tok.ApplyChatTemplate(v.Messages, v.Gen)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if got != *c.Output {
			t.Errorf("%s:\n got %q\nwant %q", c.Name, got, *c.Output)
		}
		hand, _ := RenderQwen25(v.Messages, v.Gen)
		if hand != got {
			t.Errorf("%s: RenderQwen25 differs from the template", c.Name)
		}
		n++
	}
	if n == 0 {
		t.Fatal("no cases")
	}
	if _, err := tok.ApplyChatTemplate(nil, true); err == nil {
		t.Error("empty messages: want an error as in Jinja2 (messages[0] is undefined)")
	}
}

func TestTemplateSnippets(t *testing.T) {
	tests := []struct {
		name, src string
		vars      map[string]any
		want      string
	}{
		// trim_blocks drops the newline after a block tag; lstrip_blocks the indent before it.
		{"trim_lstrip", "{% if true %}\n  x\n  {% endif %}\ny", nil, "  x\ny"},
		// lstrip_blocks leaves {{ }} alone; one trailing newline of the source is dropped.
		{"output_not_lstripped", "  {{ 'a' }}\n\n", nil, "  a\n"},
		{"minus", "a  {{- 'b' -}}  c", nil, "abc"},
		{"comment", "a{# note #}\nb", nil, "ab"},
		{"loop_vars", "{% for x in xs %}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ x }},{% endfor %}", map[string]any{"xs": []any{"a", "b"}}, "0TrueFalsea,1FalseTrueb,"},
		{"loop_else", "{% for x in [] %}x{% else %}empty{% endfor %}", nil, "empty"},
		{"loop_filter", "{% for x in range(6) if x is even %}{{ x }}{% endfor %}", nil, "024"},
		{"break_continue", "{% for x in range(9) %}{% if x == 1 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %}", nil, "023"},
		{"set_scoping", "{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{% endfor %}{{ x }}", nil, "1"},
		{"namespace", "{% set ns = namespace(n=0) %}{% for i in [1,2,3] %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}", nil, "6"},
		{"slices", "{{ [1,2,3][::-1] }}{{ 'abcdef'[1:4] }}{{ 'abc'[-1] }}", nil, "[3, 2, 1]bcdc"},
		{"string_methods", "{{ 'a</think>b'.split('</think>')[-1] }}|{{ '\\n\\nx\\n'.lstrip('\\n') }}|{{ ' y '.strip() }}|{{ 'ab'.startswith('a') }}", nil, "b|x\n|y|True"},
		{"tojson", "{{ d | tojson }}", map[string]any{"d": map[string]any{"a": []any{1, 2.5, "é\"\n", nil, true}}}, `{"a": [1, 2.5, "é\"\n", null, true]}`},
		{"tojson_indent", "{{ [1, {'k': 'v'}] | tojson(indent=2) }}", nil, "[\n  1,\n  {\n    \"k\": \"v\"\n  }\n]"},
		{"ternary", "{{ 'y' if 0 else 'n' }}{{ 'a' if 1 }}", nil, "na"},
		{"in_tests", "{{ 'a' in 'cat' }}{{ 3 not in [1] }}{{ x is defined }}{{ none is none }}{{ 'x' is string }}", nil, "TrueTrueFalseTrueTrue"},
		{"filters", "{{ [3,1] | length }}{{ ' a ' | trim }}{{ ['a','b'] | join('-') }}{{ x | default('d') }}{{ 'ab' | upper }}", nil, "2aa-bdAB"}, // 2, a, a-b, d, AB
		{"selectattr", "{{ ms | selectattr('role', 'equalto', 'user') | map(attribute='content') | join(',') }}", map[string]any{"ms": []Message{{"user", "a"}, {"assistant", "b"}, {"user", "c"}}}, "a,c"},
		{"dict_methods", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{{ d.get('z', 0) }}", map[string]any{"d": map[string]any{"a": 1, "b": "x"}}, "a=1;b=x;0"},
	}
	for _, tc := range tests {
		tmpl, err := ParseTemplate(tc.src)
		if err != nil {
			t.Errorf("%s: parse: %v", tc.name, err)
			continue
		}
		got, err := tmpl.Render(tc.vars)
		if err != nil {
			t.Errorf("%s: render: %v", tc.name, err)
			continue
		}
		if got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestTemplateErrors(t *testing.T) {
	tests := []struct {
		name, src string
		parse     bool   // error expected at parse time
		want      string // substring of the error
	}{
		{"unclosed if", "{% if x %}a", true, "unclosed if block"},
		{"stray endfor", "{% endfor %}", true, `unknown statement "endfor"`},
		{"unknown statement", "{% for m in messages %}\n{% foo %}{% endfor %}", true, `line 2: unknown statement "foo"`},
		{"unclosed tag", "{{ x ", true, "unclosed expression tag at line 1, col 2"},
		{"bad token", "{{ a ; b }}", true, `unexpected token "b"`},
		{"filter", "{{ x | wordwrap }}", false, `unknown filter "wordwrap"`},
		{"raise", "{{ raise_exception('bad role') }}", false, "chat template: bad role"},
		{"range", "{{ range(100000000) }}", false, "range too big: 100000000 items, the limit is 100000"},
		{"range step", "{{ range(1, 5, 0) }}", false, "must not be zero"},
		{"range type", "{{ range('a') }}", false, "str object cannot be interpreted as an integer"},
	}
	for _, tc := range tests {
		tmpl, err := ParseTemplate(tc.src)
		if err == nil && !tc.parse {
			_, err = tmpl.Render(nil)
		} else if err == nil {
			t.Errorf("%s: parsed without error", tc.name)
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
		var te *TemplateError
		if !errors.As(err, &te) {
			t.Errorf("%s: error is %T, want *TemplateError", tc.name, err)
		}
	}
}

// TestTemplateRange checks the bounded range() against Python's.
func TestTemplateRange(t *testing.T) {
	tmpl, err := ParseTemplate("{{ range(3) }}{{ range(1, 7, 2) }}{{ range(5, 0, -2) }}{{ range(2, 1) }}{{ range(100000) | length }}")
	if err != nil {
		t.Fatal(err)
	}
	got, err := tmpl.Render(nil)
	if want := "[0, 1, 2][1, 3, 5][5, 3, 1][]100000"; err != nil || got != want {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
}

func FuzzTemplate(f *testing.F) {
	f.Add(Qwen25ChatTemplate)
	f.Add("{% for m in messages %}{{ m.role | upper }}{{ m.content[::-1] }}{% endfor %}")
	f.Add("{{ (1, 2) }}{{ {'a': [1, 2.5]} | tojson }}{% set a, b = 1, 2 %}{{ a ~ b }}")
	f.Add("{%- if x -%}{%+ else %}{# c #}{% endif %}")
	msgs := []Message{{"system", "s"}, {"user", "u"}, {"assistant", "<think>t</think>a"}}
	f.Fuzz(func(t *testing.T, src string) {
		tmpl, err := ParseTemplate(src)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "chat template:") {
				t.Fatalf("error without prefix: %v", err)
			}
			return
		}
		_, _ = tmpl.Render(map[string]any{"messages": msgs, "add_generation_prompt": true})
	})
}

// TestTemplateSnippetsReference renders the snippets of
// testdata/jinja_snippets.json (Python Jinja2 with transformers' settings,
// scripts/tokenizer/render_snippets.py) and requires identical output, or
// an error where Jinja2 raised one.
func TestTemplateSnippetsReference(t *testing.T) {
	b, err := os.ReadFile("testdata/jinja_snippets.json")
	if err != nil {
		t.Fatal(err)
	}
	var recs []struct {
		Src    string          `json:"src"`
		Vars   json.RawMessage `json:"vars"`
		Output *string         `json:"output"`
		Error  string          `json:"error"`
	}
	if err := json.Unmarshal(b, &recs); err != nil {
		t.Fatal(err)
	}
	same := 0
	for _, rec := range recs {
		v, err := JSONValue(rec.Vars)
		if err != nil {
			t.Fatal(err)
		}
		if why, ok := engineDiffs[rec.Src]; ok {
			t.Logf("known difference of ardanlabs/jinja (%s): %q", why, rec.Src)
			continue
		}
		same++
		vars := map[string]any{}
		for _, k := range v.(*Dict).Keys() {
			vars[k], _ = v.(*Dict).Get(k)
		}
		tmpl, err := ParseTemplate(rec.Src)
		var got string
		if err == nil {
			got, err = tmpl.Render(vars)
		}
		switch {
		case rec.Output == nil && err == nil:
			t.Errorf("%q: rendered %q, Jinja2 raised %s", rec.Src, got, rec.Error)
		case rec.Output != nil && err != nil:
			t.Errorf("%q: %v; Jinja2 rendered %q", rec.Src, err, *rec.Output)
		case rec.Output != nil && got != *rec.Output:
			t.Errorf("%q:\n got %q\nwant %q", rec.Src, got, *rec.Output)
		}
	}
	// doc/design.md quotes these numbers.
	if len(recs) != 96 || same != 75 {
		t.Errorf("%d snippets, %d compared; doc/design.md says 75 of 96", len(recs), same)
	}
}

func BenchmarkTemplateRender(b *testing.B) {
	tmpl, err := ParseTemplate(Qwen25ChatTemplate)
	if err != nil {
		b.Fatal(err)
	}
	msgs := []Message{{"system", strings.Repeat("You are solving Sokoban. ", 10)}}
	for i := 0; i < 10; i++ {
		msgs = append(msgs, Message{"user", "Turn state:\n######\n#_P_O#\n######"}, Message{"assistant", "<answer>Right</answer>"})
	}
	vars := map[string]any{"messages": msgs, "add_generation_prompt": true}
	out, _ := tmpl.Render(vars)
	b.SetBytes(int64(len(out)))
	for b.Loop() {
		if _, err := tmpl.Render(vars); err != nil {
			b.Fatal(err)
		}
	}
}

// TestHFRenderChatTools renders the reference tool cases through
// HF.RenderChat (messages with tool_calls and tools as ordered JSON values).
func TestHFRenderChatTools(t *testing.T) {
	tok := loadQwen25(t)
	n := 0
	for _, c := range loadChatCases(t) {
		if c.Template != "qwen25" || c.Plain {
			continue
		}
		v, err := JSONValue(c.Vars)
		if err != nil {
			t.Fatal(err)
		}
		d := v.(*Dict)
		msgs, _ := d.Get("messages")
		gen, _ := d.Get("add_generation_prompt")
		opt := ChatOptions{AddGenerationPrompt: gen == true}
		if tools, ok := d.Get("tools"); ok {
			opt.Tools = tools.([]any)
		}
		got, err := tok.RenderChat(msgs, opt)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if got != *c.Output {
			t.Errorf("%s:\n got %q\nwant %q", c.Name, got, *c.Output)
		}
		n++
	}
	if n < 4 {
		t.Fatalf("only %d tool cases", n)
	}
}
