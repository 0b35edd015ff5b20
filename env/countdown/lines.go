package countdown

import (
	"errors"
	"strings"
)

// logicalLine returns the text CPython's eval(expr) parses as its one
// logical line, or the error eval would raise for the line structure
// alone. eval strips leading spaces and tabs; the tokenizer turns "\r\n"
// and "\r" into "\n", drops comments ("#" to the end of the line), joins
// lines ending in a backslash, treats newlines inside parentheses as
// spaces and skips blank lines (only spaces, tabs, form feeds or a
// comment). The first non-blank line must not be indented
// (IndentationError), no second one may follow (SyntaxError), and a last
// line of only indentation without a newline counts as indented.
//
// Examples (upstream's eval): "\n3" → "3"; "3 # c" → "3"; "(3\n+4)" →
// "(3 +4)"; "\n 3" and "3\n " → error; "3\n4" → error.
func logicalLine(expr string) (string, error) {
	s := strings.TrimLeft(expr, " \t")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	var out strings.Builder
	depth := 0
	atLineStart := true
	emitted := false // a non-blank line at depth 0 has started
	for i := 0; i < len(s); {
		if atLineStart && depth == 0 {
			// Indentation of a new physical line.
			col := 0
			j := i
			for j < len(s) && (s[j] == ' ' || s[j] == '\t' || s[j] == '\f') {
				if s[j] == '\f' {
					col = 0
				} else {
					col++
				}
				j++
			}
			switch {
			case j < len(s) && (s[j] == '\n' || s[j] == '#'):
				// Blank line: skip it, comment included.
				for j < len(s) && s[j] != '\n' {
					j++
				}
				i = j + 1
				continue
			case j == len(s) && col == 0:
				i = j
				continue
			case col > 0:
				return "", errors.New("countdown: IndentationError: unexpected indent")
			case emitted:
				return "", errors.New("countdown: SyntaxError: more than one line")
			}
			emitted = true
			atLineStart = false
			i = j
			continue
		}
		c := s[i]
		switch {
		case c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '\\' && i+1 < len(s) && s[i+1] == '\n':
			i += 2 // explicit line joining
		case c == '\n':
			i++
			if depth > 0 {
				out.WriteByte(' ')
			} else {
				atLineStart = true
			}
		default:
			switch c {
			case '(', '[', '{':
				depth++
			case ')', ']', '}':
				if depth > 0 {
					depth--
				}
			}
			out.WriteByte(c)
			i++
		}
	}
	return out.String(), nil
}
