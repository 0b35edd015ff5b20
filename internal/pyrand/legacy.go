package pyrand

import (
	"fmt"
	"sort"
)

// Legacy is NumPy's legacy RandomState (the np.random.* global functions):
// MT19937 seeded with init_genrand, 53-bit doubles, and bounded integers by
// masked rejection on 32-bit outputs.
type Legacy struct {
	m mt19937
}

// NewLegacy returns a generator seeded like np.random.seed(seed). NumPy
// accepts seeds in [0, 2^32); others are an error.
func NewLegacy(seed int64) (*Legacy, error) {
	l := &Legacy{}
	if err := l.Seed(seed); err != nil {
		return nil, err
	}
	return l, nil
}

// Seed re-seeds like np.random.seed(seed) (MT19937 init_genrand).
func (l *Legacy) Seed(seed int64) error {
	if seed < 0 || seed > 0xFFFFFFFF {
		return fmt.Errorf("pyrand: legacy seed %d: seed must be between 0 and 2**32 - 1", seed)
	}
	l.m.initGenrand(uint32(seed))
	return nil
}

// Uint32 returns the next raw 32-bit MT output.
func (l *Legacy) Uint32() uint32 { return l.m.uint32() }

// Rand is np.random.rand() / random_sample(): a 53-bit double in [0, 1).
func (l *Legacy) Rand() float64 { return l.m.res53() }

// Float64 is Rand (env.Rand).
func (l *Legacy) Float64() float64 { return l.m.res53() }

// interval draws a value in [0, max] by masked rejection (NumPy's
// random_interval and buffered_bounded_masked_uint32): no draw when max is 0.
func (l *Legacy) interval(max uint64) uint64 {
	if max == 0 {
		return 0
	}
	mask := maskFor(max)
	if max <= 0xFFFFFFFF {
		for {
			v := uint64(l.m.uint32()) & mask
			if v <= max {
				return v
			}
		}
	}
	for {
		v := (uint64(l.m.uint32())<<32 | uint64(l.m.uint32())) & mask
		if v <= max {
			return v
		}
	}
}

// RandIntN is np.random.randint(n): uniform in [0, n) by masked rejection
// with mask = smallest 2^k-1 >= n-1 (no draw when n == 1). Panics for n <= 0.
func (l *Legacy) RandIntN(n int) int {
	if n <= 0 {
		panic(fmt.Sprintf("pyrand: RandIntN(%d): high <= low", n))
	}
	return int(l.interval(uint64(n - 1)))
}

// Intn is RandIntN (env.Rand).
func (l *Legacy) Intn(n int) int { return l.RandIntN(n) }

// RandInt is np.random.randint(low, high): uniform in [low, high).
func (l *Legacy) RandInt(low, high int) int {
	if high <= low {
		panic(fmt.Sprintf("pyrand: RandInt(%d, %d): low >= high", low, high))
	}
	return low + int(l.interval(uint64(high-low-1)))
}

// Uniform is np.random.uniform(low, high) = low + (high-low)*random_sample().
func (l *Legacy) Uniform(low, high float64) float64 { return low + (high-low)*l.m.res53() }

// Shuffle is np.random.shuffle over n elements: for i = n-1 down to 1,
// j = random_interval(i) (masked rejection), swap(i, j).
func (l *Legacy) Shuffle(n int, swap func(i, j int)) {
	for i := n - 1; i > 0; i-- {
		j := int(l.interval(uint64(i)))
		swap(i, j)
	}
}

// Permutation is np.random.permutation(n): arange(n) shuffled.
func (l *Legacy) Permutation(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	l.Shuffle(n, func(i, j int) { p[i], p[j] = p[j], p[i] })
	return p
}

// ChoiceP is np.random.choice(len(p), p=p) for one sample: the cdf is the
// running sum of p divided by its last element, and the result is the
// searchsorted(side="right") position of one random_sample() draw.
func (l *Legacy) ChoiceP(p []float64) (int, error) {
	cdf, err := cdfOf(p)
	if err != nil {
		return 0, err
	}
	return searchRight(cdf, l.m.res53()), nil
}

// cdfOf validates probabilities the way NumPy's choice does and returns
// cumsum(p)/cumsum(p)[-1].
func cdfOf(p []float64) ([]float64, error) {
	if len(p) == 0 {
		return nil, fmt.Errorf("pyrand: choice: a cannot be empty unless no samples are taken")
	}
	cdf := make([]float64, len(p))
	s := 0.0
	for i, v := range p {
		if !(v >= 0) {
			return nil, fmt.Errorf("pyrand: choice: probabilities are not non-negative (p[%d]=%v)", i, v)
		}
		s += v
		cdf[i] = s
	}
	// NumPy checks |sum-1| <= sqrt(eps) with a Kahan sum; a plain sum is
	// equivalent at the tolerance used (1.49e-8).
	if d := s - 1; d > 1.4901161193847656e-08 || d < -1.4901161193847656e-08 {
		return nil, fmt.Errorf("pyrand: choice: probabilities do not sum to 1 (sum=%v)", s)
	}
	last := cdf[len(cdf)-1]
	for i := range cdf {
		cdf[i] /= last
	}
	return cdf, nil
}

// searchRight is numpy.searchsorted(cdf, u, side="right").
func searchRight(cdf []float64, u float64) int {
	return sort.Search(len(cdf), func(i int) bool { return cdf[i] > u })
}

// LegacyChoice is np.random.choice(s) for one element: s[randint(len(s))].
func LegacyChoice[T any](l *Legacy, s []T) T {
	return s[l.RandIntN(len(s))]
}
