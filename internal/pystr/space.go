package pystr

import (
	"strings"
	"unicode"
)

// IsSpace is Python's str.isspace for one character, which is also what
// re's \s matches in str patterns: Unicode White_Space plus the
// separators U+001C–U+001F.
func IsSpace(r rune) bool { return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f }

// Strip is Python's str.strip() without arguments.
func Strip(s string) string { return strings.TrimFunc(s, IsSpace) }

// IsWord is what re's \w matches in str patterns: characters for which
// str.isalnum() is true (Unicode letters and numbers), and the underscore.
func IsWord(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) }
