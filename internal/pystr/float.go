package pystr

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ParseFloat is Python's float(str): decimal digits with an optional
// fraction and exponent, '_' only between two digits, no hex; out-of-range
// values become ±inf or 0 as in Python. As in Python, any Unicode decimal
// digit (category Nd: "١٩٩٠", "１９９０") reads as its ASCII digit and any
// Unicode space as a space; other non-ASCII characters are refused.
func ParseFloat(s string) (float64, bool) {
	s, ok := asciiDecimal(s)
	if !ok {
		return 0, false
	}
	s = strings.TrimSpace(s)
	body := strings.TrimLeft(s, "+-")
	if len(s)-len(body) > 1 || body == "" {
		return 0, false
	}
	neg := strings.HasPrefix(s, "-")
	switch strings.ToLower(body) {
	case "nan":
		return math.NaN(), true
	case "inf", "infinity":
		if neg {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	}
	digit := func(i int) bool { return i >= 0 && i < len(body) && body[i] >= '0' && body[i] <= '9' }
	for i := 0; i < len(body); i++ {
		switch c := body[i]; {
		case c >= '0' && c <= '9', c == '.', c == 'e', c == 'E', c == '+', c == '-':
		case c == '_':
			if !digit(i-1) || !digit(i+1) {
				return 0, false
			}
		default:
			return 0, false
		}
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	return f, true
}

// asciiDecimal is CPython's _PyUnicode_TransformDecimalAndSpaceToASCII:
// Unicode spaces become ' ', decimal digits their ASCII digit; ok=false
// if anything else non-ASCII is left.
func asciiDecimal(s string) (string, bool) {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return s, true
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r < utf8.RuneSelf:
			b.WriteRune(r)
		case unicode.IsSpace(r):
			b.WriteByte(' ')
		default:
			d, ok := decimalValue(r)
			if !ok {
				return "", false
			}
			b.WriteByte('0' + d)
		}
	}
	return b.String(), true
}

// decimalValue is the value of a Unicode decimal digit (category Nd). Nd
// characters come in runs of ten, zero to nine (a Unicode stability
// policy), and unicode.Nd's ranges start at a zero, so the value is the
// offset into the range mod 10.
func decimalValue(r rune) (byte, bool) {
	for _, rg := range unicode.Nd.R16 {
		if r >= rune(rg.Lo) && r <= rune(rg.Hi) {
			return byte((r - rune(rg.Lo)) % 10), rg.Stride == 1
		}
	}
	for _, rg := range unicode.Nd.R32 {
		if r >= rune(rg.Lo) && r <= rune(rg.Hi) {
			return byte((r - rune(rg.Lo)) % 10), rg.Stride == 1
		}
	}
	return 0, false
}

// FloatRepr is Python's repr(float).
func FloatRepr(x float64) string {
	switch {
	case math.IsNaN(x):
		return "nan"
	case math.IsInf(x, 1):
		return "inf"
	case math.IsInf(x, -1):
		return "-inf"
	}
	e := strconv.FormatFloat(x, 'e', -1, 64)
	i := strings.LastIndexByte(e, 'e')
	exp, _ := strconv.Atoi(e[i+1:])
	if exp < -4 || exp >= 16 {
		return e
	}
	f := strconv.FormatFloat(x, 'f', -1, 64)
	if !strings.ContainsRune(f, '.') {
		f += ".0"
	}
	return f
}
