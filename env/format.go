package env

import (
	"math"
	"strconv"

	"ragen/internal/pystr"
)

// FormatReward prints a turn reward the way upstream's str() does
// (envs.md §0.3). When every summand was a Python int (allInt; also the
// case for a turn with no executed action) the sum prints as an integer
// ("0", "1", "-3"); otherwise as Python's repr(float): the shortest
// round-trip digits, always with a "." or an exponent ("1.0", "-0.1",
// "10.9", "-0.30000000000000004"), in scientific form when the decimal
// exponent is < -4 or >= 16 ("1e-05", "1e+16").
func FormatReward(sum float64, allInt bool) string {
	if allInt && sum == math.Trunc(sum) && math.Abs(sum) < 1<<63 {
		return strconv.FormatInt(int64(sum), 10)
	}
	return PyFloatRepr(sum)
}

// PyFloatRepr is Python's repr(float): shortest round-trip digits, an
// exponent below 1e-4 and from 1e16 on, nan, inf and -inf.
func PyFloatRepr(x float64) string { return pystr.FloatRepr(x) }
