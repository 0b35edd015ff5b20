package tokenizer

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// updateTrain rewrites the golden trained tokenizer and the texts of the
// reference fixtures in testdata/train. The reference ids come from the
// Rust tokenizers library (scripts/tokenizer/gen_train_fixtures.js):
//
//	go test -run TestTrainGolden -update-train ./llm/tokenizer/
//	NODE_PATH=/tmp/reftok/node_modules node scripts/tokenizer/gen_train_fixtures.js \
//	  llm/tokenizer/testdata/train
var updateTrain = flag.Bool("update-train", false, "rewrite testdata/train golden files")

// sokobanSystem is the system prompt upstream builds for SimpleSokoban
// (context-and-rollout spec §3.1 with the default grid vocab).
const sokobanSystem = "You're a helpful assistant. You are solving the Sokoban puzzle. \n" +
	"You are the player and you need to push all boxes to targets. \n" +
	"When you are right next to a box, you can push it by moving in the same direction. \n" +
	"You cannot push a box through a wall, and you cannot pull a box. \n" +
	"The answer should be a sequence of actions, like <answer>Right || Right || Up</answer>\n" +
	"\nThe meaning of each symbol in the state is:\n" +
	"#: wall, _: empty, O: target, √: box on target, X: box, P: player, S: player on target" +
	"\nYour available actions are:\nUp, Down, Left, Right" +
	"\nYou can make up to 10 actions, separated by the action separator \" || \"\n"

// sokobanGrid draws a random h×w room: walls around, a box, a target and
// the player inside.
func sokobanGrid(r *rand.Rand, h, w int) string {
	g := make([][]string, h)
	for i := range g {
		g[i] = make([]string, w)
		for j := range g[i] {
			g[i][j] = "_"
			if i == 0 || j == 0 || i == h-1 || j == w-1 || r.IntN(8) == 0 {
				g[i][j] = "#"
			}
		}
	}
	for _, sym := range []string{"X", "O", "P", "√"} {
		if sym == "√" && r.IntN(3) > 0 {
			continue
		}
		g[1+r.IntN(h-2)][1+r.IntN(w-2)] = sym
	}
	rows := make([]string, h)
	for i := range g {
		rows[i] = strings.Join(g[i], "")
	}
	return strings.Join(rows, "\n")
}

// sokobanCorpus returns n multi-turn Sokoban prompts rendered with the
// Qwen2.5 chat format, like the CPU demo's (spec §3.2 turn blocks).
func sokobanCorpus(seed uint64, n int) []string {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	actions := []string{"Up", "Down", "Left", "Right"}
	thoughts := []string{"The box is to my right, so I push it right.", "I need to move up first.",
		"The target is below the box.", "I should go around the wall.", "Push the box down to the target."}
	out := make([]string, n)
	for i := range out {
		msgs := []Message{{Role: "system", Content: sokobanSystem}}
		left := 10
		turns := 1 + r.IntN(3)
		for turn := 1; turn <= turns; turn++ {
			var sb strings.Builder
			if turn > 1 {
				fmt.Fprintf(&sb, "Reward:\n%v\n", []string{"-0.1", "0.9", "-1.1", "0"}[r.IntN(4)])
			}
			fmt.Fprintf(&sb, "\nTurn %d:\nState:\n%s\n", turn, sokobanGrid(r, 6, 6))
			if r.IntN(6) == 0 {
				sb.WriteString("No valid action provided previously. Environment state remains the same. Please try again.\n")
			}
			fmt.Fprintf(&sb, "You have %d actions left. Always output: <think> [Your thoughts] </think> <answer> [your answer] </answer> with no extra text. Strictly follow this format. Max response length: 100 words (tokens).\n", left)
			msgs = append(msgs, Message{Role: "user", Content: sb.String()})
			if turn < turns {
				k := 1 + r.IntN(3)
				acts := make([]string, k)
				for j := range acts {
					acts[j] = actions[r.IntN(4)]
				}
				left -= k
				msgs = append(msgs, Message{Role: "assistant", Content: "<think>" + thoughts[r.IntN(len(thoughts))] +
					"</think><answer>" + strings.Join(acts, " || ") + "</answer>"})
			}
		}
		s, err := RenderQwen25(msgs, true)
		if err != nil {
			panic(err)
		}
		out[i] = s + "<think>"
	}
	return out
}

