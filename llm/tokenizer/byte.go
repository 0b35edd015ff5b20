package tokenizer

import "fmt"

// Ids of the special tokens of the byte tokenizer; ids 0-255 are bytes.
const (
	ByteEndOfText = 256 // <|endoftext|>, also the pad token
	ByteImStart   = 257 // <|im_start|>
	ByteImEnd     = 258 // <|im_end|>, the end-of-turn token
	byteVocabSize = 259
)

var byteSpecials = [...]string{"<|endoftext|>", "<|im_start|>", "<|im_end|>"}

// Byte is a byte-level tokenizer for tiny models trained from scratch: ids
// 0-255 are the bytes of the UTF-8 text, followed by the special tokens
// <|endoftext|> (256), <|im_start|> (257) and <|im_end|> (258), which are
// matched literally in the text. Its chat template is Qwen2.5's.
// A Byte is safe for concurrent use.
type Byte struct {
	match *literalMatcher
}

var _ Tokenizer = (*Byte)(nil)

// NewByte returns the byte-level tokenizer.
func NewByte() *Byte {
	toks := map[string]int{}
	for i, s := range byteSpecials {
		toks[s] = 256 + i
	}
	return &Byte{match: newLiteralMatcher(toks)}
}

// Encode returns one id per byte of text, except that special tokens
// appearing literally are one id each.
func (t *Byte) Encode(text string) []int {
	ids := make([]int, 0, len(text))
	for _, seg := range t.match.split(text) {
		if seg.id >= 0 {
			ids = append(ids, seg.id)
			continue
		}
		for i := 0; i < len(seg.text); i++ {
			ids = append(ids, int(seg.text[i]))
		}
	}
	return ids
}

// Decode concatenates the bytes and special tokens of ids. Invalid UTF-8 is
// replaced by U+FFFD as in Hugging Face decoding; ids outside the vocabulary
// are skipped.
func (t *Byte) Decode(ids []int) string { return t.decode(ids, false) }

// DecodeSkipSpecial is Decode with the special tokens left out
// (skip_special_tokens=True).
func (t *Byte) DecodeSkipSpecial(ids []int) string { return t.decode(ids, true) }

func (t *Byte) decode(ids []int, skipSpecial bool) string {
	buf := make([]byte, 0, len(ids))
	for _, id := range ids {
		switch {
		case id >= 0 && id < 256:
			buf = append(buf, byte(id))
		case id >= 256 && id < byteVocabSize:
			if !skipSpecial {
				buf = append(buf, byteSpecials[id-256]...)
			}
		}
	}
	return lossyUTF8(buf)
}

// VocabSize is 259.
func (t *Byte) VocabSize() int { return byteVocabSize }

// TokenID returns the id of a special token or of a one-byte string.
func (t *Byte) TokenID(tok string) (int, bool) {
	for i, s := range byteSpecials {
		if tok == s {
			return 256 + i, true
		}
	}
	if len(tok) == 1 {
		return int(tok[0]), true
	}
	return 0, false
}

// IDToken returns the text of one id: a special token or a one-byte string.
func (t *Byte) IDToken(id int) (string, bool) {
	switch {
	case id >= 0 && id < 256:
		return string([]byte{byte(id)}), true
	case id >= 256 && id < byteVocabSize:
		return byteSpecials[id-256], true
	}
	return "", false
}

// IsSpecial reports whether id is one of the special tokens.
func (t *Byte) IsSpecial(id int) bool { return id >= 256 && id < byteVocabSize }

// EOSIDs are <|im_end|> and <|endoftext|>, as in Qwen2.5-Instruct's
// generation config.
func (t *Byte) EOSIDs() []int { return []int{ByteImEnd, ByteEndOfText} }

// PadID is <|endoftext|>, Qwen's pad token.
func (t *Byte) PadID() int { return ByteEndOfText }

// ApplyChatTemplate renders msgs in the Qwen2.5 chat format, exactly as the
// Qwen2.5-Instruct Jinja template does without tools.
func (t *Byte) ApplyChatTemplate(msgs []Message, addGenerationPrompt bool) (string, error) {
	s, err := RenderQwen25(msgs, addGenerationPrompt)
	if err != nil {
		return "", fmt.Errorf("tokenizer: byte: %w", err)
	}
	return s, nil
}
