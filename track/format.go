package track

import (
	"math"
	"sort"
	"strconv"
	"strings"
)

// PyFloat formats v the way Python's repr(float) does, which is what veRL's
// console logger prints (pprint.pformat of a float): the shortest digits that
// round-trip, fixed notation with a trailing ".0" for integral values when
// the decimal exponent is in [-4, 16), scientific notation with a signed
// two-digit exponent otherwise ("1e-05", "1.5e+16"), and "nan", "inf",
// "-inf".
func PyFloat(v float64) string {
	return string(appendPyFloat(nil, v))
}

func appendPyFloat(b []byte, v float64) []byte {
	switch {
	case math.IsNaN(v):
		return append(b, "nan"...)
	case math.IsInf(v, 1):
		return append(b, "inf"...)
	case math.IsInf(v, -1):
		return append(b, "-inf"...)
	}
	var tmp [32]byte
	s := strconv.AppendFloat(tmp[:0], v, 'e', -1, 64) // "-1.2345e+06"
	if s[0] == '-' {
		b = append(b, '-')
		s = s[1:]
	}
	e := 0
	for i, c := range s {
		if c == 'e' {
			e = i
			break
		}
	}
	exp, _ := strconv.Atoi(string(s[e+1:]))
	mant := s[:e]
	// digits without the decimal point
	var dbuf [24]byte
	digits := append(dbuf[:0], mant[0])
	if len(mant) > 2 {
		digits = append(digits, mant[2:]...)
	}
	if exp >= -4 && exp < 16 {
		if exp >= 0 {
			if len(digits) <= exp+1 {
				b = append(b, digits...)
				for i := len(digits); i < exp+1; i++ {
					b = append(b, '0')
				}
				return append(b, ".0"...)
			}
			b = append(b, digits[:exp+1]...)
			b = append(b, '.')
			return append(b, digits[exp+1:]...)
		}
		b = append(b, "0."...)
		for i := 0; i < -exp-1; i++ {
			b = append(b, '0')
		}
		return append(b, digits...)
	}
	b = append(b, digits[0])
	if len(digits) > 1 {
		b = append(b, '.')
		b = append(b, digits[1:]...)
	}
	b = append(b, 'e')
	if exp < 0 {
		b = append(b, '-')
		exp = -exp
	} else {
		b = append(b, '+')
	}
	if exp < 10 {
		b = append(b, '0')
	}
	return strconv.AppendInt(b, int64(exp), 10)
}

// FormatStep renders one step the way veRL's console logger
// (concat_dict_to_str) does: "step:N - key:value - ...", values as Python's
// repr(float). Keys are sorted (veRL prints in dict insertion order, which a
// Go map does not have).
func FormatStep(step int, metrics map[string]float64) string {
	keys := sortedKeys(metrics)
	var sb strings.Builder
	sb.WriteString("step:")
	sb.WriteString(strconv.Itoa(step))
	var buf []byte
	for _, k := range keys {
		sb.WriteString(" - ")
		sb.WriteString(k)
		sb.WriteByte(':')
		buf = appendPyFloat(buf[:0], metrics[k])
		sb.Write(buf)
	}
	return sb.String()
}

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// formatNum is tqdm's format_num for postfix numbers: format(v, ".3g")
// with "+0"/"-0" shortened to "+"/"-", or Python's str(v) when that is not
// longer.
func formatNum(v float64) string {
	var f string
	switch {
	case math.IsNaN(v):
		f = "nan"
	case math.IsInf(v, 1):
		f = "inf"
	case math.IsInf(v, -1):
		f = "-inf"
	default:
		f = strconv.FormatFloat(v, 'g', 3, 64)
		f = strings.ReplaceAll(strings.ReplaceAll(f, "+0", "+"), "-0", "-")
	}
	if n := PyFloat(v); len(n) <= len(f) {
		return n
	}
	return f
}