// heldOut are texts outside the training corpus: fresh prompts plus
// strings with characters and patterns the corpus lacks.
func heldOut() []string {
	texts := sokobanCorpus(2, 30)
	texts = append(texts,
		"", " ", "\n", "  \n\n\t x", "Hello, world! 12345 3.14",
		"你好，世界！", "a\u0301 e\u0301 combining", "Å Å ﬁ", "🙂👍🏽 🇫🇷", "\u00a0\u3000\u2028",
		"<|im_start|>user\nhi<|im_end|>", "<|im_end|><|im_end|><|endoftext|>", "<|im_sta", "<<|im_end|>>",
		"I'm DON'T you'll", strings.Repeat(" ", 300), strings.Repeat("#", 200), "\x7f\x01\x1f",
		"<answer>Up || Up || Left</answer>", "Turn 12:\nState:\n#######\n#__X_O#\n#######",
	)
	return texts
}

// segmentNFC is what Decode(Encode(s)) gives for valid UTF-8: NFC applied to
// the text between special tokens (which are cut out before normalising).
func segmentNFC(s string) string {
	m := newLiteralMatcher(map[string]int{"<|endoftext|>": 0, "<|im_start|>": 1, "<|im_end|>": 2})
	var sb strings.Builder
	for _, seg := range m.split(s) {
		if seg.id >= 0 {
			sb.WriteString(seg.text)
		} else {
			sb.WriteString(NFC(seg.text))
		}
	}
	return sb.String()
}

var (
	trainedMu    sync.Mutex
	trainedCache = map[int]*HF{}
)

// trained trains on the 200-prompt Sokoban corpus with vocabSize ids (once
// per size; fuzz workers call it concurrently).
func trained(t testing.TB, vocabSize int) *HF {
	t.Helper()
	trainedMu.Lock()
	defer trainedMu.Unlock()
	key := vocabSize
	if h := trainedCache[key]; h != nil {
		return h
	}
	h, err := TrainBPE(sokobanCorpus(1, 200), TrainOptions{VocabSize: vocabSize})
	if err != nil {
		t.Fatal(err)
	}
	trainedCache[key] = h
	return h
}

func mergesOf(t *testing.T, h *HF) [][2]string {
	t.Helper()
	var f struct {
		Model struct {
			Merges [][2]string `json:"merges"`
		} `json:"model"`
	}
	if err := json.Unmarshal(h.tokJSON, &f); err != nil {
		t.Fatal(err)
	}
	return f.Model.Merges
}

