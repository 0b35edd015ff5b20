#!/usr/bin/env node
// Writes tokenizer parity fixtures with the Rust Hugging Face tokenizers
// library (npm @anush008/tokenizers 0.6.0 wraps tokenizers 0.22.2).
//
// Usage (see README.md):
//   node gen_fixtures.js TOKENIZER_DIR GSM8K_JSONL CHAT_JSON[,CHAT_JSON...] OUT_JSON
// A CHAT_JSON is a list of renders (chat_cases.json) or {"cases": [...]}
// (chat_families.json); every case's "output" becomes a sample.
// Output: {"encode": [{"text", "ids"}], "decode": [{"ids", "text", "skip"}]}
// where decode records decode arbitrary id windows (which may split
// multi-byte characters) with skip_special_tokens false ("text") and true
// ("skip"). Strings are generated from a fixed seed, so reruns are identical.
'use strict';
const fs = require('fs');
const { Tokenizer } = require('@anush008/tokenizers');

const [dir, gsmPath, chatPath, outPath] = process.argv.slice(2);
const tok = Tokenizer.fromFile(dir + '/tokenizer.json');

let seed = 20261130;
function rand() { // mulberry32
  seed |= 0; seed = (seed + 0x6D2B79F5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (a) => a[Math.floor(rand() * a.length)];
const randint = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));

