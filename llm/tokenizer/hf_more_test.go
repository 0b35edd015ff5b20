package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestHFDecodeFixtures compares Decode and DecodeSkipSpecial with the Rust
// reference on id windows that split characters and on random ids.
func TestHFDecodeFixtures(t *testing.T) {
	tok := loadQwen25(t)
	f := loadFixtures(t)
	if len(f.Decode) < 400 {
		t.Fatalf("only %d decode fixtures", len(f.Decode))
	}
	for _, fx := range f.Decode {
		if got := tok.Decode(fx.IDs); got != fx.Text {
			t.Errorf("Decode(%v) = %+q, want %+q", fx.IDs, got, fx.Text)
		}
		if got := tok.DecodeSkipSpecial(fx.IDs); got != fx.Skip {
			t.Errorf("DecodeSkipSpecial(%v) = %+q, want %+q", fx.IDs, got, fx.Skip)
		}
	}
}

// TestHFKnownIDs checks ids published in ecosystem notes (from transformers).
func TestHFKnownIDs(t *testing.T) {
	tok := loadQwen25(t)
	tests := []struct {
		in   string
		want []int
	}{
		{"Hello world", []int{9707, 1879}},
		{"x  \n  y", []int{87, 2303, 220, 379}},
		{"<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n", []int{151644, 872, 198, 3838, 374, 220, 17, 10, 17, 30, 151645, 198, 151644, 77091, 198}},
		// NFC folds a+U+0301 to á before splitting.
		{"a\u0301 e\u0301 combining", []int{1953, 3958, 34171}},
	}
	for _, tc := range tests {
		if got := tok.Encode(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Encode(%+q) = %v, want %v", tc.in, got, tc.want)
		}
	}
	if id, ok := tok.TokenID("<|im_end|>"); !ok || id != 151645 {
		t.Errorf("TokenID(<|im_end|>) = %d %v", id, ok)
	}
	if id, ok := tok.TokenID("Ġworld"); !ok || id != 1879 {
		t.Errorf("TokenID(Ġworld) = %d %v", id, ok)
	}
	if id, ok := tok.TokenID(" world"); !ok || id != 1879 {
		t.Errorf("TokenID(' world') = %d %v", id, ok)
	}
	if s, ok := tok.IDToken(1879); !ok || s != "Ġworld" {
		t.Errorf("IDToken(1879) = %q", s)
	}
	// tokenizer_config.json: eos <|im_end|>, pad <|endoftext|>, no bos.
	if !reflect.DeepEqual(tok.EOSIDs(), []int{151645}) || tok.PadID() != 151643 || tok.BOSToken() != "" {
		t.Errorf("EOS %v pad %d bos %q", tok.EOSIDs(), tok.PadID(), tok.BOSToken())
	}
	if tok.VocabSize() != 151665 {
		t.Errorf("VocabSize = %d, want 151665 (151643 BPE + 22 added)", tok.VocabSize())
	}
	if !tok.IsSpecial(151644) || tok.IsSpecial(151657) { // <tool_call> is added but not special
		t.Error("IsSpecial wrong")
	}
}

func TestSplitQwen2(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		// Contractions (ASCII case-insensitive) come first where a match starts
		// at the apostrophe: "'sup" -> "'s" "up". After a space, " '" is a
		// symbol run (the space joins it) and "sup" is a letter run.
		{"I'm DON'T 'sup", []string{"I", "'m", " DON", "'T", " '", "sup"}},
		{"'sup", []string{"'s", "up"}},
		// A non-letter, non-newline char joins the following letters.
		{" hello\tworld", []string{" hello", "\tworld"}},
		// Digits are single pieces.
		{"x123", []string{"x", "1", "2", "3"}},
		// Punctuation run with a leading space takes trailing newlines.
		{"a ?!\n\nb", []string{"a", " ?!\n\n", "b"}},
		// Whitespace before a letter: all but the last space, then " word".
		{"a   b", []string{"a", "  ", " b"}},
		// \s*[\r\n]+ ends at the last newline of the run.
		{"a \n \n  b", []string{"a", " \n \n", " ", " b"}},
		// Trailing whitespace at the end of text is one piece.
		{"a   ", []string{"a", "   "}},
		// NBSP and U+3000 are whitespace; U+200B is not (it is a symbol).
		{"a\u00a0\u3000b\u200bc", []string{"a", "\u00a0", "\u3000b", "\u200bc"}},
	}
	for _, tc := range tests {
		var got []string
		splitQwen2(tc.in, func(p string) { got = append(got, p) })
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("split(%+q) = %+q, want %+q", tc.in, got, tc.want)
		}
	}
}

