package sudoku

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"ragen/internal/pystr"
)

// Placement is a parsed action, 0-based.
type Placement struct {
	Row, Col, Num int
}

// Upstream's action patterns, tried in order on the lowercased, trimmed
// action; the first that matches anywhere wins. Python's \d and \s match
// Unicode decimal digits and whitespace, so the Go patterns spell those
// classes out.
var actionPatterns = func() []*regexp.Regexp {
	const d = `(\p{Nd}+)`
	const sp = `[\t\n\v\f\r\x{1c}-\x{1f}\x{85}\p{Z}]`
	pats := []string{
		`place` + sp + `+` + d + sp + `+at` + sp + `+row` + sp + `+` + d + sp + `+col` + sp + `+` + d,
		`place` + sp + `+` + d + sp + `+at` + sp + `+\(` + d + `,` + sp + `*` + d + `\)`,
		`place` + sp + `+` + d + sp + `+at` + sp + `+` + d + `,` + sp + `*` + d,
		d + sp + `+at` + sp + `+` + d + `,` + sp + `*` + d,
		`\(` + d + `,` + sp + `*` + d + `,` + sp + `*` + d + `\)`,
		d + `,` + sp + `*` + d + `,` + sp + `*` + d,
	}
	out := make([]*regexp.Regexp, len(pats))
	for i, p := range pats {
		out[i] = regexp.MustCompile(p)
	}
	return out
}()

// ParseAction reads an action for an n×n board. The three numbers are
// (number, row, column) when the action contains "place" or "at" anywhere,
// else (row, column, number); rows and columns are 1-based in the text.
// Errors carry upstream's messages.
func ParseAction(action string, n int) (Placement, error) {
	a := pystr.Lower(strings.TrimFunc(action, pystr.IsSpace))
	var m []string
	for _, re := range actionPatterns {
		if m = re.FindStringSubmatch(a); m != nil {
			break
		}
	}
	if m == nil {
		return Placement{}, fmt.Errorf("Could not parse action: '%s'. Expected format: 'place 5 at row 2 col 3' or '2,3,5'", a)
	}
	num, row, col := m[1], m[2], m[3]
	if !strings.Contains(a, "place") && !strings.Contains(a, "at") {
		row, col, num = m[1], m[2], m[3]
	}
	r, rs := number(row)
	c, cs := number(col)
	v, vs := number(num)
	if r < 1 || r > n {
		return Placement{}, fmt.Errorf("Row %s is out of range (1-%d)", rs, n)
	}
	if c < 1 || c > n {
		return Placement{}, fmt.Errorf("Column %s is out of range (1-%d)", cs, n)
	}
	if v < 1 || v > n {
		return Placement{}, fmt.Errorf("Number %s is out of range (1-%d)", vs, n)
	}
	return Placement{Row: r - 1, Col: c - 1, Num: v}, nil
}

// number converts a run of decimal digits (any Unicode Nd digits, as
// Python's int() accepts) and also returns its canonical decimal text;
// values too large for an int come back as -1 (out of every range).
func number(digits string) (int, string) {
	var b strings.Builder
	for _, r := range digits {
		b.WriteByte(byte('0' + digitValue(r)))
	}
	s := strings.TrimLeft(b.String(), "0")
	if s == "" {
		s = "0"
	}
	if len(s) > 9 {
		return -1, s
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return -1, s
	}
	return v, s
}

// digitValue is the value of a Unicode decimal digit: Nd characters come
// in runs of whole 0..9 sequences, so it is the offset from the run's
// start modulo 10.
func digitValue(r rune) int {
	if r >= '0' && r <= '9' {
		return int(r - '0')
	}
	start := r
	for start > 0 && unicode.Is(unicode.Nd, start-1) {
		start--
	}
	return int(r-start) % 10
}
