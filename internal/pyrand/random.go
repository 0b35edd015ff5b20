package pyrand

import (
	"fmt"
	"math/bits"
)

// Random is CPython's random.Random: MT19937 seeded through init_by_array.
// Method names follow Python's; Float64 and Intn are aliases of Random and
// RandBelow for the env.Rand interface.
type Random struct {
	m mt19937
}

// NewRandom returns a generator seeded like random.seed(seed) in CPython.
func NewRandom(seed int64) *Random {
	r := &Random{}
	r.Seed(seed)
	return r
}

// Seed re-seeds like CPython's random.seed(n) for an int n: the key is |n|
// as little-endian 32-bit words ([0] for 0), fed to init_by_array.
func (r *Random) Seed(seed int64) {
	u := uint64(seed)
	if seed < 0 {
		u = uint64(-seed) // two's complement also handles math.MinInt64
	}
	var key []uint32
	if u>>32 != 0 {
		key = []uint32{uint32(u), uint32(u >> 32)}
	} else {
		key = []uint32{uint32(u)}
	}
	r.m.initByArray(key)
}

// Uint32 returns the next raw 32-bit MT output.
func (r *Random) Uint32() uint32 { return r.m.uint32() }

// Random is random.random(): a double in [0, 1) with 53 random bits.
func (r *Random) Random() float64 { return r.m.res53() }

// Float64 is Random (env.Rand).
func (r *Random) Float64() float64 { return r.m.res53() }

// GetRandBits is random.getrandbits(k) for 0 <= k <= 64. For k <= 32 it is
// one output shifted right by 32-k; for larger k the low word is drawn
// first, as CPython fills its little-endian word array.
func (r *Random) GetRandBits(k int) uint64 {
	switch {
	case k <= 0:
		return 0
	case k <= 32:
		return uint64(r.m.uint32() >> (32 - k))
	case k <= 64:
		lo := uint64(r.m.uint32())
		hi := r.m.uint32() >> (64 - k)
		return lo | uint64(hi)<<32
	default:
		panic(fmt.Sprintf("pyrand: GetRandBits(%d): k must be <= 64", k))
	}
}

// RandBelow is random._randbelow(n): draw getrandbits(bitlen(n)) until the
// value is < n. It panics for n <= 0 (Python raises; a caller bug here).
func (r *Random) RandBelow(n int) int {
	if n <= 0 {
		panic(fmt.Sprintf("pyrand: RandBelow(%d): n must be positive", n))
	}
	k := bits.Len64(uint64(n))
	v := r.GetRandBits(k)
	for v >= uint64(n) {
		v = r.GetRandBits(k)
	}
	return int(v)
}

// Intn is RandBelow (env.Rand).
func (r *Random) Intn(n int) int { return r.RandBelow(n) }

// RandInt is random.randint(a, b): a + randbelow(b-a+1), both ends inclusive.
func (r *Random) RandInt(a, b int) int {
	if b < a {
		panic(fmt.Sprintf("pyrand: RandInt(%d, %d): empty range", a, b))
	}
	return a + r.RandBelow(b-a+1)
}

// RandRange is random.randrange(start, stop) with step 1.
func (r *Random) RandRange(start, stop int) int {
	if stop <= start {
		panic(fmt.Sprintf("pyrand: RandRange(%d, %d): empty range", start, stop))
	}
	return start + r.RandBelow(stop-start)
}

// Uniform is random.uniform(a, b) = a + (b-a)*random().
func (r *Random) Uniform(a, b float64) float64 { return a + (b-a)*r.Random() }

// Shuffle is random.shuffle over n elements: for i = n-1 down to 1,
// j = randbelow(i+1), swap(i, j).
func (r *Random) Shuffle(n int, swap func(i, j int)) {
	for i := n - 1; i > 0; i-- {
		j := r.RandBelow(i + 1)
		swap(i, j)
	}
}

// Sample is random.sample(range(n), k): k distinct indices in selection
// order, following CPython's two strategies (pool when n is small relative
// to k, set-based rejection otherwise).
func (r *Random) Sample(n, k int) ([]int, error) {
	if k < 0 || k > n {
		return nil, fmt.Errorf("pyrand: Sample: sample larger than population or is negative (n=%d, k=%d)", n, k)
	}
	result := make([]int, k)
	setsize := 21
	if k > 5 {
		// 4 ** _ceil(_log(k * 3, 4))
		e := 0
		for p := 1; p < k*3; p *= 4 {
			e++
		}
		// ceil(log4(3k)): smallest e with 4^e >= 3k
		s := 1
		for i := 0; i < e; i++ {
			s *= 4
		}
		setsize += s
	}
	if n <= setsize {
		pool := make([]int, n)
		for i := range pool {
			pool[i] = i
		}
		for i := 0; i < k; i++ {
			j := r.RandBelow(n - i)
			result[i] = pool[j]
			pool[j] = pool[n-i-1]
		}
		return result, nil
	}
	selected := make(map[int]struct{}, k)
	for i := 0; i < k; i++ {
		j := r.RandBelow(n)
		for {
			if _, ok := selected[j]; !ok {
				break
			}
			j = r.RandBelow(n)
		}
		selected[j] = struct{}{}
		result[i] = j
	}
	return result, nil
}

// Choice is random.choice(s) = s[randbelow(len(s))]. It panics on an empty
// slice (Python raises IndexError; a caller bug here).
func Choice[T any](r *Random, s []T) T {
	return s[r.RandBelow(len(s))]
}

// ShuffleSlice is random.shuffle(s) in place.
func ShuffleSlice[T any](r *Random, s []T) {
	r.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
}
