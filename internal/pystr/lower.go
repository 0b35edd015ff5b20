// Package pystr holds Python string semantics that envs reproduce exactly.
package pystr

import (
	"strings"
	"unicode"
)

// Lower is Python's str.lower(): the simple lowercase mapping of every
// character (strings.ToLower), except that U+0130 (İ) becomes "i̇"
// (i + U+0307, its full mapping) and a capital sigma in Final_Sigma
// position — after a cased letter, not before one (case-ignorable
// characters skipped) — becomes ς instead of σ.
func Lower(s string) string {
	if !strings.ContainsAny(s, "\u0130\u03a3") {
		return strings.ToLower(s)
	}
	rs := []rune(s)
	var b strings.Builder
	for i, r := range rs {
		switch r {
		case '\u0130':
			b.WriteString("i\u0307")
		case '\u03a3':
			if finalSigma(rs, i) {
				b.WriteRune('\u03c2')
			} else {
				b.WriteRune('\u03c3')
			}
		default:
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// finalSigma is CPython's handle_capital_sigma test:
// \p{cased}\p{case-ignorable}* Σ !(\p{case-ignorable}* \p{cased}).
func finalSigma(rs []rune, i int) bool {
	j := i - 1
	for j >= 0 && caseIgnorable(rs[j]) {
		j--
	}
	if j < 0 || !cased(rs[j]) {
		return false
	}
	j = i + 1
	for j < len(rs) && caseIgnorable(rs[j]) {
		j++
	}
	return j == len(rs) || !cased(rs[j])
}

func cased(r rune) bool {
	return unicode.In(r, unicode.Lu, unicode.Ll, unicode.Lt, unicode.Other_Lowercase, unicode.Other_Uppercase)
}

// caseIgnorable is Unicode's Case_Ignorable: Mn, Me, Cf, Lm, Sk and the
// Word_Break classes MidLetter, MidNumLet and Single_Quote.
func caseIgnorable(r rune) bool {
	switch r {
	case '\'', '.', ':', '\u00b7', '\u0387', '\u055f', '\u05f4', '\u2018', '\u2019', '\u2024',
		'\u2027', '\ufe13', '\ufe52', '\ufe55', '\uff07', '\uff0e', '\uff1a':
		return true
	}
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk)
}
