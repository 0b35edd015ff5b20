package countdown

import (
	"math"
	"math/big"
	"slices"
	"unicode"
)

// Upstream's constants (not part of env_config).
const (
	CorrectScore = 1   // int
	FormatScore  = 0.1 // float
)

// Task is one puzzle: reach Target with Nums.
type Task struct {
	Target int   `json:"target"`
	Nums   []int `json:"nums"`
}

// NumbersIn returns the integers of every maximal run of decimal digits in
// s, as Python's re.findall(r"\d+", s) followed by int() sees them: Unicode
// decimal digits (category Nd) count too. Runs too long for an int64 come
// back as ok=false.
func NumbersIn(s string) (nums []int64, ok bool) {
	ok = true
	inRun := false
	var cur int64
	overflow := false
	flush := func() {
		if inRun {
			if overflow {
				ok = false
			} else {
				nums = append(nums, cur)
			}
		}
		inRun, cur, overflow = false, 0, false
	}
	for _, r := range s {
		d, isD := digitValue(r)
		if !isD {
			flush()
			continue
		}
		inRun = true
		if cur > (math.MaxInt64-int64(d))/10 {
			overflow = true
		} else if !overflow {
			cur = cur*10 + int64(d)
		}
	}
	flush()
	return nums, ok
}

// digitValue returns the value of a Unicode decimal digit. Every Nd range
// is a run of complete 0..9 sequences, so the value is the offset from the
// start of the run modulo 10.
func digitValue(r rune) (int, bool) {
	if r >= '0' && r <= '9' {
		return int(r - '0'), true
	}
	if r < 0x80 || !unicode.Is(unicode.Nd, r) {
		return 0, false
	}
	start := r
	for start > 0 && unicode.Is(unicode.Nd, start-1) {
		start--
	}
	return int(r-start) % 10, true
}

// FormatOK reports upstream's format check: the multiset of numbers in
// expr equals the multiset of nums.
func FormatOK(expr string, nums []int) bool {
	got, ok := NumbersIn(expr)
	if !ok || len(got) != len(nums) {
		return false
	}
	want := make([]int64, len(nums))
	for i, n := range nums {
		want[i] = int64(n)
	}
	slices.Sort(got)
	slices.Sort(want)
	return slices.Equal(got, want)
}

// Score is upstream's compute_score: 0 (an int) when the numbers used are
// not exactly nums, 0.1 when they are but the expression fails to evaluate
// or misses the target, 1 (an int) when |value − target| < 1e-5. isInt
// tells whether upstream's reward is a Python int.
func Score(expr string, t Task) (reward float64, isInt bool) {
	if !FormatOK(expr, t.Nums) {
		return 0, true
	}
	v, err := Evaluate(expr)
	if err != nil {
		return FormatScore, false
	}
	if Hits(v, t.Target) {
		return CorrectScore, true
	}
	return FormatScore, false
}

// Hits reports abs(v − target) < 1e-5 with Python's mixed int/float
// arithmetic: exact for ints, in floating point otherwise.
func Hits(v Value, target int) bool {
	if v.IsInt {
		return v.Int.Cmp(big.NewInt(int64(target))) == 0
	}
	return math.Abs(v.Float-float64(target)) < 1e-5
}

// signSolvable is upstream's data filter: some ± assignment of the first
// four numbers (zero-padded to four) sums to the target.
func signSolvable(t Task) bool {
	var n [4]int
	copy(n[:], t.Nums)
	for mask := 0; mask < 16; mask++ {
		s := 0
		for i := 0; i < 4; i++ {
			if mask&(1<<i) != 0 {
				s -= n[i]
			} else {
				s += n[i]
			}
		}
		if s == t.Target {
			return true
		}
	}
	return false
}
