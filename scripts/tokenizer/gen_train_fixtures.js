#!/usr/bin/env node
// Encodes the texts of a trained-tokenizer fixture folder with the Rust
// Hugging Face tokenizers library (npm @anush008/tokenizers 0.6.0, which
// wraps tokenizers 0.22.2), loading the tokenizer.json that Go's
// tokenizer.TrainBPE wrote there.
//
// Usage (see the comment on updateTrain in llm/tokenizer/train_test.go):
//   go test -run TestTrainGolden -update-train ./llm/tokenizer/
//   NODE_PATH=/tmp/reftok/node_modules node scripts/tokenizer/gen_train_fixtures.js \
//     llm/tokenizer/testdata/train
// Reads DIR/tokenizer.json and DIR/texts.json (a list of strings); writes
// DIR/hf_ids.json: one id list per text, in order, with add_special_tokens true.
// Then trains the Rust BpeTrainer (the BPE model's default one: no size
// limit in reach, min_frequency 0, no special tokens) on the lines of
// DIR/hf_train_corpus.txt with the normalizer and pre-tokenizer of
// tokenizer.json, and writes its merges to DIR/hf_train_merges.json.
'use strict';
const fs = require('fs');
const { Tokenizer } = require('@anush008/tokenizers');

const dir = process.argv[2];
const tok = Tokenizer.fromFile(dir + '/tokenizer.json');
const texts = JSON.parse(fs.readFileSync(dir + '/texts.json', 'utf8'));

(async () => {
  const out = [];
  for (const text of texts) {
    const ids = Array.from((await tok.encode(text, null, { addSpecialTokens: true })).getIds());
    const back = await tok.decode(ids, false);
    out.push(ids);
    if (back.normalize('NFC') !== text.normalize('NFC') && !text.includes('<|')) {
      console.error('round trip differs for', JSON.stringify(text));
    }
  }
  fs.writeFileSync(dir + '/hf_ids.json', '[\n' + out.map((r) => JSON.stringify(r)).join(',\n') + '\n]\n');
  console.log(`${out.length} texts -> ${dir}/hf_ids.json`);

  const j = JSON.parse(fs.readFileSync(dir + '/tokenizer.json', 'utf8'));
  j.added_tokens = [];
  j.model.vocab = {};
  j.model.merges = [];
  const trainer = Tokenizer.fromString(JSON.stringify(j));
  trainer.train([dir + '/hf_train_corpus.txt']); // lines with their endings
  const tmp = require('os').tmpdir() + '/hf_trained_tokenizer.json';
  trainer.save(tmp, false);
  const merges = JSON.parse(fs.readFileSync(tmp, 'utf8')).model.merges.map((m) => (typeof m === 'string' ? m.split(' ') : m));
  fs.writeFileSync(dir + '/hf_train_merges.json', '[\n' + merges.map((m) => JSON.stringify(m)).join(',\n') + '\n]\n');
  console.log(`${merges.length} merges -> ${dir}/hf_train_merges.json`);
})();