// TestTrainHand checks merges derived by hand.
func TestTrainHand(t *testing.T) {
	tests := []struct {
		name   string
		corpus []string
		opt    TrainOptions
		merges [][2]string // byte-level form: Ġ is the space
		vocab  int
	}{{
		// Words: "aaab" ×1, " aab" ×1 (the Qwen2 split keeps the space
		// with the letters). Pair counts: (a,a) 2+1=3, (a,b) 2, (Ġ,a) 1.
		// Ties go to the smallest pair of HF ids: byte-level characters in
		// code-point order, so a=64, b=65, Ġ (the space) = 220, then the
		// merges 256, 257, ...
		// 1. (a,a) 3 → "aa" (256): "aaab" → [aa a b] (left to right, no
		//    overlap), " aab" → [Ġ aa b]. Every pair now occurs once:
		//    (aa,a)=(256,64) (a,b)=(64,65) (Ġ,aa)=(220,256) (aa,b)=(256,65).
		// 2. (a,b) → "ab" (257): "aaab" → [aa ab].
		// 3. Left (aa,ab)=(256,257), (Ġ,aa)=(220,256), (aa,b)=(256,65):
		//    (Ġ,aa) → " aa" (258): " aab" → [Ġaa b].
		// 4. (aa,ab)=(256,257) before (Ġaa,b)=(258,65) → "aaab" (259).
		// 5. (Ġaa,b) → " aab" (260). No pairs remain: 256+5+3 ids.
		name:   "ties",
		corpus: []string{"aaab aab"},
		opt:    TrainOptions{VocabSize: 400},
		merges: [][2]string{{"a", "a"}, {"a", "b"}, {"Ġ", "aa"}, {"aa", "ab"}, {"Ġaa", "b"}},
		vocab:  264,
	}, {
		// Same corpus, room for two merges only: 256 + 2 + 3 = 261.
		name:   "vocab limit",
		corpus: []string{"aaab aab"},
		opt:    TrainOptions{VocabSize: 261},
		merges: [][2]string{{"a", "a"}, {"a", "b"}},
		vocab:  261,
	}, {
		// Words "ab" ×1, " ab" ×2, " cd" ×1: (a,b) 3, (␠,a) 2, (␠,c) 1,
		// (c,d) 1. With MinFrequency 2: (a,b) 3 → "ab"; then (␠,ab) 2 →
		// " ab"; the best pair left, (␠,c), occurs once: stop.
		name:   "min frequency",
		corpus: []string{"ab ab ab cd"},
		opt:    TrainOptions{VocabSize: 400, MinFrequency: 2},
		merges: [][2]string{{"a", "b"}, {"Ġ", "ab"}},
		vocab:  261,
	}, {
		// Counts add up across corpus strings: "xy" ×3 beats "ab" ×2, and
		// then (a,b) 2 beats (u,v) 1.
		name:   "counts",
		corpus: []string{"ab", "xy", "ab", "xy", "xy", "uv"},
		opt:    TrainOptions{VocabSize: 261, MinFrequency: 1},
		merges: [][2]string{{"x", "y"}, {"a", "b"}},
		vocab:  261,
	}, {
		// Special tokens are cut out first and never learned from: the
		// words are "ab" ×2 and " " ×1 (before the last special), so the
		// only pair is (a,b) although "<|" and "|>" occur 6 times each.
		name:   "specials",
		corpus: []string{"<|im_start|>ab<|im_end|> <|endoftext|>ab"},
		opt:    TrainOptions{VocabSize: 400},
		merges: [][2]string{{"a", "b"}},
		vocab:  260,
	}, {
		// NFC first: "e\u0301" composes to "é" (bytes C3 A9, byte-level
		// "Ã©"), so the pair is (C3, A9), never (e, CC).
		name:   "nfc",
		corpus: []string{"e\u0301", "é"},
		opt:    TrainOptions{VocabSize: 400},
		merges: [][2]string{{"Ã", "©"}},
		vocab:  260,
	}, {
		// Extra special tokens get ids after the defaults; "<think>" in the
		// text is one word no more, so nothing is learned.
		name:   "extra special",
		corpus: []string{"<think><think>"},
		opt:    TrainOptions{VocabSize: 400, Specials: []string{"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>"}},
		merges: nil,
		vocab:  260,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := TrainBPE(tc.corpus, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			got := mergesOf(t, h)
			if len(got) == 0 {
				got = nil
			}
			if !reflect.DeepEqual(got, tc.merges) {
				t.Errorf("merges %q, want %q", got, tc.merges)
			}
			if h.VocabSize() != tc.vocab {
				t.Errorf("VocabSize %d, want %d", h.VocabSize(), tc.vocab)
			}
			// Merged tokens take ids 256.. in order, then the specials.
			for i, m := range tc.merges {
				if id, ok := h.TokenID(m[0] + m[1]); !ok || id != 256+i {
					t.Errorf("merge %d %q: id %d %v, want %d", i, m, id, ok, 256+i)
				}
			}
			specials := tc.opt.Specials
			if specials == nil {
				specials = DefaultTrainSpecials
			}
			for i, s := range specials {
				want := 256 + len(tc.merges) + i
				if id, ok := h.TokenID(s); !ok || id != want {
					t.Errorf("special %q: id %d %v, want %d", s, id, ok, want)
				}
			}
			for _, s := range tc.corpus {
				if got := h.Decode(h.Encode(s)); got != segmentNFC(s) {
					t.Errorf("round trip %q: %q", s, got)
				}
			}
		})
	}
}

// TestTrainEncodeHand checks ids of the "ties" tokenizer: 256 "aa", 257
// "ab", 258 " aa", 259 "aaab", 260 " aab", 261-263 specials.
func TestTrainEncodeHand(t *testing.T) {
	h, err := TrainBPE([]string{"aaab aab"}, TrainOptions{VocabSize: 400})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		text string
		ids  []int
	}{
		{"aaab aab", []int{259, 260}},
		// "aaaa": (a,a) rank 0 merges left to right → [aa aa]; (aa,aa) is
		// no merge.
		{"aaaa", []int{256, 256}},
		// " ab": (Ġ,a) is no merge, (a,b) rank 1 → [Ġ ab].
		{" ab", []int{' ', 257}},
		// "aab": (a,a) rank 0 first → [aa b]; (aa,b) is no merge.
		{"aab", []int{256, 'b'}},
		{"<|im_end|>ab", []int{263, 257}},
		{"b a", []int{'b', ' ', 'a'}},
	}
	for _, tc := range tests {
		if got := h.Encode(tc.text); !reflect.DeepEqual(got, tc.ids) {
			t.Errorf("Encode(%q) = %v, want %v", tc.text, got, tc.ids)
		}
	}
}

