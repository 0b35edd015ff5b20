package tokenizer

import (
	"bytes"
	"container/heap"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// DefaultTrainSpecials are the special tokens [TrainBPE] adds when
// TrainOptions.Specials is nil: Qwen's end-of-text (also the pad token) and
// the two chat-turn markers of the Qwen2.5 chat format.
var DefaultTrainSpecials = []string{"<|endoftext|>", "<|im_start|>", "<|im_end|>"}

// TrainOptions are the settings of [TrainBPE].
type TrainOptions struct {
	// VocabSize is the total number of ids: the 256 byte tokens, the
	// learned merges and the special tokens. Training stops earlier when no
	// pair reaches MinFrequency.
	VocabSize int
	// MinFrequency is the least number of occurrences (pre-token counts
	// summed over the corpus) a pair needs to be merged, as in Hugging Face's
	// BpeTrainer; 0 and 1 both mean once.
	MinFrequency int
	// Specials are the special tokens, given ids after the merges in this
	// order. nil means DefaultTrainSpecials. They must include
	// <|endoftext|> (pad), <|im_start|> and <|im_end|> (EOS), which the
	// Qwen2.5 chat format needs.
	Specials []string
	// Added are ordinary added tokens (special=false, as Qwen3's <think>):
	// matched whole in text before pre-tokenization, never split or learned
	// from, and kept by DecodeSkipSpecial. Their ids follow the specials.
	// Marking the tags a prompt ends with (e.g. "<think>") keeps the tokens
	// of a forced generation prefix identical to those of training text.
	Added []string
}

// TrainBPE learns a byte-level BPE tokenizer from corpus, as Hugging Face's
// BpeTrainer does with the Qwen2 pre-tokenizer, and returns it as an [*HF].
//
// Each corpus string is cut at the special tokens (which are never split
// or learned from), NFC-normalised, split with the Qwen2 pattern and
// counted as words of bytes, exactly as [HF.Encode] pre-tokenizes. Starting
// from the 256 byte symbols, the most frequent adjacent pair (counted over
// all words, weighted by word counts) is merged repeatedly; ties go to the
// pair Hugging Face's trainer would pick: the smallest (left, right) pair of
// its ids, which number the byte-level characters in code-point order
// ("!" first, "Ġ" for the space near the end) and then the merged tokens in
// the order they were learned. On a corpus without special tokens the
// merges equal those of the Rust BpeTrainer. A merge whose result already
// is a token (the same bytes reached by another split) reuses that token's
// id, as Hugging Face does. Training stops at opt.VocabSize ids or when the
// best pair occurs fewer than opt.MinFrequency times.
//
// Ids: 0-255 are the bytes in byte order, then the merged tokens in the
// order they were learned, then the special tokens. The tokenizer is built
// by writing a genuine tokenizer.json (BPE model, NFC normalizer, Qwen2
// Split + ByteLevel pre-tokenizer, ByteLevel decoder) and
// tokenizer_config.json (the Qwen2.5 chat template, eos_token <|im_end|>,
// pad_token <|endoftext|>) and parsing them with [ParseHF], so [HF.Save]
// writes a folder that [LoadHF] and Hugging Face tokenizers read. The same
// corpus and options always give byte-identical files.
func TrainBPE(corpus []string, opt TrainOptions) (*HF, error) {
	specials, err := opt.validate()
	if err != nil {
		return nil, err
	}
	atomic := append(append([]string(nil), specials...), opt.Added...)
	words := countWords(corpus, atomic)
	t := newBPETrainer(words, atomic)
	t.nSpecial = len(specials)
	t.train(opt.VocabSize-len(atomic), int64(max(opt.MinFrequency, 1)))
	tj, tc := t.files()
	h, err := ParseHF(tj, tc, nil)
	if err != nil {
		// Our own output failed to parse: a bug, but still reported as an error.
		return nil, fmt.Errorf("tokenizer: train: generated files do not load: %w", err)
	}
	return h, nil
}

func (opt TrainOptions) validate() ([]string, error) {
	specials := opt.Specials
	if specials == nil {
		specials = DefaultTrainSpecials
	}
	var errs []error
	seen := map[string]bool{}
	for i, s := range specials {
		switch {
		case s == "":
			errs = append(errs, fmt.Errorf("Specials[%d] is empty", i))
		case !utf8.ValidString(s):
			errs = append(errs, fmt.Errorf("Specials[%d] %q is not valid UTF-8", i, s))
		case seen[s]:
			errs = append(errs, fmt.Errorf("Specials[%d] %q is repeated", i, s))
		case utf8.RuneCountInString(s) == 1:
			if _, isByte := runeToByte[[]rune(s)[0]]; isByte {
				errs = append(errs, fmt.Errorf("Specials[%d] %q is also a byte token of the vocab", i, s))
			}
		}
		seen[s] = true
	}
	for i, s := range opt.Added {
		switch {
		case s == "":
			errs = append(errs, fmt.Errorf("Added[%d] is empty", i))
		case !utf8.ValidString(s):
			errs = append(errs, fmt.Errorf("Added[%d] %q is not valid UTF-8", i, s))
		case seen[s]:
			errs = append(errs, fmt.Errorf("Added[%d] %q is repeated or also a special token", i, s))
		case utf8.RuneCountInString(s) == 1:
			if _, isByte := runeToByte[[]rune(s)[0]]; isByte {
				errs = append(errs, fmt.Errorf("Added[%d] %q is also a byte token of the vocab", i, s))
			}
		}
		seen[s] = true
	}
	for _, need := range DefaultTrainSpecials {
		if !seen[need] {
			errs = append(errs, fmt.Errorf("Specials lacks %q (the Qwen2.5 chat format needs it)", need))
		}
	}
	if opt.VocabSize < 256+len(specials)+len(opt.Added) {
		errs = append(errs, fmt.Errorf("VocabSize %d is below 256 byte tokens + %d specials + %d added tokens", opt.VocabSize, len(specials), len(opt.Added)))
	}
	if opt.MinFrequency < 0 {
		errs = append(errs, fmt.Errorf("MinFrequency %d is negative", opt.MinFrequency))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("tokenizer: train: %w", errors.Join(errs...))
	}
	return specials, nil
}

// trainWord is one distinct pre-token: its current symbols and how often
// it occurs in the corpus.
type trainWord struct {
	syms  []int32
	count int64
}

// countWords pre-tokenizes the corpus as HF.Encode does and returns the
// distinct words sorted by their bytes (so that training never depends on
// map order).
func countWords(corpus []string, specials []string) []trainWord {
	toks := make(map[string]int, len(specials))
	for i, s := range specials {
		toks[s] = i
	}
	match := newLiteralMatcher(toks)
	counts := map[string]int64{}
	for _, text := range corpus {
		for _, seg := range match.split(text) {
			if seg.id >= 0 {
				continue
			}
			splitQwen2(NFC(seg.text), func(piece string) { counts[piece]++ })
		}
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	words := make([]trainWord, len(keys))
	for i, k := range keys {
		syms := make([]int32, len(k))
		for j := 0; j < len(k); j++ {
			syms[j] = int32(k[j])
		}
		words[i] = trainWord{syms: syms, count: counts[k]}
	}
	return words
}

func pairOf(a, b int32) uint64     { return uint64(uint32(a))<<32 | uint64(uint32(b)) }
func unpair(k uint64) (a, b int32) { return int32(uint32(k >> 32)), int32(uint32(k)) }

// bpeTrainer holds the state of one training run: exact pair counts, an
// index from each pair to the words that (may) contain it, and a max-heap of
// candidate pairs whose entries are checked against the counts when popped.
type bpeTrainer struct {
	words    []trainWord
	specials []string // special tokens, then ordinary added tokens
	nSpecial int      // how many of specials are special (the rest are added, special=false)

	toks   []string         // raw bytes of each id (bytes, then merges)
	tokID  map[string]int32 // raw bytes -> id
	merges [][2]int32       // learned merges in order

	counts map[uint64]int64   // pair -> occurrences (weighted by word counts)
	where  map[uint64][]int32 // pair -> words holding it (maybe stale, maybe repeated)
	queue  pairHeap

	merged  map[uint64]bool // pairs already in merges
	banned  map[uint64]bool // pairs whose result would be a special token's string
	stamp   []int32         // per word: last merge step that visited it
	special map[string]bool // special token contents, compared with byte-level token strings
}

func newBPETrainer(words []trainWord, specials []string) *bpeTrainer {
	t := &bpeTrainer{
		specials: specials,
		nSpecial: len(specials),
		tokID:    make(map[string]int32, 4096),
		merged:   map[uint64]bool{},
		banned:   map[uint64]bool{},
		special:  map[string]bool{},
	}
	for _, s := range specials {
		t.special[s] = true
	}
	for b := 0; b < 256; b++ {
		s := string([]byte{byte(b)})
		t.toks = append(t.toks, s)
		t.tokID[s] = int32(b)
	}
	t.setWords(words)
	return t
}

// setWords counts the pairs of words and fills the heap.
func (t *bpeTrainer) setWords(words []trainWord) {
	t.words = words
	t.stamp = make([]int32, len(words))
	t.counts = map[uint64]int64{}
	t.where = map[uint64][]int32{}
	for w := range words {
		t.addPairs(int32(w))
	}
	t.queue = pairHeap{}
	keys := make([]uint64, 0, len(t.counts))
	for k := range t.counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	for _, k := range keys {
		t.queue.items = append(t.queue.items, pairCount{k, t.counts[k]})
	}
	heap.Init(&t.queue)
}

// addPairs adds the pairs of word w to the counts and the index.
func (t *bpeTrainer) addPairs(w int32) {
	wd := &t.words[w]
	for i := 0; i+1 < len(wd.syms); i++ {
		k := pairOf(wd.syms[i], wd.syms[i+1])
		t.counts[k] += wd.count
		if l := t.where[k]; len(l) == 0 || l[len(l)-1] != w {
			t.where[k] = append(l, w)
		}
	}
}

// train merges pairs until the vocab (specials excluded) has target ids or
// the best pair occurs fewer than minFreq times.
func (t *bpeTrainer) train(target int, minFreq int64) {
	step := int32(0)
	touched := map[uint64]bool{}
	for len(t.toks) < target && t.queue.Len() > 0 {
		top := heap.Pop(&t.queue).(pairCount)
		c := t.counts[top.pair]
		if c != top.count {
			if c > 0 { // stale: requeue with the current count
				heap.Push(&t.queue, pairCount{top.pair, c})
			}
			continue
		}
		if c < minFreq {
			break
		}
		a, b := unpair(top.pair)
		raw := t.toks[a] + t.toks[b]
		if t.banned[top.pair] || t.special[byteLevel(raw)] {
			t.banned[top.pair] = true
			continue
		}
		id, ok := t.tokID[raw]
		if !ok {
			id = int32(len(t.toks))
			t.toks = append(t.toks, raw)
			t.tokID[raw] = id
		}
		if !t.merged[top.pair] {
			t.merged[top.pair] = true
			t.merges = append(t.merges, [2]int32{a, b})
		}
		step++
		clear(touched)
		for _, w := range t.where[top.pair] {
			if t.stamp[w] == step {
				continue
			}
			t.stamp[w] = step
			t.mergeWord(w, a, b, id, touched)
		}
		delete(t.where, top.pair)
		delete(t.counts, top.pair)
		// Push every pair the step created or raised (they all contain id),
		// in a fixed order so that the heap layout is deterministic.
		keys := make([]uint64, 0, len(touched))
		for k := range touched {
			if ka, kb := unpair(k); ka == id || kb == id {
				keys = append(keys, k)
			}
		}
		sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
		for _, k := range keys {
			if n := t.counts[k]; n > 0 {
				heap.Push(&t.queue, pairCount{k, n})
			}
		}
	}
}

// mergeWord replaces the non-overlapping occurrences of (a, b) in word w,
// left to right, with id, and updates the counts of the neighbouring pairs
// as Hugging Face's Word::merge does: for an occurrence between L and R,
// (L,a) and (b,R) lose the word's count and (L,id) and (id,R) gain it, where
// L is already the merged left part. The pair (a, b) itself is dropped by
// the caller once every word is done.
func (t *bpeTrainer) mergeWord(w int32, a, b, id int32, touched map[uint64]bool) {
	wd := &t.words[w]
	syms, c := wd.syms, wd.count
	key := pairOf(a, b)
	out := syms[:0] // written behind the read position
	for i := 0; i < len(syms); {
		if i+1 >= len(syms) || syms[i] != a || syms[i+1] != b {
			out = append(out, syms[i])
			i++
			continue
		}
		if len(out) > 0 {
			l := out[len(out)-1]
			t.addCount(pairOf(l, a), -c, key, w, nil)
			t.addCount(pairOf(l, id), c, key, w, touched)
		}
		if i+2 < len(syms) {
			r := syms[i+2]
			t.addCount(pairOf(b, r), -c, key, w, nil)
			t.addCount(pairOf(id, r), c, key, w, touched)
		}
		out = append(out, id)
		i += 2
	}
	wd.syms = out
}

// addCount adds delta to the count of pair k (never the pair being merged)
// and, for a gain, records word w in the index and k in touched.
func (t *bpeTrainer) addCount(k uint64, delta int64, merging uint64, w int32, touched map[uint64]bool) {
	if k == merging {
		return
	}
	if n := t.counts[k] + delta; n > 0 {
		t.counts[k] = n
	} else {
		delete(t.counts, k)
	}
	if delta > 0 {
		if l := t.where[k]; len(l) == 0 || l[len(l)-1] != w {
			t.where[k] = append(l, w)
		}
		touched[k] = true
	}
}

// byteLevel maps raw bytes to their byte-level (tokenizer.json) form.
func byteLevel(raw string) string {
	var sb strings.Builder
	sb.Grow(2 * len(raw))
	for i := 0; i < len(raw); i++ {
		sb.WriteRune(byteToRune[raw[i]])
	}
	return sb.String()
}

// pairCount is a heap entry: a pair and its count when it was pushed.
type pairCount struct {
	pair  uint64
	count int64
}

// pairHeap orders pairs by count, highest first, then by the ids Hugging
// Face's trainer would give their tokens, smallest first (see pairRank).
type pairHeap struct {
	items []pairCount
}

// pairRank is the tie-break key of a pair: Hugging Face's BpeTrainer
// compares the (left, right) id pairs, where its ids number the byte-level
// characters in code-point order and then the merges in order. Our merged
// ids (256 + creation order) sort the same way; bytes take their
// character's place in that order.
func pairRank(k uint64) uint64 {
	a, b := unpair(k)
	return uint64(hfRank(a))<<32 | uint64(hfRank(b))
}

func hfRank(id int32) int32 {
	if id < 256 {
		return byteRank[id]
	}
	return id
}

// byteRank is the position of each byte's byte-level character in
// code-point order.
var byteRank = func() [256]int32 {
	var bs [256]int
	for i := range bs {
		bs[i] = i
	}
	sort.Slice(bs[:], func(i, j int) bool { return byteToRune[bs[i]] < byteToRune[bs[j]] })
	var r [256]int32
	for i, b := range bs {
		r[b] = int32(i)
	}
	return r
}()

func (h *pairHeap) Len() int { return len(h.items) }
func (h *pairHeap) Less(i, j int) bool {
	x, y := h.items[i], h.items[j]
	if x.count != y.count {
		return x.count > y.count
	}
	return pairRank(x.pair) < pairRank(y.pair)
}
func (h *pairHeap) Swap(i, j int) { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *pairHeap) Push(x any)    { h.items = append(h.items, x.(pairCount)) }
func (h *pairHeap) Pop() any {
	n := len(h.items) - 1
	it := h.items[n]
	h.items = h.items[:n]
	return it
}

// jsonStr encodes s as a JSON string without HTML escaping, as
// Hugging Face writes its files.
func jsonStr(s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		panic(err) // strings always encode
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

const byteLevelJSON = `{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}`

// specialFlag is the JSON "special" value of atomic token i.
func (t *bpeTrainer) specialFlag(i int) string {
	if i < t.nSpecial {
		return "true"
	}
	return "false"
}

// files renders tokenizer.json and tokenizer_config.json.
func (t *bpeTrainer) files() (tokenizerJSON, configJSON []byte) {
	var b bytes.Buffer
	w := func(parts ...string) {
		for _, p := range parts {
			b.WriteString(p)
		}
	}
	first := len(t.toks)
	w("{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n  \"added_tokens\": [")
	for i, s := range t.specials {
		if i > 0 {
			w(",")
		}
		w("\n    {\"id\": ", strconv.Itoa(first+i), ", \"content\": ", jsonStr(s),
			", \"single_word\": false, \"lstrip\": false, \"rstrip\": false, \"normalized\": false, \"special\": ", t.specialFlag(i), "}")
	}
	w("\n  ],\n  \"normalizer\": {\"type\": \"NFC\"},\n")
	w("  \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": {\"Regex\": ",
		jsonStr(Qwen2SplitPattern), "}, \"behavior\": \"Isolated\", \"invert\": false}, ", byteLevelJSON, "]},\n")
	w("  \"post_processor\": ", byteLevelJSON, ",\n")
	w("  \"decoder\": ", byteLevelJSON, ",\n")
	w("  \"model\": {\n    \"type\": \"BPE\",\n    \"dropout\": null,\n    \"unk_token\": null,\n",
		"    \"continuing_subword_prefix\": \"\",\n    \"end_of_word_suffix\": \"\",\n    \"fuse_unk\": false,\n",
		"    \"byte_fallback\": false,\n    \"ignore_merges\": false,\n    \"vocab\": {")
	for id, raw := range t.toks {
		if id > 0 {
			w(",")
		}
		w("\n      ", jsonStr(byteLevel(raw)), ": ", strconv.Itoa(id))
	}
	w("\n    },\n    \"merges\": [")
	for i, m := range t.merges {
		if i > 0 {
			w(",")
		}
		w("\n      [", jsonStr(byteLevel(t.toks[m[0]])), ", ", jsonStr(byteLevel(t.toks[m[1]])), "]")
	}
	w("\n    ]\n  }\n}\n")
	tokenizerJSON = bytes.Clone(b.Bytes())

	b.Reset()
	w("{\n  \"add_bos_token\": false,\n  \"add_prefix_space\": false,\n  \"added_tokens_decoder\": {")
	for i, s := range t.specials {
		if i > 0 {
			w(",")
		}
		w("\n    \"", strconv.Itoa(first+i), "\": {\"content\": ", jsonStr(s),
			", \"lstrip\": false, \"normalized\": false, \"rstrip\": false, \"single_word\": false, \"special\": ", t.specialFlag(i), "}")
	}
	w("\n  },\n  \"additional_special_tokens\": [")
	n := 0
	for _, s := range t.specials[:t.nSpecial] {
		if s == "<|endoftext|>" {
			continue
		}
		if n > 0 {
			w(", ")
		}
		w(jsonStr(s))
		n++
	}
	w("],\n  \"bos_token\": null,\n  \"chat_template\": ", jsonStr(Qwen25ChatTemplate), ",\n",
		"  \"clean_up_tokenization_spaces\": false,\n  \"eos_token\": \"<|im_end|>\",\n  \"errors\": \"replace\",\n",
		"  \"model_max_length\": 32768,\n  \"pad_token\": \"<|endoftext|>\",\n  \"split_special_tokens\": false,\n",
		"  \"tokenizer_class\": \"Qwen2Tokenizer\",\n  \"unk_token\": null\n}\n")
	configJSON = bytes.Clone(b.Bytes())
	return tokenizerJSON, configJSON
}