const samples = [];
// Hand-written edge cases.
samples.push(
  'Hello world', 'Hello, my dog is cute', '  leading and trailing spaces   ',
  'multiple   spaces\n\n\nnewlines\r\nCRLF\tTabs', "I'm DON'T you'll we've THEY'RE it's",
  '12345 3.14159 1,000,000', '你好，世界！这是一个测试。',
  '<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n',
  'text with <|endoftext|> inside and <tool_call> tag', '    \n   \n', 'x  \n  y',
  'a\u0301 e\u0301 combining', '', ' ', '\n', '\r\n', '\t', '  ', '\n\n', ' \n', '\n ', 'a', "'s", "'S", "'sup",
  "'ſ", "'ſup", "'K", "don'T", "'RE'Ve'LL'D'M", "''s", "' s", "x's'", ' ;;;\r\n\r\nfoo', '!!!\n\n', ' !!!',
  '\u00a0word', 'word\u00a0', '\u3000\u3000x', 'a\u2028b\u2029c', 'a\u0085b', 'x\u200by', 'x\ufeffy', 'x\u180ey',
  '\u001c\u001d\u001e\u001f', '\v\f', 'tab\there', 'x \t y', '\t\tfoo', 'foo\t\t', '1st 2nd 3rd', '١٢٣ ٤٥', 'Ⅻ ½ ²',
  '가각갂 \u1100\u1161\u11a8', '\u1100\u1161 \u1112\u1161\u11ab', 'ﬁ ﬂ ǆ Å Å', 'e\u0301\u0323 e\u0323\u0301', 'q\u0307\u0323',
  '🙂👍🏽👨‍👩‍👧 🇫🇷', 'नमस्ते दुनिया', 'مرحبا بالعالم', 'Привет, мир!', 'Γειά σου Κόσμε', 'שלום עולם',
  'func main() {\n\tfmt.Println("hi")\n}\n', 'def f(x):\n    return x ** 2  # square\n', 'if (a<b && c>=d) { x += 1; }',
  '<|im_start|><|im_end|><|endoftext|>', '<|im_start|', '<|im_start|>>', '<<|im_end|>>', '<think>\nhmm\n</think>\n\n<answer>Right</answer>',
  '<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>', '<|fim_prefix|>a<|fim_suffix|>b<|fim_middle|>',
  ' '.repeat(5000), '\n'.repeat(3000), '7'.repeat(2000), 'word '.repeat(2000), 'ab'.repeat(3000), ' \n'.repeat(500), '\u00a0'.repeat(100),
  'The answer is 42.\n#### 42', '$1,234.56 + 7% = ?', '3/4 + 5/6 = 19/12', '1e-9 0x1F 0b101 1_000', '-12 +7 ±3 ×4 ÷2 √9 ∞',
);
// Env observations: Sokoban and FrozenLake grids.
const sokoSyms = ['#', '_', 'P', 'O', 'X', '√', 'S'];
for (let i = 0; i < 150; i++) {
  const h = randint(3, 8), w = randint(3, 8), rows = [];
  for (let r = 0; r < h; r++) {
    let row = '';
    for (let c = 0; c < w; c++) row += (r === 0 || c === 0 || r === h - 1 || c === w - 1) ? '#' : pick(sokoSyms);
    rows.push(row);
  }
  const sep = pick(['\n', '\n', ' ', '\r\n']);
  samples.push(rows.join(sep) + (rand() < 0.5 ? '\n' : ''));
}
const lakeSyms = ['_', 'P', 'O', 'G', 'X', '√'];
for (let i = 0; i < 100; i++) {
  const n = randint(2, 6), rows = [];
  for (let r = 0; r < n; r++) { let row = ''; for (let c = 0; c < n; c++) row += pick(lakeSyms); rows.push(row); }
  samples.push(`\nTurn ${randint(1, 9)}:\nState:\n${rows.join('\n')}\nYou have ${randint(0, 10)} actions left.`);
}
// Random strings from a tricky alphabet (fuzz).
const alphabet = [
  'a', 'b', 'z', 'A', 'Z', 'é', 'É', 'ß', 'ſ', 'ø', 'Ω', 'ж', 'Ж', '你', '好', '。', '，', 'の', 'ア', '한', '\u1100', '\u1161', '\u11a8',
  'न', '\u094d', '\u093f', 'ب', '\u064e', '\u0301', '\u0300', '\u0323', '\u0308', '\u20dd', 'ﬁ', 'Ⅻ', '½', '²', '٣', '7', '0', '9',
  ' ', ' ', ' ', '\t', '\n', '\n', '\r', '\v', '\f', '\u00a0', '\u2009', '\u3000', '\u0085', '\u2028', '\u2029', '\u200b', '\ufeff', '\u180e', '\u001f',
  "'", "'s", "'T", "'re", "'LL", '"', '.', ',', '!', '?', '-', '_', '#', '$', '%', '&', '*', '(', ')', '[', ']', '{', '}', '<', '>', '/', '\\', '|', '~', '`', '^', '+', '=', '@',
  '🙂', '👍', '\u{1F3FD}', '\u200d', '🇫', '\u{10FFFF}', '\u{E000}', '\u0000', '\u007f', '\u0080', '\u00ad',
  '<|im_start|>', '<|im_end|>', '<|endoftext|>', '<tool_call>', '</tool_call>', '<think>', '</think>', '<|im_', 'Hello', ' world', ' the', '123', '\r\n',
];
for (let i = 0; i < 1200; i++) {
  const n = randint(1, 40);
  let s = '';
  for (let j = 0; j < n; j++) s += pick(alphabet);
  samples.push(s);
}
// Numbers and code-like lines.
for (let i = 0; i < 100; i++) {
  samples.push(`${randint(0, 1e6)} ${(rand() * 1000).toFixed(randint(0, 5))} ${randint(-50, 50)}*${randint(0, 99)}=${randint(-5000, 5000)}`);
}
// GSM8K questions and answers.
const gsm = fs.readFileSync(gsmPath, 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
for (const r of gsm) samples.push(r.question, r.answer);
// Chat-templated prompts (Python Jinja2 renders).
for (const p of chatPath.split(',')) {
  const doc = JSON.parse(fs.readFileSync(p, 'utf8'));
  for (const c of Array.isArray(doc) ? doc : doc.cases) if (c.output != null) samples.push(c.output);
}
// Llama 3 special tokens (only for a tokenizer that has them, so the Qwen
// fixtures stay as they were): markers inside text, split and doubled.
if (tok.tokenToId('<|begin_of_text|>') != null) {
  samples.push(
    '<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>',
    'a<|eot_id|>b <|eom_id|> c<|python_tag|>d', '<|eot_id|><|eot_id|>', '<<|eot_id|>>', '<|eot_id', '<|start_header_id|',
    '<|reserved_special_token_0|> <|reserved_special_token_247|>x', '<|finetune_right_pad_id|>\n', ' <|begin_of_text|> ',
  );
}

(async () => {
  const encode = [];
  const allIds = [];
  for (const text of samples) {
    const ids = Array.from((await tok.encode(text, null, { addSpecialTokens: true })).getIds());
    encode.push({ text, ids });
    allIds.push(ids);
  }
  // Decode windows: random slices of the encoded fuzz/edge ids, plus raw random ids.
  const decode = [];
  for (let i = 0; i < 400; i++) {
    const src = pick(allIds.slice(0, 1600));
    if (src.length === 0) continue;
    const a = randint(0, src.length - 1), b = randint(a + 1, Math.min(src.length, a + 6));
    decode.push(src.slice(a, b));
  }
  // Random ids: 15% added tokens (Qwen2.5 151643..151664, Llama 3 128000..128255).
  const nBase = tok.getVocabSize(false), nAll = tok.getVocabSize(true);
  for (let i = 0; i < 100; i++) {
    const ids = [];
    for (let j = randint(1, 8); j > 0; j--) ids.push(rand() < 0.15 ? randint(nBase, nAll - 1) : randint(0, nBase - 1));
    decode.push(ids);
  }
  const dec = [];
  for (const ids of decode) dec.push({ ids, text: await tok.decode(ids, false), skip: await tok.decode(ids, true) });
  fs.writeFileSync(outPath, JSON.stringify({ encode, decode: dec }));
  console.log(`${encode.length} encode fixtures, ${dec.length} decode fixtures -> ${outPath}`);
})();