// TestTrainReuse drives the trainer from a state where two merges build the
// same string: words [ab c] ×2 and [a bc] ×1. (ab,c) 2 makes "abc" (id
// 258); (a,bc) 1 gives "abc" again, which keeps id 258, as Hugging Face's
// trainer does, and adds a merge but no token.
func TestTrainReuse(t *testing.T) {
	tr := newBPETrainer(nil, DefaultTrainSpecials)
	for _, s := range []string{"ab", "bc"} {
		tr.tokID[s] = int32(len(tr.toks))
		tr.toks = append(tr.toks, s)
	}
	tr.setWords([]trainWord{{syms: []int32{256, 'c'}, count: 2}, {syms: []int32{'a', 257}, count: 1}})
	tr.train(1000, 1)
	if want := [][2]int32{{256, 'c'}, {'a', 257}}; !reflect.DeepEqual(tr.merges, want) {
		t.Errorf("merges %v, want %v", tr.merges, want)
	}
	if len(tr.toks) != 259 || tr.toks[258] != "abc" {
		t.Errorf("tokens %q, want 259 ending in abc", tr.toks[256:])
	}
	for _, w := range tr.words {
		if !reflect.DeepEqual(w.syms, []int32{258}) {
			t.Errorf("word %v, want [258]", w.syms)
		}
	}
	tj, tc := tr.files()
	h, err := ParseHF(tj, tc, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The loader only learns "ab" and "bc" from merges it does not have, so
	// "abc" encodes by bytes here; the point is that the file loads.
	if h.VocabSize() != 262 {
		t.Errorf("VocabSize %d, want 262", h.VocabSize())
	}
}

// TestTrainSpecialCollision: a merge whose result is a special token's text
// is never made (the vocab and the added tokens would share a string). Text
// never yields such a pair, since specials are cut out before splitting, so
// the trainer starts from words [a b] ×5 and [c d] ×1 with the special "ab":
// (a,b) is skipped although it is the most frequent pair.
func TestTrainSpecialCollision(t *testing.T) {
	specials := append([]string{"ab"}, DefaultTrainSpecials...)
	tr := newBPETrainer([]trainWord{{syms: []int32{'a', 'b'}, count: 5}, {syms: []int32{'c', 'd'}, count: 1}}, specials)
	tr.train(1000, 1)
	if want := [][2]int32{{'c', 'd'}}; !reflect.DeepEqual(tr.merges, want) {
		t.Errorf("merges %v, want %v (no merge into the special \"ab\")", tr.merges, want)
	}
}

// naiveTrain is the textbook trainer: recount every pair of every word
// before each merge. It is the reference for the incremental trainer.
func naiveTrain(words []trainWord, specials []string, target int, minFreq int64) (toks []string, merges [][2]string) {
	type pair [2]string
	ws := make([][]string, len(words))
	for i, w := range words {
		for _, b := range w.syms {
			ws[i] = append(ws[i], string([]byte{byte(b)}))
		}
	}
	vocab := map[string]bool{}
	for b := 0; b < 256; b++ {
		vocab[string([]byte{byte(b)})] = true
	}
	size := 256
	done := map[pair]bool{}
	// rank is Hugging Face's id order: byte-level characters by code
	// point, then merged tokens in order.
	rank := func(tok string) int {
		if len(tok) == 1 {
			return slices.Index([]rune(byteLevelAlphabet), byteToRune[tok[0]])
		}
		return 256 + slices.Index(toks, tok)
	}
	for size < target {
		counts := map[pair]int64{}
		for i, w := range ws {
			for j := 0; j+1 < len(w); j++ {
				counts[pair{w[j], w[j+1]}] += words[i].count
			}
		}
		var best pair
		var bestN int64
		for p, n := range counts {
			if slices.Contains(specials, byteLevel(p[0]+p[1])) {
				continue
			}
			if n > bestN || n == bestN && (rank(p[0]) < rank(best[0]) || rank(p[0]) == rank(best[0]) && rank(p[1]) < rank(best[1])) {
				best, bestN = p, n
			}
		}
		if bestN == 0 || bestN < minFreq {
			break
		}
		tok := best[0] + best[1]
		if !vocab[tok] {
			vocab[tok] = true
			toks = append(toks, tok)
			size++
		}
		if !done[best] {
			done[best] = true
			merges = append(merges, best)
		}
		for i, w := range ws {
			var out []string
			for j := 0; j < len(w); j++ {
				if j+1 < len(w) && w[j] == best[0] && w[j+1] == best[1] {
					out = append(out, tok)
					j++
				} else {
					out = append(out, w[j])
				}
			}
			ws[i] = out
		}
	}
	return toks, merges
}

// byteLevelAlphabet is the 256 byte-level characters in code-point order:
// "!" to "~", "¡" to "¬", "®" to "ÿ", then U+0100 ("Ā", byte 0) upwards.
var byteLevelAlphabet = func() string {
	var rs []rune
	for r := rune('!'); r <= '~'; r++ {
		rs = append(rs, r)
	}
	for r := rune(0xA1); r <= 0xFF; r++ {
		if r != 0xAD {
			rs = append(rs, r)
		}
	}
	for r := rune(0x100); len(rs) < 256; r++ {
		rs = append(rs, r)
	}
	return string(rs)
}()

// TestTrainNaive: the incremental trainer learns exactly the tokens and
// merges of the recount-everything reference on random corpora.
func TestTrainNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	alphabet := []string{"a", "b", "c", "aa", "ab", " ", " ", "\n", "é", "1", "!", "<|im_end|>", "ba"}
	for trial := range 60 {
		corpus := make([]string, 1+r.IntN(12))
		for i := range corpus {
			var sb strings.Builder
			for n := r.IntN(40); n > 0; n-- {
				sb.WriteString(alphabet[r.IntN(len(alphabet))])
			}
			corpus[i] = sb.String()
		}
		if trial == 0 {
			corpus = sokobanCorpus(5, 10)
		}
		specials := DefaultTrainSpecials
		if trial%5 == 4 {
			specials = append([]string{"ab", "b!"}, specials...) // pairs that would make them are never merged
		}
		target := 256 + r.IntN(150)
		minFreq := int64(1 + r.IntN(3))
		words := countWords(corpus, specials)
		wantToks, wantMerges := naiveTrain(words, specials, target, minFreq)

		tr := newBPETrainer(countWords(corpus, specials), specials)
		tr.train(target, minFreq)
		gotToks := tr.toks[256:]
		var gotMerges [][2]string
		for _, m := range tr.merges {
			gotMerges = append(gotMerges, [2]string{tr.toks[m[0]], tr.toks[m[1]]})
		}
		if !reflect.DeepEqual(gotToks, wantToks) && len(gotToks)+len(wantToks) > 0 {
			t.Fatalf("trial %d %q: tokens\n%q\nreference\n%q", trial, corpus, gotToks, wantToks)
		}
		if !reflect.DeepEqual(gotMerges, wantMerges) && len(gotMerges)+len(wantMerges) > 0 {
			t.Fatalf("trial %d %q: merges\n%q\nreference\n%q", trial, corpus, gotMerges, wantMerges)
		}
		// The pair counts the trainer keeps are exact at the end.
		want := map[uint64]int64{}
		for _, w := range tr.words {
			for j := 0; j+1 < len(w.syms); j++ {
				want[pairOf(w.syms[j], w.syms[j+1])] += w.count
			}
		}
		if !maps.Equal(tr.counts, want) {
			t.Fatalf("trial %d: pair counts %v, recount %v", trial, tr.counts, want)
		}
	}
}

