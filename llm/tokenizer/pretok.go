package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// Qwen2SplitPattern is the pre-tokenizer split regex of the Qwen2 family.
// Go's regexp cannot compile it (it uses the lookahead (?!\S)), so
// splitQwen2 implements it by hand with the same leftmost-first,
// backtracking semantics.
const Qwen2SplitPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// Llama3SplitPattern is the Llama-3 split regex: Qwen2's with digits in
// groups of up to three.
const Llama3SplitPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// Character classes of the pattern. \s is the Unicode White_Space set, which
// is what unicode.IsSpace implements (tab, \v, \f, U+0085, U+00A0, U+3000,
// U+2028 ... but not U+200B, U+180E, U+FEFF or U+001C-U+001F), matching the
// Rust regex engine the reference uses.
func isL(r rune) bool {
	return r < utf8.RuneSelf && (r|0x20 >= 'a' && r|0x20 <= 'z') || r >= utf8.RuneSelf && unicode.IsLetter(r)
}
func isN(r rune) bool  { return r >= '0' && r <= '9' || r >= utf8.RuneSelf && unicode.IsNumber(r) }
func isWS(r rune) bool { return unicode.IsSpace(r) }
func isNL(r rune) bool { return r == '\r' || r == '\n' }

// decodeAt decodes the rune at s[i:]; invalid bytes decode as U+FFFD of
// width 1 (NFC'd input from a Go string may hold them).
func decodeAt(s string, i int) (rune, int) {
	c := s[i]
	if c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

// splitQwen2 calls emit for each piece of s as the Qwen2 split regex with
// behavior Isolated cuts it: matches and the (never occurring, since the
// final \s+ and the other alternatives cover every rune) gaps between them.
func splitQwen2(s string, emit func(piece string)) { splitPattern(s, 1, emit) }

// splitPattern splits with the Qwen2 pattern (maxDigits 1) or the Llama-3
// pattern (maxDigits 3).
func splitPattern(s string, maxDigits int, emit func(piece string)) {
	for i := 0; i < len(s); {
		n := matchQwen2(s, i, maxDigits)
		emit(s[i : i+n])
		i += n
	}
}

// matchQwen2 returns the length (> 0) of the match of the Qwen2 pattern at
// s[i:]. Every rune starts some alternative, so there is always a match.
func matchQwen2(s string, i, maxDigits int) int {
	r, w := decodeAt(s, i)
	// (?i:'s|'t|'re|'ve|'m|'ll|'d): ASCII case-insensitive (the reference
	// does not fold U+017F ſ to s).
	if r == '\'' && i+1 < len(s) {
		c1 := s[i+1] | 0x20
		switch c1 {
		case 's', 't', 'm', 'd':
			return 2
		}
		if i+2 < len(s) {
			c2 := s[i+2] | 0x20
			if (c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l') {
				return 3
			}
		}
	}
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if isL(r) {
		return w + letterRun(s, i+w)
	}
	if !isNL(r) && !isN(r) && i+w < len(s) {
		if r2, _ := decodeAt(s, i+w); isL(r2) {
			return w + letterRun(s, i+w)
		}
	}
	// \p{N} (Qwen2) or \p{N}{1,3} (Llama-3)
	if isN(r) {
		n := w
		for k := 1; k < maxDigits && i+n < len(s); k++ {
			x, xw := decodeAt(s, i+n)
			if !isN(x) {
				break
			}
			n += xw
		}
		return n
	}
	// ' ?[^\s\p{L}\p{N}]+[\r\n]*'
	j := i
	if r == ' ' {
		j += 1
	}
	if j < len(s) {
		k := j
		for k < len(s) {
			x, xw := decodeAt(s, k)
			if isWS(x) || isL(x) || isN(x) {
				break
			}
			k += xw
		}
		if k > j {
			for k < len(s) && (s[k] == '\r' || s[k] == '\n') {
				k++
			}
			return k - i
		}
	}
	// The remaining alternatives start with whitespace.
	if !isWS(r) {
		// Unreachable: a rune is a letter, a number, whitespace or else
		// matched by the symbol alternative above. Keep the scanner total.
		return w
	}
	end := i // end of the whitespace run
	lastNL := -1
	prev := i // start of the last rune of the run
	for end < len(s) {
		x, xw := decodeAt(s, end)
		if !isWS(x) {
			break
		}
		if isNL(x) {
			lastNL = end
		}
		prev = end
		end += xw
	}
	// \s*[\r\n]+ : up to and including the last CR/LF of the run.
	if lastNL >= 0 {
		return lastNL + 1 - i
	}
	// \s+(?!\S) : the whole run at end of text, else all but its last rune.
	if end == len(s) {
		return end - i
	}
	if prev > i {
		return prev - i
	}
	// \s+
	return end - i
}

func letterRun(s string, i int) int {
	j := i
	for j < len(s) {
		x, xw := decodeAt(s, j)
		if !isL(x) {
			break
		}
		j += xw
	}
	return j - i
}
