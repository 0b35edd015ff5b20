package pyrand

import (
	"math"
	"reflect"
	"testing"
)

// Seeds the envs can receive beyond the spec's checks (negative, multi-word
// and extreme int64 values), against CPython 3.11:
//
//	r = random.Random(s); r.random(); r.getrandbits(32)
//	[r.randrange(n) for n in (1, 2, 3, 7, 10, 81, 1000, 2**31+5)]
//	l = list(range(10)); r.shuffle(l)
func TestRandomMatchesCPythonExtraSeeds(t *testing.T) {
	tests := []struct {
		seed    int64
		random  float64
		bits    uint64
		below   []int
		shuffle []int
	}{
		{-3, 0.23796462709189137, 2337446730, []int{0, 1, 2, 3, 9, 8, 620, 56556069}, []int{2, 0, 6, 8, 9, 5, 1, 3, 4, 7}},
		{1 << 32, 0.11299430095636409, 1794561286, []int{0, 0, 2, 6, 5, 69, 462, 60122280}, []int{0, 7, 8, 3, 5, 9, 4, 6, 1, 2}},
		{1<<40 + 7, 0.6137037779936511, 3500038837, []int{0, 1, 2, 1, 8, 48, 533, 1559734921}, []int{4, 0, 5, 3, 1, 2, 9, 8, 7, 6}},
		{math.MaxInt64, 0.3166448820870279, 2711238091, []int{0, 1, 1, 0, 7, 75, 282, 713180873}, []int{2, 4, 6, 3, 9, 7, 0, 8, 1, 5}},
		{math.MinInt64, 0.5534639983914199, 4039908392, []int{0, 0, 2, 0, 5, 42, 515, 1310961893}, []int{1, 4, 9, 2, 6, 5, 0, 8, 3, 7}},
		{123456789, 0.6414006161858726, 2328685183, []int{0, 1, 2, 3, 6, 68, 359, 1716282390}, []int{1, 6, 9, 2, 0, 4, 5, 3, 8, 7}},
	}
	for _, tc := range tests {
		r := NewRandom(tc.seed)
		if got := r.Random(); got != tc.random {
			t.Errorf("seed %d: random() = %v, want %v", tc.seed, got, tc.random)
		}
		if got := r.GetRandBits(32); got != tc.bits {
			t.Errorf("seed %d: getrandbits(32) = %d, want %d", tc.seed, got, tc.bits)
		}
		var below []int
		for _, n := range []int{1, 2, 3, 7, 10, 81, 1000, 1<<31 + 5} {
			below = append(below, r.RandBelow(n))
		}
		if !reflect.DeepEqual(below, tc.below) {
			t.Errorf("seed %d: randrange = %v, want %v", tc.seed, below, tc.below)
		}
		l := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
		ShuffleSlice(r, l)
		if !reflect.DeepEqual(l, tc.shuffle) {
			t.Errorf("seed %d: shuffle = %v, want %v", tc.seed, l, tc.shuffle)
		}
	}
}