func TestTrainErrors(t *testing.T) {
	tests := []struct {
		opt  TrainOptions
		want []string
	}{
		{TrainOptions{VocabSize: 258}, []string{"VocabSize 258 is below 256 byte tokens + 3 specials"}},
		{TrainOptions{VocabSize: 300, MinFrequency: -1}, []string{"MinFrequency -1 is negative"}},
		{TrainOptions{VocabSize: 300, Specials: []string{}}, []string{`lacks "<|endoftext|>"`, `lacks "<|im_start|>"`, `lacks "<|im_end|>"`}},
		{TrainOptions{VocabSize: 300, Specials: []string{"<|endoftext|>", "<|im_start|>", "<|im_end|>", "", "x", "<|im_end|>", "\xff"}},
			[]string{"Specials[3] is empty", `Specials[4] "x" is also a byte token`, `Specials[5] "<|im_end|>" is repeated`, `Specials[6] "\xff" is not valid UTF-8`}},
	}
	for _, tc := range tests {
		_, err := TrainBPE([]string{"abc"}, tc.opt)
		if err == nil {
			t.Errorf("%+v: no error", tc.opt)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) || !strings.HasPrefix(err.Error(), "tokenizer: train: ") {
				t.Errorf("%+v: error %q lacks %q", tc.opt, err, w)
			}
		}
	}
}

