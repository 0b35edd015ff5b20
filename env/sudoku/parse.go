package sudoku

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Placement is a parsed action, 0-based.
type Placement struct {
	Row, Col, Num int
}

// Upstream's action patterns, tried in order on the lowercased, trimmed
// action; the first that matches anywhere wins.
var actionPatterns = []*regexp.Regexp{
	regexp.MustCompile(`place\s+(\d+)\s+at\s+row\s+(\d+)\s+col\s+(\d+)`),
	regexp.MustCompile(`place\s+(\d+)\s+at\s+\((\d+),\s*(\d+)\)`),
	regexp.MustCompile(`place\s+(\d+)\s+at\s+(\d+),\s*(\d+)`),
	regexp.MustCompile(`(\d+)\s+at\s+(\d+),\s*(\d+)`),
	regexp.MustCompile(`\((\d+),\s*(\d+),\s*(\d+)\)`),
	regexp.MustCompile(`(\d+),\s*(\d+),\s*(\d+)`),
}

// ParseAction reads an action for an n×n board. The three numbers are
// (number, row, column) when the action contains "place" or "at" anywhere,
// else (row, column, number); rows and columns are 1-based in the text.
// Errors carry upstream's messages.
func ParseAction(action string, n int) (Placement, error) {
	a := strings.ToLower(strings.TrimSpace(action))
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

// number converts a run of ASCII digits the way Python's int() does and
// also returns its decimal text; values too large for an int come back as
// -1 (out of every range) with their full text.
func number(digits string) (int, string) {
	s := strings.TrimLeft(digits, "0")
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
