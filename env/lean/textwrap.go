package lean

import (
	"strings"
	"unicode"

	"ragen/internal/pystr"
)

// textWrap is Python's textwrap.wrap(text, width) with its defaults: tabs
// expanded, each ASCII whitespace character a space, the text split into
// chunks as textwrap's wordsep_re splits it (runs of spaces, words, the
// pieces of hyphenated words, em-dashes), chunks packed into lines, and a
// chunk longer than width split, after its last hyphen that fits when one
// does. As Python tests chunk.strip() == "", a chunk of any Unicode
// whitespace (a no-break space between spaces) is dropped at a line's
// start or end.
func textWrap(text string, width int) []string {
	chunks := wordChunks(expandText(text))
	var lines []string
	rlen := func(s string) int { return len([]rune(s)) }
	for len(chunks) > 0 {
		var cur []string
		n := 0
		if pystr.Strip(chunks[0]) == "" && len(lines) > 0 {
			chunks = chunks[1:]
		}
		for len(chunks) > 0 && n+rlen(chunks[0]) <= width {
			n += rlen(chunks[0])
			cur = append(cur, chunks[0])
			chunks = chunks[1:]
		}
		if len(chunks) > 0 && rlen(chunks[0]) > width {
			r := []rune(chunks[0])
			end := width - n // 0 appends "" and leaves the word for the next line
			// after the last hyphen that fits, if a non-hyphen precedes it
			for h := end - 1; h > 0; h-- {
				if r[h] == '-' {
					if strings.Trim(string(r[:h]), "-") != "" {
						end = h + 1
					}
					break
				}
			}
			cur = append(cur, string(r[:end]))
			chunks[0] = string(r[end:])
		}
		if len(cur) > 0 && pystr.Strip(cur[len(cur)-1]) == "" {
			cur = cur[:len(cur)-1]
		}
		if len(cur) > 0 {
			lines = append(lines, strings.Join(cur, ""))
		}
	}
	return lines
}

// expandText is str.expandtabs() and then each of textwrap's whitespace
// characters (\t\n\v\f\r and space) a space.
func expandText(text string) []rune {
	var out []rune
	col := 0
	for _, r := range text {
		switch {
		case r == '\t':
			for n := 8 - col%8; n > 0; n-- {
				out = append(out, ' ')
			}
			col += 8 - col%8
		case r == '\n' || r == '\r':
			out = append(out, ' ')
			col = 0
		case r == '\v' || r == '\f':
			out = append(out, ' ')
			col++
		default:
			out = append(out, r)
			col++
		}
	}
	return out
}

// The character classes of wordsep_re beside \w (pystr.IsWord): a letter
// is \w but not \d, word_punct adds !"'&.,? to \w.
func isLetter(r rune) bool { return pystr.IsWord(r) && !unicode.IsDigit(r) }
func isWordPunct(r rune) bool {
	return pystr.IsWord(r) || strings.ContainsRune(`!"'&.,?`, r)
}

// wordChunks splits expanded text as textwrap's wordsep_re.split does:
//
//	( \s+                                      # whitespace
//	| (?<=wp) -{2,} (?=\w)                     # em-dash between words
//	| \S+? ( -(?:(?<=lt{2}-)|(?<=lt-lt-))(?=lt-?lt)   # hyphenated word
//	       | (?=\s|\Z)                         # end of word
//	       | (?<=wp) (?=-{2,}\w) ) )           # before an em-dash
//
// (\s being the space alone once the text is expanded), trying the
// alternatives in order at each position and the shortest word first.
func wordChunks(rs []rune) []string {
	n := len(rs)
	at := func(i int) rune {
		if i < 0 || i >= n {
			return -1
		}
		return rs[i]
	}
	letter := func(i int) bool { return i >= 0 && i < n && isLetter(rs[i]) }
	dashes := func(i int) int { // the hyphens from i
		j := i
		for j < n && rs[j] == '-' {
			j++
		}
		return j - i
	}
	emDash := func(i int) bool { // -{2,}\w at i, after a word_punct character
		k := dashes(i)
		return i > 0 && isWordPunct(rs[i-1]) && k >= 2 && i+k < n && pystr.IsWord(rs[i+k])
	}
	var out []string
	for p := 0; p < n; {
		e := p + 1
		switch {
		case rs[p] == ' ':
			for e < n && rs[e] == ' ' {
				e++
			}
		case emDash(p):
			e = p + dashes(p)
		default:
			for {
				if at(e) == '-' && (letter(e-2) && letter(e-1) || letter(e-3) && at(e-2) == '-' && letter(e-1)) &&
					letter(e+1) && (letter(e+2) || at(e+2) == '-' && letter(e+3)) {
					e++ // the hyphen ends the chunk
					break
				}
				if e == n || rs[e] == ' ' || emDash(e) {
					break
				}
				e++
			}
		}
		out = append(out, string(rs[p:e]))
		p = e
	}
	return out
}
