#!/usr/bin/env python3
"""Render small Jinja snippets with Python Jinja2 configured as transformers does.

Usage: python3 render_snippets.py OUT.json
Writes [{"src", "vars", "output"} | {"src", "vars", "error"}]; the Go tests
render each snippet and require the same output (or an error).
"""
import json, sys
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.ext import loopcontrols

def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
env.filters['tojson'] = tojson
def raise_exception(msg):
    raise Exception(msg)
env.globals['raise_exception'] = raise_exception

V = {"xs": [3, 1, 2], "s": "Hello, World", "d": {"b": 1, "a": [1, {"z": None}], "c": "é\t\"q\""},
     "msgs": [{"role": "system", "content": " sys "}, {"role": "user", "content": "u1"}, {"role": "assistant", "content": "a1", "tool_calls": [{"name": "f", "arguments": {"x": 1}}]}],
     "n": 7, "f": 2.5, "t": True, "none": None, "empty": [], "es": ""}
snippets = [
    # whitespace control
    "a\n  {% if t %}\n  b\n  {% endif %}\nc", "a  {%- if t %} b {% endif -%}  c", "{% for x in xs %}\n{{ x }}\n{% endfor %}",
    "  {{ s }}  \n", "x {# c #} y", "x\n  {# c #}\ny", "{%- for x in xs -%}\n  [{{ x }}]\n{%- endfor -%}\n", "{% if t %}a{% else %}b{% endif %}\n\nz",
    "\t{% if t %}\tx{% endif %}", "{% if t +%}\nx{% endif %}", " {%+ if t %}x{% endif %}", "{{ 'a' }}\n{{ 'b' }}\n",
    "line1\n    {% set q = 1 %}\nline2 {{ q }}", "{% raw %}{{ x }}{% endraw %}",
    # expressions
    "{{ 1 + 2 * 3 }}", "{{ (1 + 2) * 3 }}", "{{ 7 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % -3 }} {{ 2 ** 3 ** 2 }}", "{{ n - 1 }} {{ -n }} {{ +f }}",
    "{{ 1 ~ 2 ~ 'x' }}", "{{ 'a' ~ none ~ t }}", "{{ xs | length - 1 }}", "{{ not t and t or 'z' }}", "{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }}",
    "{{ 'ell' in s }} {{ 4 in xs }} {{ 'b' in d }} {{ 'q' not in s }}", "{{ t if none else 'no' }}", "{{ xs[0] }}{{ xs[-1] }}{{ xs[5] }}",
    "{{ xs[::-1] }} {{ xs[1:] }} {{ s[:5] }} {{ s[::2] }} {{ s[-5:] }}", "{{ d.b }} {{ d['a'][1]['z'] }} {{ d.missing }}", "{{ d.a.0 }}",
    "{{ 1.0 }} {{ 0.1 + 0.2 }} {{ 1e100 }} {{ 12345678901234567.0 }} {{ 1.5e-7 }} {{ 100.0 / 3 }}", "{{ [1, 'a', none, t, 2.0, [], {}] }}",
    "{{ {'k': 'v', 'n': [1]} }}", "{{ \"it's\" }} {{ ['it\\'s', \"q\\\"\"] }}", "{{ 'a\\tb\\n' }}|{{ ['a\\tb\\n'] }}",
    "{{ none }} {{ t }} {{ es }}|{{ undefined_var }}|", "{{ (1, 2) }}", "{{ 10 == 10.0 }} {{ t == 1 }} {{ 'a' == 'a' }} {{ xs == [3, 1, 2] }}",
    # filters
    "{{ d | tojson }}", "{{ msgs[2].tool_calls | tojson }}", "{{ d | tojson(indent=2) }}", "{{ xs | tojson(indent=4) }}", "{{ s | tojson }}",
    "{{ 'ü\\u2028\\x01' | tojson }}", "{{ f | tojson }} {{ n | tojson }} {{ none | tojson }}", "{{ d | tojson(sort_keys=true) }}",
    "{{ s | length }} {{ d | length }} {{ xs | count }}", "{{ '  pad  ' | trim }}|{{ s | lower }}|{{ s | upper }}|{{ 'hello world' | title }}|{{ 'hELLO' | capitalize }}",
    "{{ xs | join(', ') }}|{{ xs | join }}", "{{ undefined_var | default('dflt') }} {{ es | default('e', true) }} {{ es | default('e') }}",
    "{{ xs | first }} {{ xs | last }} {{ xs | reverse | list }} {{ s | reverse }}", "{{ d | items | list }}", "{{ [1, 2, 1, 3] | unique | list }}",
    "{{ '42' | int + 1 }} {{ '3.5' | float }} {{ -3 | abs }} {{ 'x' | int }}", "{{ msgs | selectattr('role', 'equalto', 'user') | list | length }}",
    "{{ msgs | map(attribute='role') | join('/') }}", "{{ msgs | rejectattr('tool_calls') | map(attribute='content') | list }}", "{{ s | replace('l', 'L') }}",
    "{{ msgs | selectattr('tool_calls', 'defined') | list | length }}", "{{ xs | string }}", "{{ n | string + 'x' }}",
    # tests
    "{{ n is number }} {{ f is float }} {{ n is integer }} {{ s is string }} {{ d is mapping }} {{ xs is sequence }} {{ xs is iterable }}",
    "{{ none is none }} {{ undefined_var is defined }} {{ n is not none }} {{ t is true }} {{ t is false }} {{ t is boolean }}",
    "{{ n is divisibleby 7 }} {{ n is odd }} {{ n is even }} {{ n is eq 7 }} {{ 2 is in xs }}",
    # methods
    "{{ s.startswith('He') }} {{ s.endswith(('x', 'ld')) }} {{ s.split(', ') }} {{ 'a b  c'.split() }} {{ s.lower() }} {{ s.upper() }}",
    "{{ '\\n x \\n'.strip() }}|{{ 'xxaxx'.strip('x') }}|{{ 'xxa'.lstrip('x') }}|{{ 'axx'.rstrip('x') }}|{{ s.replace('o', '0', 1) }}",
    "{{ s.find('o') }} {{ s.find('z') }} {{ s.count('l') }} {{ '-'.join(['a', 'b']) }} {{ 'a,b,c'.rsplit(',', 1) }} {{ 'a,b,c'.split(',', 1) }}",
    "{{ 'x\\ny\\r\\nz'.splitlines() }} {{ 'hello world'.title() }} {{ 'ab'.capitalize() }}", "{{ d.get('b') }} {{ d.get('zz') }} {{ d.get('zz', 5) }} {{ d.keys() | list }}",
    "{% for k, v in d.items() %}{{ k }}:{{ v }};{% endfor %}",
    # statements
    "{% set a = 1 %}{% set b = a + 1 %}{{ a }}{{ b }}", "{% set a, b = 1, 2 %}{{ b }}{{ a }}", "{% set x = 'out' %}{% for i in xs %}{% set x = i %}{% endfor %}{{ x }}",
    "{% set ns = namespace(c=0, items=[]) %}{% for i in xs %}{% set ns.c = ns.c + i %}{% endfor %}{{ ns.c }}",
    "{% for i in xs %}{{ loop.index }}/{{ loop.length }}/{{ loop.revindex0 }}{% if not loop.last %},{% endif %}{% endfor %}",
    "{% for i in xs if i > 1 %}{{ i }}{{ loop.index }}{% endfor %}", "{% for i in empty %}x{% else %}none{% endfor %}",
    "{% for i in range(3) %}{% for j in range(i) %}{{ i }}{{ j }} {% endfor %}{% endfor %}", "{% for i in range(10, 0, -3) %}{{ i }}{% endfor %}",
    "{% for c in 'abc' %}{{ c }}-{% endfor %}", "{% for k in d %}{{ k }}{% endfor %}", "{% for i in xs %}{% if i == 1 %}{% break %}{% endif %}{{ i }}{% endfor %}",
    "{% if n > 5 %}big{% elif n > 2 %}mid{% else %}small{% endif %}", "{% if undefined_var %}y{% else %}n{% endif %}", "{% if msgs[2].tool_calls %}tc{% endif %}",
    "{% for m in msgs %}{% if m.role == 'assistant' and m.tool_calls %}{% for tc in m.tool_calls %}{{ tc.name }}({{ tc.arguments | tojson }}){% endfor %}{% endif %}{% endfor %}",
    "{{ msgs[0]['content'] | trim }}|{{ msgs[0].content.strip() }}", "{{ raise_exception('boom') }}", "{{ undefined_var.attr }}", "{{ 'a' + 1 }}",
    "{% for x in n %}{% endfor %}", "{{ xs[0:2] + [9] }}", "{{ 'ab' * 3 }}", "{{ s[100] }}|",
    "{{ {'a': {'b': 1}} }}", "{% set q = {'k': {'n': [1, {'m': 2}]}} %}{{ q.k.n[1].m }}", "{{ ({'a': 1}) }}",
]
out = []
for src in snippets:
    rec = {"src": src, "vars": V}
    try:
        rec["output"] = env.from_string(src).render(**V)
    except Exception as e:
        rec["error"] = f"{type(e).__name__}: {e}"
    out.append(rec)
json.dump(out, open(sys.argv[1], 'w'), ensure_ascii=False, indent=1)
print(len(out), "snippets,", sum(1 for r in out if "error" in r), "errors")
