package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// lossyUTF8 converts b to a string, replacing every maximal invalid
// subsequence by U+FFFD exactly as Rust's String::from_utf8_lossy does (the
// Hugging Face decoders use it): a truncated but otherwise valid prefix of a
// multi-byte sequence yields one U+FFFD, and each other invalid byte yields
// one.
func lossyUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + 8)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r != utf8.RuneError || n > 1 {
			sb.Write(b[:n])
			b = b[n:]
			continue
		}
		sb.WriteRune(utf8.RuneError)
		b = b[invalidPrefixLen(b):]
	}
	return sb.String()
}

// invalidPrefixLen returns the length (≥ 1) of the maximal prefix of b that
// could start a valid UTF-8 sequence but does not complete one. b must start
// with an invalid or truncated sequence.
func invalidPrefixLen(b []byte) int {
	c := b[0]
	var need int
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
		need = 2
	case c == 0xED:
		need, hi = 2, 0x9F
	case c == 0xF0:
		need, lo = 3, 0x90
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	case c == 0xF4:
		need, hi = 3, 0x8F
	default:
		return 1
	}
	n := 1
	for i := 0; i < need && n < len(b); i++ {
		x := b[n]
		if i == 0 {
			if x < lo || x > hi {
				return n
			}
		} else if x < 0x80 || x > 0xBF {
			return n
		}
		n++
	}
	return n
}

// completeUTF8Prefix returns the length of the longest prefix of b that does
// not end inside a multi-byte character that could still be completed by
// more bytes. Invalid bytes count as complete (they decode to U+FFFD).
func completeUTF8Prefix(b []byte) int {
	// Look back at most 3 bytes for the start of an unfinished sequence.
	for back := 1; back <= 3 && back <= len(b); back++ {
		i := len(b) - back
		c := b[i]
		if c < 0x80 {
			return len(b)
		}
		if c >= 0xC0 {
			// Lead byte: is b[i:] a proper prefix of a valid sequence?
			tail := b[i:]
			if !utf8.FullRune(tail) && invalidPrefixLen(tail) == len(tail) {
				return i
			}
			return len(b)
		}
	}
	return len(b)
}