func TestSplitLlama3(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		// \p{N}{1,3}: digits in greedy groups of up to three.
		{"1234567 x", []string{"123", "456", "7", " x"}},
		{"v2.0", []string{"v", "2", ".", "0"}},
		// Other number characters count too: Arabic-Indic digits and ½.
		{"١٢٣٤½", []string{"١٢٣", "٤½"}},
	}
	for _, tc := range tests {
		var got []string
		splitPattern(tc.in, 3, func(p string) { got = append(got, p) })
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("split(%+q) = %+q, want %+q", tc.in, got, tc.want)
		}
	}
}

// TestHFPairMerges converts the committed tokenizer.json to the [a, b] merge
// form of newer files (the Qwen3 npm file) and checks identical encoding.
func TestHFPairMerges(t *testing.T) {
	if testing.Short() {
		t.Skip("loads a second full vocabulary")
	}
	tj := readGzip(t, "testdata/qwen25/tokenizer.json.gz")
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(tj, &doc); err != nil {
		t.Fatal(err)
	}
	var model map[string]json.RawMessage
	if err := json.Unmarshal(doc["model"], &model); err != nil {
		t.Fatal(err)
	}
	var merges []string
	if err := json.Unmarshal(model["merges"], &merges); err != nil {
		t.Fatal(err)
	}
	pairs := make([][2]string, len(merges))
	for i, m := range merges {
		a, b, _ := strings.Cut(m, " ")
		pairs[i] = [2]string{a, b}
	}
	model["merges"], _ = json.Marshal(pairs)
	doc["model"], _ = json.Marshal(model)
	tj2, _ := json.Marshal(doc)
	tc, _ := os.ReadFile("testdata/qwen25/tokenizer_config.json")
	tok2, err := ParseHF(tj2, tc, nil)
	if err != nil {
		t.Fatal(err)
	}
	tok := loadQwen25(t)
	for _, fx := range loadFixtures(t).Encode[:1500] {
		if got := tok2.Encode(fx.Text); !reflect.DeepEqual(got, tok.Encode(fx.Text)) {
			t.Fatalf("pair merges differ on %+q", fx.Text)
		}
	}
}

