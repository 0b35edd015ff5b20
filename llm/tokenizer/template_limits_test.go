package tokenizer

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
)

// renderHostile renders src with one message and returns the error and the
// bytes allocated meanwhile.
func renderHostile(t *testing.T, ctx context.Context, tmpl *Template) (string, error, uint64) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	out, err := tmpl.RenderContext(ctx, map[string]any{"messages": []Message{{Role: "user", Content: "hi"}}})
	runtime.ReadMemStats(&after)
	return out, err, after.TotalAlloc - before.TotalAlloc
}

// A chat template from a model folder cannot crash, hang or exhaust memory:
// each hostile template fails with a *TemplateError naming the limit it
// reached, having allocated far less than it asked for.
func TestTemplateLimits(t *testing.T) {
	for _, tc := range []struct {
		name, src, want string
	}{
		{"recursive macro", `{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}`, "nested deeper than 500"},
		{"mutual recursion", `{% macro a() %}{{ b() }}{% endmacro %}{% macro b() %}{{ a() }}{% endmacro %}{{ a() }}`, "nested deeper than 500"},
		{"huge repeat", `{{ 'x' * 300000000 }}{{ 'x' * 300000000 }}`, "string of 300000000 bytes is over the 16777216-byte limit"},
		{"huge repeat in set", `{% set s = 'x' * 300000000 %}`, "string of 300000000 bytes is over"},
		{"overflowing repeat", `{{ 'xx' * 9223372036854775807 }}`, "over the 16777216-byte limit"},
		{"nested range loops", `{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}`, "more than 5000000 steps"},
		{"output", `{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}`, "bytes or more is over the 16777216-byte limit"},
		{"doubling", `{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}`, "over the 16777216-byte limit"},
		{"concat", `{% set s = 'x' * 10000000 %}{{ s ~ s }}`, "string of 20000000 bytes"},
		{"replace filter", `{{ ('x' * 100000) | replace('x', 'y' * 1000) }}`, "replace result of 100000000 bytes"},
		{"replace method", `{{ ('x' * 100000).replace('x', 'y' * 1000) }}`, "replace result of 100000000 bytes"},
		{"join", `{% set l = ['x' * 10000000] %}{% for i in range(3) %}{% set _ = l.append(l[0]) %}{% endfor %}{{ l | join(',') }}`, "join result"},
		{"indent", `{{ ('\n' * 1000000) | indent(100) }}`, "indent result"},
		{"tojson of shared list", `{% set ns = namespace(l=['x' * 1000000]) %}{% for i in range(30) %}{% set ns.l = [ns.l, ns.l] %}{% endfor %}{{ ns.l | tojson }}`, "tojson result"},
		{"tojson indent of shared list", `{% set ns = namespace(l=['x' * 1000000]) %}{% for i in range(30) %}{% set ns.l = [ns.l, ns.l] %}{% endfor %}{{ ns.l | tojson(indent=2) }}`, "over the 16777216-byte limit"},
		{"print of shared list", `{% set ns = namespace(l=['x' * 1000000]) %}{% for i in range(30) %}{% set ns.l = [ns.l, ns.l] %}{% endfor %}{{ ns.l }}`, "over the 16777216-byte limit"},
		{"compare shared list", `{% set ns = namespace(l=['x' * 1000]) %}{% for i in range(40) %}{% set ns.l = [ns.l, ns.l] %}{% endfor %}{{ ns.l == ns.l }}`, "over the 16777216-byte limit"},
		{"self-holding list", `{% set l = [1] %}{% set _ = l.append(l) %}{{ l }}`, "a list or dict cannot hold itself"},
		{"self-holding namespace", `{% set ns = namespace(a=1) %}{% set ns.me = ns %}{{ ns == ns }}`, "cannot hold itself"},
		{"deep nesting", `{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = [ns.l] %}{% endfor %}{{ ns.l }}`, "value nested deeper than 500"},
		{"string loop", `{% for c in 'x' * 16000000 %}{% endfor %}`, "more than 5000000 steps"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, err := ParseTemplate(tc.src)
			if err != nil {
				t.Fatal(err)
			}
			out, err, alloc := renderHostile(t, context.Background(), tmpl)
			var te *TemplateError
			if !errors.As(err, &te) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v (%d bytes of output), want a *TemplateError with %q", err, len(out), tc.want)
			}
			if !strings.Contains(tc.want, "steps") && alloc > 256<<20 { // loops churn garbage; the others must not build what they ask for
				t.Errorf("allocated %d MiB", alloc>>20)
			}
		})
	}
}

// Expressions and blocks nested without end fail to parse instead of
// exhausting the stack.
func TestTemplateParseDepth(t *testing.T) {
	for _, src := range []string{
		"{{ " + strings.Repeat("(", 200000) + "1" + strings.Repeat(")", 200000) + " }}",
		"{{ " + strings.Repeat("[", 200000) + strings.Repeat("]", 200000) + " }}",
		"{{ " + strings.Repeat("not ", 200000) + "x }}",
		"{{ " + strings.Repeat("-", 200000) + "1 }}",
		strings.Repeat("{% if x %}", 100000) + strings.Repeat("{% endif %}", 100000),
	} {
		_, err := ParseTemplate(src)
		var te *TemplateError
		if !errors.As(err, &te) || !strings.Contains(err.Error(), "nested deeper than 1000") {
			t.Errorf("%.30s…: %v", src, err)
		}
	}
}

// A render stops with the context's error when the context is done.
func TestTemplateRenderContext(t *testing.T) {
	tmpl, err := ParseTemplate(`{% for i in range(100000) %}{% for j in range(100000) %}{{ j }}{% endfor %}{% endfor %}`)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err, _ = renderHostile(t, ctx, tmpl.WithLimits(TemplateLimits{MaxOutput: 1 << 40, MaxAlloc: 1 << 40}))
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "render stopped after 1024 steps") {
		t.Fatalf("err %v", err)
	}
}

// Limits can be lowered per template, and a template within them renders.
func TestTemplateWithLimits(t *testing.T) {
	tmpl, err := ParseTemplate(`{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}`)
	if err != nil {
		t.Fatal(err)
	}
	out, err, _ := renderHostile(t, context.Background(), tmpl)
	if err != nil || out != "<user>hi" {
		t.Fatalf("%q, %v", out, err)
	}
	_, err, _ = renderHostile(t, context.Background(), tmpl.WithLimits(TemplateLimits{MaxSteps: 5}))
	if err == nil || !strings.Contains(err.Error(), "more than 5 steps") {
		t.Fatalf("err %v", err)
	}
	_, err, _ = renderHostile(t, context.Background(), tmpl.WithLimits(TemplateLimits{MaxOutput: 5}))
	if err == nil || !strings.Contains(err.Error(), "over the 5-byte limit") {
		t.Fatalf("err %v", err)
	}
}
