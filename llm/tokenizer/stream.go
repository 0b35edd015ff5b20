package tokenizer

// TokenByter maps one id to the bytes it decodes to; *HF and *Byte
// implement it.
type TokenByter interface {
	// TokenBytes returns the bytes of id; ok is false for unknown ids.
	TokenBytes(id int) (b []byte, ok bool)
	// IsSpecial reports whether id is a special token.
	IsSpecial(id int) bool
}

// StreamDecoder turns generated ids into text incrementally: Add returns
// only text whose UTF-8 characters are complete, holding back the bytes of a
// character split across tokens until the rest arrives. The concatenation
// of all Add results and Flush equals Decode of all ids.
type StreamDecoder struct {
	tok         TokenByter
	skipSpecial bool
	pending     []byte
}

// NewStreamDecoder returns a streaming decoder; skipSpecial leaves special
// tokens out as DecodeSkipSpecial does.
func NewStreamDecoder(tok TokenByter, skipSpecial bool) *StreamDecoder {
	return &StreamDecoder{tok: tok, skipSpecial: skipSpecial}
}

// Add appends the bytes of id and returns the text that became complete.
// Unknown ids are skipped.
func (d *StreamDecoder) Add(id int) string {
	b, ok := d.tok.TokenBytes(id)
	if !ok || (d.skipSpecial && d.tok.IsSpecial(id)) {
		return ""
	}
	d.pending = append(d.pending, b...)
	n := completeUTF8Prefix(d.pending)
	if n == 0 {
		return ""
	}
	s := lossyUTF8(d.pending[:n])
	d.pending = append(d.pending[:0], d.pending[n:]...)
	return s
}

// Flush returns what is left, with an unfinished character as U+FFFD, and
// resets the decoder.
func (d *StreamDecoder) Flush() string {
	s := lossyUTF8(d.pending)
	d.pending = d.pending[:0]
	return s
}

// Pending reports whether bytes of an unfinished character are held back.
func (d *StreamDecoder) Pending() bool { return len(d.pending) > 0 }

// TokenBytes returns the bytes of id: the byte itself or the special
// token's text.
func (t *Byte) TokenBytes(id int) ([]byte, bool) {
	switch {
	case id >= 0 && id < 256:
		return []byte{byte(id)}, true
	case id >= 256 && id < byteVocabSize:
		return []byte(byteSpecials[id-256]), true
	}
	return nil, false
}