func TestHFSave(t *testing.T) {
	tok := loadQwen25(t)
	dir := t.TempDir()
	if err := tok.Save(dir); err != nil {
		t.Fatal(err)
	}
	gen := []byte(`{"eos_token_id": [151645, 151643], "pad_token_id": 151643}`)
	if err := os.WriteFile(filepath.Join(dir, GenerationConfigFile), gen, 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := LoadHF(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := "Saved <|im_start|>folder 🙂"
	if !reflect.DeepEqual(back.Encode(s), tok.Encode(s)) {
		t.Error("reloaded tokenizer encodes differently")
	}
	if !reflect.DeepEqual(back.EOSIDs(), []int{151645, 151643}) {
		t.Errorf("EOSIDs with generation_config = %v", back.EOSIDs())
	}
	if back.ChatTemplate() != tok.ChatTemplate() {
		t.Error("chat template lost")
	}
	b, _ := os.ReadFile(filepath.Join(dir, TokenizerFile))
	if !bytes.Equal(b, readGzip(t, "testdata/qwen25/tokenizer.json.gz")) {
		t.Error("tokenizer.json not written back byte for byte")
	}
}

// tinyTokenizer is a hand-made tokenizer.json: bytes (the 256 byte-level
// characters) plus merges "a b" -> "ab", "ab c" -> "abc".
func tinyTokenizer(t testing.TB, edit func(m map[string]any)) []byte {
	t.Helper()
	vocab := map[string]any{}
	for b := 0; b < 256; b++ {
		vocab[string(byteToRune[b])] = b
	}
	vocab["ab"], vocab["abc"], vocab["bc"] = 256, 257, 258
	doc := map[string]any{
		"version":    "1.0",
		"normalizer": map[string]any{"type": "NFC"},
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": Qwen2SplitPattern}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		}},
		"decoder":      map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		"added_tokens": []any{map[string]any{"id": 259, "content": "<|eot|>", "special": true, "normalized": false}},
		"model":        map[string]any{"type": "BPE", "vocab": vocab, "merges": []any{"a b", []any{"b", "c"}, "ab c"}},
	}
	if edit != nil {
		edit(doc)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestHFTiny(t *testing.T) {
	tok, err := ParseHF(tinyTokenizer(t, nil), []byte(`{"eos_token": {"content": "<|eot|>"}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	// "abc": merges by rank: a+b (rank 0) first -> [ab, c], then ab+c (rank 2) -> [abc].
	// "bcab": a+b at position 2 (rank 0) first -> [b, c, ab]; then b+c (rank 1) -> [bc, ab].
	tests := []struct {
		in   string
		want []int
	}{
		{"abc", []int{257}},
		{"bcab", []int{258, 256}},
		{"cab<|eot|>", []int{'c', 256, 259}},
	}
	for _, tc := range tests {
		if got := tok.Encode(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Encode(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
	if !reflect.DeepEqual(tok.EOSIDs(), []int{259}) || tok.PadID() != 259 {
		t.Errorf("EOS %v pad %d", tok.EOSIDs(), tok.PadID())
	}
	if _, err := tok.ApplyChatTemplate([]Message{{"user", "x"}}, true); err != ErrNoChatTemplate {
		t.Errorf("no template: err = %v", err)
	}
}

func TestHFErrors(t *testing.T) {
	cfg := []byte(`{}`)
	tests := []struct {
		name string
		tj   []byte
		tc   []byte
		want string
	}{
		{"truncated", tinyTokenizer(t, nil)[:300], cfg, "tokenizer.json: invalid JSON"},
		{"no model", tinyTokenizer(t, func(m map[string]any) { delete(m, "model") }), cfg, "tokenizer.json: model: missing"},
		{"wordpiece", tinyTokenizer(t, func(m map[string]any) { m["model"].(map[string]any)["type"] = "WordPiece" }), cfg, `model.type: "WordPiece"`},
		{"bad merge", tinyTokenizer(t, func(m map[string]any) { m["model"].(map[string]any)["merges"] = []any{"a b c"} }), cfg, "model.merges[0]"},
		{"merge oov", tinyTokenizer(t, func(m map[string]any) { m["model"].(map[string]any)["merges"] = []any{"x y"} }), cfg, `model.merges[0]: "x" "y": token not in model.vocab`},
		{"missing byte", tinyTokenizer(t, func(m map[string]any) { delete(m["model"].(map[string]any)["vocab"].(map[string]any), "Ġ") }), cfg, "model.vocab: byte 0x20"},
		{"regex", tinyTokenizer(t, func(m map[string]any) {
			m["pre_tokenizer"].(map[string]any)["pretokenizers"].([]any)[0].(map[string]any)["pattern"] = map[string]any{"Regex": `\s+`}
		}), cfg, "pre_tokenizer.pretokenizers[0].pattern: unsupported"},
		{"normalizer", tinyTokenizer(t, func(m map[string]any) { m["normalizer"] = map[string]any{"type": "NFKC"} }), cfg, `normalizer: unsupported type "NFKC"`},
		{"added id", tinyTokenizer(t, func(m map[string]any) { m["added_tokens"] = []any{map[string]any{"content": "x"}} }), cfg, "added_tokens[0]: id missing"},
		{"config json", tinyTokenizer(t, nil), []byte(`{"eos_token": `), "tokenizer_config.json: invalid JSON"},
		{"eos unknown", tinyTokenizer(t, nil), []byte(`{"eos_token": "<nope>"}`), `tokenizer_config.json: eos_token: "<nope>" is not a token`},
		{"eos type", tinyTokenizer(t, nil), []byte(`{"eos_token": 5}`), "tokenizer_config.json: eos_token: want a string"},
		{"decoder mismatch", tinyTokenizer(t, nil), []byte(`{"added_tokens_decoder": {"259": {"content": "<x>"}}}`), `added_tokens_decoder[259]: "<x>"`},
	}
	for _, tc := range tests {
		_, err := ParseHF(tc.tj, tc.tc, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := LoadHF(t.TempDir()); err == nil || !strings.Contains(err.Error(), "tokenizer.json") {
		t.Errorf("empty dir: err = %v", err)
	}
}

// TestStreamDecoder feeds ids one by one and checks that text appears only
// once characters are complete, and that the pieces add up to Decode.
func TestStreamDecoder(t *testing.T) {
	tok := loadQwen25(t)
	// "🙂" is F0 9F 99 82; with the byte tokenizer each byte is one id.
	bt := NewByte()
	d := NewStreamDecoder(bt, false)
	var got []string
	for _, id := range bt.Encode("a🙂b") {
		got = append(got, d.Add(id))
	}
	if want := []string{"a", "", "", "", "🙂", "b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("byte stream = %q, want %q", got, want)
	}
	// A truncated character is flushed as U+FFFD, as Decode does.
	d.Add(0xE2)
	if !d.Pending() || d.Flush() != "\uFFFD" {
		t.Error("flush of a truncated character")
	}

	texts := []string{"你好，世界！🙂👍🏽 ok", "Ünïcödé — “quotes” <|im_end|>\n", "नमस्ते 👨‍👩‍👧"}
	for _, s := range texts {
		ids := tok.Encode(s)
		for _, skip := range []bool{false, true} {
			d := NewStreamDecoder(tok, skip)
			var sb strings.Builder
			for _, id := range ids {
				piece := d.Add(id)
				if !utf8.ValidString(piece) || strings.ContainsRune(piece, utf8.RuneError) {
					t.Errorf("%q: piece %q is not clean UTF-8", s, piece)
				}
				sb.WriteString(piece)
			}
			sb.WriteString(d.Flush())
			want := tok.Decode(ids)
			if skip {
				want = tok.DecodeSkipSpecial(ids)
			}
			if sb.String() != want {
				t.Errorf("stream %q != decode %q", sb.String(), want)
			}
		}
	}
}

func FuzzHFEncode(f *testing.F) {
	tok := loadQwen25(f)
	for _, s := range []string{"Hello world", "x  \n  y", "a\u0301", "<|im_start|>", "\xff\xfe", "'S'll", "🙂"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids := tok.Encode(s)
		for _, id := range ids {
			if id < 0 || id >= tok.VocabSize() {
				t.Fatalf("id %d out of range", id)
			}
		}
		if utf8.ValidString(s) {
			if got, want := tok.Decode(ids), NFC(s); got != want {
				t.Fatalf("Decode(Encode(%+q)) = %+q, want %+q", s, got, want)
			}
		}
	})
}

func FuzzStreamDecoder(f *testing.F) {
	tok := loadQwen25(f)
	f.Add(uint64(1), 20)
	f.Fuzz(func(t *testing.T, seed uint64, n int) {
		if n < 0 || n > 200 {
			return
		}
		rng := rand.New(rand.NewPCG(seed, 7))
		ids := make([]int, n)
		for i := range ids {
			ids[i] = rng.IntN(tok.VocabSize() + 5)
		}
		d := NewStreamDecoder(tok, false)
		var sb strings.Builder
		for _, id := range ids {
			sb.WriteString(d.Add(id))
		}
		sb.WriteString(d.Flush())
		if sb.String() != tok.Decode(ids) {
			t.Fatalf("stream != decode for %v", ids)
		}
	})
}

func FuzzSplitQwen2(f *testing.F) {
	for _, s := range []string{"a   b", "'s\r\n\r\n", "\u00a0\u3000x", "\xff a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var sb strings.Builder
		splitQwen2(s, func(p string) {
			if p == "" {
				t.Fatal("empty piece")
			}
			sb.WriteString(p)
		})
		if sb.String() != s {
			t.Fatalf("pieces do not cover %+q", s)
		}
	})
}

func BenchmarkHFEncode(b *testing.B) {
	tok := loadQwen25(b)
	var sb strings.Builder
	for _, fx := range loadFixtures(b).Encode {
		sb.WriteString(fx.Text)
	}
	text := sb.String()
	// Split into ~4 KB chunks so the BPE cache sees realistic reuse.
	var chunks []string
	for len(text) > 4096 {
		k := 4096
		for !utf8.RuneStart(text[k]) {
			k++
		}
		chunks = append(chunks, text[:k])
		text = text[k:]
	}
	chunks = append(chunks, text)
	total := 0
	for _, c := range chunks {
		total += len(c)
	}
	b.SetBytes(int64(total))
	b.ResetTimer()
	for b.Loop() {
		for _, c := range chunks {
			tok.Encode(c)
		}
	}
}

func BenchmarkLoadHF(b *testing.B) {
	tj := readGzip(b, "testdata/qwen25/tokenizer.json.gz")
	tc, _ := os.ReadFile("testdata/qwen25/tokenizer_config.json")
	for b.Loop() {
		if _, err := ParseHF(tj, tc, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// TestHFConcurrent encodes from several goroutines (shared BPE cache and
// lazily compiled template); run with -race.
func TestHFConcurrent(t *testing.T) {
	tok := loadQwen25(t)
	fx := loadFixtures(t).Encode[:400]
	done := make(chan error, 4)
	for g := 0; g < 4; g++ {
		go func(g int) {
			for i := g; i < len(fx); i += 4 {
				if got := tok.Encode(fx[i].Text); !reflect.DeepEqual(got, fx[i].IDs) && len(fx[i].IDs) > 0 {
					done <- fmt.Errorf("goroutine %d: mismatch on %+q", g, fx[i].Text)
					return
				}
			}
			_, err := tok.ApplyChatTemplate([]Message{{"user", "hi"}}, true)
			done <- err
		}(g)
	}
	for g := 0; g < 4; g++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// TestHFTemplateProcessing: a Llama-3-style post-processor puts special
// tokens around the sequence when add_special_tokens is on.
func TestHFTemplateProcessing(t *testing.T) {
	tj := tinyTokenizer(t, func(m map[string]any) {
		m["added_tokens"] = append(m["added_tokens"].([]any), map[string]any{"id": 260, "content": "<s>", "special": true})
		m["post_processor"] = map[string]any{"type": "Sequence", "processors": []any{
			map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true},
			map[string]any{"type": "TemplateProcessing",
				"single":         []any{map[string]any{"SpecialToken": map[string]any{"id": "<s>", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}, map[string]any{"SpecialToken": map[string]any{"id": "<|eot|>", "type_id": 0}}},
				"special_tokens": map[string]any{"<s>": map[string]any{"id": "<s>", "ids": []any{260}, "tokens": []any{"<s>"}}, "<|eot|>": map[string]any{"id": "<|eot|>", "ids": []any{259}, "tokens": []any{"<|eot|>"}}},
			},
		}}
	})
	tok, err := ParseHF(tj, []byte(`{}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	// "abc" is one token (257); <s> (260) before, <|eot|> (259) after.
	if got := tok.Encode("abc"); !reflect.DeepEqual(got, []int{260, 257, 259}) {
		t.Errorf("Encode = %v", got)
	}
	if got := tok.EncodeSpecial("abc", false); !reflect.DeepEqual(got, []int{257}) {
		t.Errorf("EncodeSpecial(false) = %v", got)
	}
	bad := tinyTokenizer(t, func(m map[string]any) {
		m["post_processor"] = map[string]any{"type": "TemplateProcessing", "single": []any{map[string]any{"SpecialToken": map[string]any{"id": "<bos>"}}}}
	})
	if _, err := ParseHF(bad, []byte(`{}`), nil); err == nil || !strings.Contains(err.Error(), `post_processor.single[0]: special token "<bos>" not in special_tokens`) {
		t.Errorf("err = %v", err)
	}
	bert := tinyTokenizer(t, func(m map[string]any) { m["post_processor"] = map[string]any{"type": "BertProcessing"} })
	if _, err := ParseHF(bert, []byte(`{}`), nil); err == nil || !strings.Contains(err.Error(), `post_processor: unsupported type "BertProcessing"`) {
		t.Errorf("err = %v", err)
	}
}

// FuzzParseHF feeds mutated tokenizer.json / tokenizer_config.json pairs:
// loading may fail but must not panic, and a loaded tokenizer must encode.
func FuzzParseHF(f *testing.F) {
	f.Add(tinyTokenizer(f, nil), []byte(`{"eos_token": "<|eot|>", "chat_template": "{{ messages[0].content }}"}`))
	f.Add(tinyTokenizer(f, func(m map[string]any) { m["normalizer"] = nil }), []byte(`{"added_tokens_decoder": {"259": {"content": "<|eot|>"}}}`))
	f.Fuzz(func(t *testing.T, tj, tc []byte) {
		tok, err := ParseHF(tj, tc, nil)
		if err != nil {
			return
		}
		ids := tok.Encode("abc <|eot|> x")
		_ = tok.Decode(ids)
		_, _ = tok.ApplyChatTemplate([]Message{{"user", "hi"}}, true)
	})
}

func FuzzJSONValue(f *testing.F) {
	f.Add([]byte(`{"b": [1, 2.5, "x", null, true, {"a": {}}]}`))
	f.Add([]byte(`[1e400, -0, "\u00e9"]`))
	tmpl, err := ParseTemplate("{{ v | tojson }}{{ v }}")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := JSONValue(data)
		if err != nil {
			return
		}
		_, _ = tmpl.Render(map[string]any{"v": v})
	})
}
