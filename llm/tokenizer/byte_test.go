package tokenizer

import (
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestByteEncode(t *testing.T) {
	tok := NewByte()
	tests := []struct {
		in   string
		want []int
	}{
		// 'H'=72 'i'=105.
		{"Hi", []int{72, 105}},
		{"", []int{}},
		// "é" is C3 A9 in UTF-8 = 195, 169.
		{"é", []int{195, 169}},
		// Specials are single ids; '\n' = 10.
		{"<|im_start|>a\n<|im_end|>", []int{ByteImStart, 97, 10, ByteImEnd}},
		{"x<|endoftext|>", []int{120, ByteEndOfText}},
		// An unfinished special is plain bytes: '<'=60 '|'=124.
		{"<|im_end", []int{60, 124, 105, 109, 95, 101, 110, 100}},
		// "<<|im_end|>": first '<' is a byte, then the special.
		{"<<|im_end|>", []int{60, ByteImEnd}},
	}
	for _, tc := range tests {
		got := tok.Encode(tc.in)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Encode(%q) = %v, want %v", tc.in, got, tc.want)
		}
		if back := tok.Decode(got); back != tc.in {
			t.Errorf("Decode(Encode(%q)) = %q", tc.in, back)
		}
	}
}

func TestByteDecode(t *testing.T) {
	tok := NewByte()
	tests := []struct {
		name string
		ids  []int
		want string
		skip string // DecodeSkipSpecial
	}{
		{"specials", []int{ByteImStart, 104, 105, ByteImEnd, ByteEndOfText}, "<|im_start|>hi<|im_end|><|endoftext|>", "hi"},
		// E2 82 is a truncated "€" (E2 82 AC): one U+FFFD, as Rust's from_utf8_lossy.
		{"truncated", []int{0xE2, 0x82}, "\uFFFD", "\uFFFD"},
		// C0 is never valid: one U+FFFD per byte; then 'a'.
		{"invalid", []int{0xC0, 0xC0, 97}, "\uFFFD\uFFFDa", "\uFFFD\uFFFDa"},
		// Out-of-range ids are skipped.
		{"out of range", []int{-1, 104, 259, 1 << 40}, "h", "h"},
	}
	for _, tc := range tests {
		if got := tok.Decode(tc.ids); got != tc.want {
			t.Errorf("%s: Decode = %q, want %q", tc.name, got, tc.want)
		}
		if got := tok.DecodeSkipSpecial(tc.ids); got != tc.skip {
			t.Errorf("%s: DecodeSkipSpecial = %q, want %q", tc.name, got, tc.skip)
		}
	}
}

func TestByteVocab(t *testing.T) {
	tok := NewByte()
	if tok.VocabSize() != 259 {
		t.Errorf("VocabSize = %d", tok.VocabSize())
	}
	if !reflect.DeepEqual(tok.EOSIDs(), []int{258, 256}) || tok.PadID() != 256 {
		t.Errorf("EOS %v pad %d", tok.EOSIDs(), tok.PadID())
	}
	for s, want := range map[string]int{"<|endoftext|>": 256, "<|im_start|>": 257, "<|im_end|>": 258, "A": 65} {
		if id, ok := tok.TokenID(s); !ok || id != want {
			t.Errorf("TokenID(%q) = %d, %v; want %d", s, id, ok, want)
		}
		if s2, ok := tok.IDToken(want); !ok || s2 != s {
			t.Errorf("IDToken(%d) = %q", want, s2)
		}
	}
	if _, ok := tok.TokenID("ab"); ok {
		t.Error("TokenID(ab) found")
	}
}

// chatCase is one record of testdata/chat_cases.json, rendered by Python
// Jinja2 (scripts/tokenizer/render_chat.py).
type chatCase struct {
	Name     string          `json:"name"`
	Template string          `json:"template"`
	Plain    bool            `json:"plain"`
	Vars     json.RawMessage `json:"vars"`
	Output   *string         `json:"output"`
	Error    string          `json:"error"`
}

func loadChatCases(t testing.TB) []chatCase {
	t.Helper()
	b, err := os.ReadFile("testdata/chat_cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []chatCase
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	return cases
}

// TestByteChatTemplate checks that Byte renders exactly what the real
// Qwen2.5 template renders in Python Jinja2.
func TestByteChatTemplate(t *testing.T) {
	tok := NewByte()
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
		got, err := tok.ApplyChatTemplate(v.Messages, v.Gen)
		if err != nil {
			t.Errorf("%s: %v", c.Name, err)
			continue
		}
		if got != *c.Output {
			t.Errorf("%s:\n got %q\nwant %q", c.Name, got, *c.Output)
		}
		n++
	}
	if n < 30 {
		t.Errorf("only %d qwen25 plain cases", n)
	}
	if _, err := tok.ApplyChatTemplate(nil, true); !errors.Is(err, ErrNoMessages) {
		t.Errorf("empty messages: err = %v", err)
	}
}

func FuzzByte(f *testing.F) {
	for _, s := range []string{"", "Hi", "<|im_start|>x<|im_end|>", "\xff\xfe", "é€𝄞"} {
		f.Add(s)
	}
	tok := NewByte()
	f.Fuzz(func(t *testing.T, s string) {
		ids := tok.Encode(s)
		for _, id := range ids {
			if id < 0 || id >= tok.VocabSize() {
				t.Fatalf("id %d out of range", id)
			}
		}
		got := tok.Decode(ids)
		if utf8.ValidString(s) && got != s {
			t.Fatalf("round trip %q -> %q", s, got)
		}
		if !utf8.ValidString(got) {
			t.Fatalf("Decode gave invalid UTF-8 %q", got)
		}
	})
}

func BenchmarkByteEncode(b *testing.B) {
	tok := NewByte()
	text := strings.Repeat("<|im_start|>user\nTurn 1:\nState:\n######\n#_P_O#\n######<|im_end|>\n", 200)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		tok.Encode(text)
	}
}