// TestTrainSokoban: the demo's use. Prompts shrink at least 3x (measured
// about 3.9x at 600 ids) and round-trip; specials are single ids; the
// chat template renders as the byte tokenizer does.
func TestTrainSokoban(t *testing.T) {
	h := trained(t, 600)
	if h.VocabSize() != 600 {
		t.Errorf("VocabSize %d, want 600", h.VocabSize())
	}
	var nBytes, nIDs int
	for _, s := range sokobanCorpus(3, 50) { // held-out prompts
		ids := h.Encode(s)
		nBytes += len(s)
		nIDs += len(ids)
	}
	ratio := float64(nBytes) / float64(nIDs)
	t.Logf("held-out prompts: %d bytes, %d ids, %.2fx", nBytes, nIDs, ratio)
	if ratio < 3 {
		t.Errorf("compression %.2fx, want at least 3x", ratio)
	}
	for _, s := range heldOut() {
		if got, want := h.Decode(h.Encode(s)), NFC(s); got != want {
			t.Errorf("round trip %q: got %q", s, got)
		}
	}
	for i, s := range DefaultTrainSpecials {
		if ids := h.Encode(s); len(ids) != 1 || ids[0] != 597+i || !h.IsSpecial(ids[0]) {
			t.Errorf("Encode(%q) = %v, want [%d] (special)", s, ids, 597+i)
		}
	}
	if got := h.EOSIDs(); !reflect.DeepEqual(got, []int{599}) {
		t.Errorf("EOSIDs %v, want [599]", got)
	}
	if h.PadID() != 597 {
		t.Errorf("PadID %d, want 597", h.PadID())
	}
	if got := h.DecodeSkipSpecial(h.Encode("<|im_start|>user\nUp<|im_end|>")); got != "user\nUp" {
		t.Errorf("DecodeSkipSpecial: %q", got)
	}
	b := NewByte()
	n := 0
	for _, c := range loadChatCases(t) {
		if !c.Plain || c.Template != "qwen25" || c.Output == nil {
			continue
		}
		var v struct {
			Messages []Message `json:"messages"`
			Gen      bool      `json:"add_generation_prompt"`
		}
		if err := json.Unmarshal(c.Vars, &v); err != nil {
			t.Fatal(err)
		}
		want, err := b.ApplyChatTemplate(v.Messages, v.Gen)
		if err != nil {
			t.Fatal(err)
		}
		got, err := h.ApplyChatTemplate(v.Messages, v.Gen)
		if err != nil {
			t.Fatal(err)
		}
		if got != want || got != *c.Output {
			t.Errorf("%s: ApplyChatTemplate\n%q\nbyte tokenizer:\n%q", c.Name, got, want)
		}
		n++
	}
	if n < 30 {
		t.Errorf("only %d qwen25 plain cases", n)
	}
	msgs := []Message{{Role: "system", Content: sokobanSystem}, {Role: "user", Content: "Turn 1:\nState:\n###"}}
	got, err := h.ApplyChatTemplate(msgs, true)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := b.ApplyChatTemplate(msgs, true); got != want {
		t.Errorf("ApplyChatTemplate %q, byte tokenizer %q", got, want)
	}
}

