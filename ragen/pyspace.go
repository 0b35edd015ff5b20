package ragen

import "unicode"

// pyZ reports the Unicode whitespace Python's str.isspace accepts beyond
// ASCII: category Zs plus the line and paragraph separators.
func pyZ(r rune) bool {
	return r > 0x7f && (unicode.Is(unicode.Zs, r) || r == 0x2028 || r == 0x2029)
}
