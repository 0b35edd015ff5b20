package countdown

import (
	"fmt"
	"sort"
	"strconv"

	"ragen/env"
)

// rat is an exact rational with a positive denominator, small enough for
// int64 arithmetic on Countdown-sized numbers (checked on every operation).
type rat struct{ n, d int64 }

func gcd(a, b int64) int64 {
	if a < 0 {
		a = -a
	}
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

const ratLimit = 1 << 40

func mkRat(n, d int64) (rat, bool) {
	if d == 0 {
		return rat{}, false
	}
	if d < 0 {
		n, d = -n, -d
	}
	g := gcd(n, d)
	if g > 1 {
		n, d = n/g, d/g
	}
	if n > ratLimit || n < -ratLimit || d > ratLimit {
		return rat{}, false
	}
	return rat{n, d}, true
}

type term struct {
	v    rat
	expr string
	atom bool // a bare number: needs no parentheses
}

func (t term) paren() string {
	if t.atom {
		return t.expr
	}
	return "(" + t.expr + ")"
}

// combine returns every way to join two terms with + − × ÷ (exact
// division, no division by zero), in a fixed order.
func combine(a, b term) []term {
	var out []term
	add := func(n, d int64, expr string) {
		if r, ok := mkRat(n, d); ok {
			out = append(out, term{v: r, expr: expr})
		}
	}
	x, y := a.v, b.v
	add(x.n*y.d+y.n*x.d, x.d*y.d, a.paren()+" + "+b.paren())
	add(x.n*y.d-y.n*x.d, x.d*y.d, a.paren()+" - "+b.paren())
	add(y.n*x.d-x.n*y.d, x.d*y.d, b.paren()+" - "+a.paren())
	add(x.n*y.n, x.d*y.d, a.paren()+" * "+b.paren())
	if y.n != 0 {
		add(x.n*y.d, x.d*y.n, a.paren()+" / "+b.paren())
	}
	if x.n != 0 {
		add(y.n*x.d, y.d*x.n, b.paren()+" / "+a.paren())
	}
	return out
}

// search combines terms pairwise until one is left, calling visit on every
// final term; visit returns false to stop.
func search(ts []term, visit func(term) bool) bool {
	if len(ts) == 1 {
		return visit(ts[0])
	}
	for i := 0; i < len(ts); i++ {
		for j := i + 1; j < len(ts); j++ {
			rest := make([]term, 0, len(ts)-1)
			for k := range ts {
				if k != i && k != j {
					rest = append(rest, ts[k])
				}
			}
			for _, c := range combine(ts[i], ts[j]) {
				if !search(append(rest, c), visit) {
					return false
				}
			}
		}
	}
	return true
}

func atoms(nums []int) []term {
	ts := make([]term, len(nums))
	for i, n := range nums {
		ts[i] = term{v: rat{int64(n), 1}, expr: strconv.Itoa(n), atom: true}
	}
	return ts
}

// Solve finds an expression that uses every number of nums exactly once
// with + − * / and parentheses and equals target exactly. The expression
// evaluates to target under Evaluate (up to float rounding when it
// divides) and passes FormatOK.
func Solve(nums []int, target int) (string, bool) {
	if len(nums) == 0 || len(nums) > 6 {
		return "", false
	}
	var found string
	search(atoms(nums), func(t term) bool {
		if t.v.d == 1 && t.v.n == int64(target) {
			found = t.expr
			return false
		}
		return true
	})
	return found, found != ""
}

// Reachable lists the positive integer targets up to maxTarget that some
// expression over all of nums reaches, ascending.
func Reachable(nums []int, maxTarget int) []int {
	seen := map[int64]bool{}
	search(atoms(nums), func(t term) bool {
		if t.v.d == 1 && t.v.n >= 1 && t.v.n <= int64(maxTarget) {
			seen[t.v.n] = true
		}
		return true
	})
	out := make([]int, 0, len(seen))
	for v := range seen {
		out = append(out, int(v))
	}
	sort.Ints(out)
	return out
}

// Generator settings (ours; upstream only loads Countdown-Tasks-3to4).
const (
	genMinNums   = 3
	genMaxNums   = 4
	genMaxNumber = 99  // numbers are drawn from 1..genMaxNumber
	genMaxTarget = 100 // targets from the reachable ones in 1..genMaxTarget
)

// GenerateTask draws a solvable puzzle in the style of Countdown-Tasks-3to4
// from rng: 3 or 4 numbers in 1..99, then a target drawn uniformly from the
// integers in 1..100 that the numbers reach using each exactly once. It
// redraws the numbers when none is reachable (rare).
func GenerateTask(rng env.Rand) (Task, error) {
	for attempt := 0; attempt < 1000; attempt++ {
		k := genMinNums + rng.Intn(genMaxNums-genMinNums+1)
		nums := make([]int, k)
		for i := range nums {
			nums[i] = 1 + rng.Intn(genMaxNumber)
		}
		r := Reachable(nums, genMaxTarget)
		if len(r) == 0 {
			continue
		}
		return Task{Target: r[rng.Intn(len(r))], Nums: nums}, nil
	}
	return Task{}, fmt.Errorf("countdown: no solvable puzzle in 1000 draws")
}