func TestTrainSaveLoad(t *testing.T) {
	h := trained(t, 600)
	dir := t.TempDir()
	if err := h.Save(dir); err != nil {
		t.Fatal(err)
	}
	h2, err := LoadHF(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(h.tokJSON, h2.tokJSON) || !bytes.Equal(h.cfgJSON, h2.cfgJSON) {
		t.Error("saved files differ from the trained ones")
	}
	if _, err := os.Stat(filepath.Join(dir, GenerationConfigFile)); err == nil {
		t.Errorf("%s written, want none", GenerationConfigFile)
	}
	for _, s := range append(heldOut(), sokobanCorpus(1, 20)...) {
		if a, b := h.Encode(s), h2.Encode(s); !reflect.DeepEqual(a, b) {
			t.Errorf("Encode(%q): trained %v, loaded %v", s, a, b)
		}
	}
	if h2.ChatTemplate() != Qwen25ChatTemplate || h2.EOSToken() != "<|im_end|>" || h2.PadToken() != "<|endoftext|>" {
		t.Errorf("config: template %v, eos %q, pad %q", h2.ChatTemplate() == Qwen25ChatTemplate, h2.EOSToken(), h2.PadToken())
	}
}

// TestTrainDeterministic: the same corpus, in any order, gives the same
// files byte for byte.
func TestTrainDeterministic(t *testing.T) {
	corpus := sokobanCorpus(1, 200)
	a, err := TrainBPE(corpus, TrainOptions{VocabSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	shuffled := append([]string(nil), corpus...)
	rand.New(rand.NewPCG(9, 9)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	b, err := TrainBPE(shuffled, TrainOptions{VocabSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.tokJSON, b.tokJSON) || !bytes.Equal(a.cfgJSON, b.cfgJSON) {
		t.Error("tokenizer files differ between runs")
	}
}

// trainFixtureTexts are the strings whose ids the Rust library computed.
func trainFixtureTexts() []string {
	texts := heldOut()
	r := rand.New(rand.NewPCG(7, 7))
	alphabet := []string{"#", "_", "O", "X", "P", "√", "S", "\n", " ", "Up", " || ", "Right", "<answer>", "</answer>",
		"<think>", "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|im_", "Turn", "1", "42", "é", "e\u0301", "你",
		"🙂", "'s", "'LL", "\t", "\r\n", "\u00a0", "  ", "!!", "a", "Z", "-0.1"}
	for range 250 {
		var sb strings.Builder
		for n := 1 + r.IntN(30); n > 0; n-- {
			sb.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		texts = append(texts, sb.String())
	}
	return texts
}

// TestTrainGolden trains the 600-id Sokoban tokenizer, compares its files
// with testdata/train, and checks that the ids the Rust tokenizers library
// computed from those files (hf_ids.json) equal ours.
func TestTrainGolden(t *testing.T) {
	h := trained(t, 600)
	dir := filepath.Join("testdata", "train")
	if *updateTrain {
		if err := h.Save(dir); err != nil {
			t.Fatal(err)
		}
		texts, err := json.MarshalIndent(trainFixtureTexts(), "", " ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "texts.json"), append(texts, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		corpus := strings.Join(hfTrainCorpus(), "")
		if err := os.WriteFile(filepath.Join(dir, "hf_train_corpus.txt"), []byte(corpus), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{TokenizerFile, h.tokJSON}, {TokenizerConfigFile, h.cfgJSON}} {
		golden, err := os.ReadFile(filepath.Join(dir, f.name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(golden, f.data) {
			t.Errorf("%s differs from testdata/train (rerun with -update-train if the change is intended)", f.name)
		}
	}
	var texts []string
	var ids [][]int
	for name, v := range map[string]any{"texts.json": &texts, "hf_ids.json": &ids} {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if len(texts) != len(ids) || len(texts) < 250 {
		t.Fatalf("%d texts, %d id lists, want equal and at least 250", len(texts), len(ids))
	}
	golden, err := LoadHF(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		want := ids[i]
		if got := golden.Encode(text); !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("Encode(%q) = %v, Rust tokenizers %v", text, got, want)
		}
		if got := h.Encode(text); !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("trained Encode(%q) = %v, Rust tokenizers %v", text, got, want)
		}
	}
}

// hfTrainCorpus is the corpus of TestTrainHFParity: lines (each ending in
// "\n", as Hugging Face's train_from_files reads them) of Sokoban turn
// messages without special tokens, and the Qwen2.5 fixture texts' GSM8K
// part with its numbers, punctuation and mixed case.
func hfTrainCorpus() []string {
	var lines []string
	add := func(text string) {
		for l := range strings.Lines(text) {
			if !strings.HasSuffix(l, "\n") {
				l += "\n"
			}
			lines = append(lines, l)
		}
	}
	add(sokobanSystem)
	r := rand.New(rand.NewPCG(3, 4))
	for turn := range 40 {
		add(fmt.Sprintf("Turn %d:\nState:\n%s\nYou have %d actions left. Always output: <think> [Your thoughts] </think> <answer> [your answer] </answer> with no extra text.\n",
			turn+1, sokobanGrid(r, 6, 7), r.IntN(11)))
	}
	// GSM8K questions and answers from the Qwen2.5 fixtures (their
	// pre-tokenization is checked against the Rust library there).
	var fx fixtures
	raw, err := os.ReadFile("testdata/qwen25_fixtures.json.gz")
	if err != nil {
		panic(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		panic(err)
	}
	if err := json.NewDecoder(zr).Decode(&fx); err != nil {
		panic(err)
	}
	n := 0
	for i, e := range fx.Encode {
		if i > 0 && strings.Contains(e.Text, "\n#### ") && n < 60 {
			add(fx.Encode[i-1].Text + "\n" + e.Text)
			n++
		}
	}
	add("I'M here, you'll see; THEY'RE there's   spaces\t\ttabs \r\nCRLF  \n   \n    indented code() { return x*2; }\n")
	return lines
}

// TestTrainHFParity: on a corpus without special tokens, TrainBPE learns
// exactly the merges, in order, that the Rust BpeTrainer learned with the
// same normalizer and pre-tokenizer (hf_train_merges.json, made by
// scripts/tokenizer/gen_train_fixtures.js), including its tie-breaks.
func TestTrainHFParity(t *testing.T) {
	dir := filepath.Join("testdata", "train")
	raw, err := os.ReadFile(filepath.Join(dir, "hf_train_corpus.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Join(hfTrainCorpus(), ""); string(raw) != want {
		t.Fatal("hf_train_corpus.txt differs from hfTrainCorpus (rerun with -update-train and the node script)")
	}
	var want [][2]string
	mj, err := os.ReadFile(filepath.Join(dir, "hf_train_merges.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(mj, &want); err != nil {
		t.Fatal(err)
	}
	if len(want) < 500 {
		t.Fatalf("%d reference merges, want at least 500", len(want))
	}
	h, err := TrainBPE(hfTrainCorpus(), TrainOptions{VocabSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	got := mergesOf(t, h)
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Fatalf("merge %d: %q, Rust BpeTrainer %q (previous: %q)", i, got[i], want[i], want[max(i-3, 0):i])
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d merges, Rust BpeTrainer %d", len(got), len(want))
	}
}

// FuzzTrainBPE trains on the lines of the input and checks that the files
// load and that every line and the whole input round-trip.
func FuzzTrainBPE(f *testing.F) {
	f.Add("aaab aab\nab ab ab cd", 300, 1)
	f.Add("<|im_start|>user\nhi<|im_end|>\n#__P#\n#X_O#", 280, 2)
	f.Add("e\u0301 é \u00a0 \t\r\n🙂🙂", 270, 1)
	f.Add("\xff\xfe a\x80b", 265, 0)
	f.Fuzz(func(t *testing.T, text string, vocab, minFreq int) {
		if len(text) > 2000 {
			return
		}
		vocab = 259 + (vocab%200+200)%200
		minFreq = (minFreq%4 + 4) % 4
		corpus := strings.Split(text, "\n")
		h, err := TrainBPE(corpus, TrainOptions{VocabSize: vocab, MinFrequency: minFreq})
		if err != nil {
			t.Fatal(err)
		}
		if h.VocabSize() > vocab {
			t.Fatalf("VocabSize %d > %d", h.VocabSize(), vocab)
		}
		for _, s := range append(corpus, text) {
			ids := h.Encode(s)
			var raw []byte
			for _, id := range ids {
				b, ok := h.TokenBytes(id)
				if !ok {
					t.Fatalf("Encode(%q): unknown id %d", s, id)
				}
				raw = append(raw, b...)
			}
			if want := segmentNFC(s); string(raw) != want {
				t.Fatalf("bytes of Encode(%q) = %q, want %q", s, raw, want)
			}
			if utf8.ValidString(s) {
				if got := h.Decode(ids); got != segmentNFC(s) {
					t.Fatalf("Decode(Encode(%q)) = %q", s, got)
				}
			}
		}
	})
}

// FuzzTrainedEncode round-trips arbitrary text through the Sokoban tokenizer.
func FuzzTrainedEncode(f *testing.F) {
	for _, s := range heldOut() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h := trained(t, 600)
		ids := h.Encode(s)
		var raw []byte
		for _, id := range ids {
			b, _ := h.TokenBytes(id)
			raw = append(raw, b...)
		}
		if want := segmentNFC(s); string(raw) != want {
			t.Fatalf("bytes of Encode(%q) = %q, want %q", s, raw, want)
		}
	})
}

// BenchmarkTrainBPE trains 3,000 merges on 1 MB: the 834 kB of the Qwen2.5
// fixture texts (GSM8K questions and answers, prompts, fuzz strings) and
// Sokoban prompts for the rest.
func BenchmarkTrainBPE(b *testing.B) {
	var corpus []string
	size := 0
	for _, e := range loadFixtures(b).Encode {
		corpus = append(corpus, e.Text)
		size += len(e.Text)
	}
	for seed := uint64(100); size < 1<<20; seed++ {
		for _, s := range sokobanCorpus(seed, 10) {
			corpus = append(corpus, s)
			size += len(s)
		}
	}
	b.SetBytes(int64(size))
	var h *HF
	for b.Loop() {
		var err error
		h, err = TrainBPE(corpus, TrainOptions{VocabSize: 256 + 3000 + 3})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(h.VocabSize()), "vocab")
}

func TestTrainBPEAddedTokensStayWholeAndAreNotSpecial(t *testing.T) {
	corpus := []string{}
	for i := range 50 {
		corpus = append(corpus, fmt.Sprintf("<|im_start|>assistant\n<think>let me try %d</think><answer>Left</answer><|im_end|>\n", i))
	}
	h, err := TrainBPE(corpus, TrainOptions{VocabSize: 400, Added: []string{"<think>", "</think>", "<answer>", "</answer>"}})
	if err != nil {
		t.Fatal(err)
	}
	think, ok := h.TokenID("<think>")
	if !ok {
		t.Fatal("<think> is not a token")
	}
	// a prompt ending in the forced prefix and the training text agree on its tokens
	prompt := h.Encode("<|im_start|>assistant\n<think>")
	full := h.Encode("<|im_start|>assistant\n<think>let me try 3</think>")
	if prompt[len(prompt)-1] != think || full[len(prompt)-1] != think {
		t.Fatalf("prefix tokens differ: prompt %v, full %v", prompt, full)
	}
	for i := range prompt {
		if prompt[i] != full[i] {
			t.Fatalf("token %d: prompt %d, full text %d", i, prompt[i], full[i])
		}
	}
	if h.IsSpecial(think) {
		t.Fatal("<think> must be an ordinary added token (special=false)")
	}
	if got := h.DecodeSkipSpecial(full); got != "assistant\n<think>let me try 3</think>" {
		t.Fatalf("DecodeSkipSpecial = %q", got)
	}
	if _, err := TrainBPE(corpus, TrainOptions{VocabSize: 400, Added: []string{"<|im_end|>", ""}}); err == nil ||
		!strings.Contains(err.Error(), "Added[0]") || !strings.Contains(err.Error(), "Added[1] is empty") {
		t.Fatalf("bad Added: err = %v", err)
	}
}
