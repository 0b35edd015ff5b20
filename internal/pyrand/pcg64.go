package pyrand

import (
	"fmt"
	"math/bits"
)

// SeedSequence constants (numpy/random/bit_generator.pyx).
const (
	ssPoolSize = 4
	ssInitA    = 0x43b0d7e5
	ssMultA    = 0x931e8875
	ssInitB    = 0x8b51f9dd
	ssMultB    = 0x58f38ded
	ssMixMultL = 0xca01f9dd
	ssMixMultR = 0x4973f715
	ssXShift   = 16
)

// seedSequencePool returns the mixed entropy pool of SeedSequence(seed)
// for a non-negative integer seed with no spawn key.
func seedSequencePool(seed uint64) [ssPoolSize]uint32 {
	// _coerce_to_uint32_array: little-endian 32-bit words, [0] for 0.
	var entropy []uint32
	if seed>>32 != 0 {
		entropy = []uint32{uint32(seed), uint32(seed >> 32)}
	} else {
		entropy = []uint32{uint32(seed)}
	}
	hashConst := uint32(ssInitA)
	hashmix := func(v uint32) uint32 {
		v ^= hashConst
		hashConst *= ssMultA
		v *= hashConst
		v ^= v >> ssXShift
		return v
	}
	mix := func(x, y uint32) uint32 {
		r := ssMixMultL*x - ssMixMultR*y
		r ^= r >> ssXShift
		return r
	}
	var pool [ssPoolSize]uint32
	for i := range pool {
		if i < len(entropy) {
			pool[i] = hashmix(entropy[i])
		} else {
			pool[i] = hashmix(0)
		}
	}
	for src := 0; src < ssPoolSize; src++ {
		for dst := 0; dst < ssPoolSize; dst++ {
			if src != dst {
				pool[dst] = mix(pool[dst], hashmix(pool[src]))
			}
		}
	}
	for src := ssPoolSize; src < len(entropy); src++ {
		for dst := 0; dst < ssPoolSize; dst++ {
			pool[dst] = mix(pool[dst], hashmix(entropy[src]))
		}
	}
	return pool
}

// seedSequenceState is SeedSequence(seed).generate_state(n, uint64).
func seedSequenceState(seed uint64, n int) []uint64 {
	pool := seedSequencePool(seed)
	words := make([]uint32, 2*n)
	hashConst := uint32(ssInitB)
	for i := range words {
		v := pool[i%ssPoolSize]
		v ^= hashConst
		hashConst *= ssMultB
		v *= hashConst
		v ^= v >> ssXShift
		words[i] = v
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(words[2*i]) | uint64(words[2*i+1])<<32
	}
	return out
}

const (
	pcgMultHi = 0x2360ED051FC65DA4
	pcgMultLo = 0x4385DF649FCCF645
)

// Generator is NumPy's Generator over PCG64 (np.random.default_rng(seed),
// gymnasium's np_random). Method names follow NumPy's; Float64 and Intn are
// aliases of Random and Integers(0, n) for the env.Rand interface.
type Generator struct {
	stHi, stLo   uint64 // 128-bit LCG state
	incHi, incLo uint64 // 128-bit increment (odd)
	hasUint32    bool   // next32 half-buffer
	uinteger     uint32
}

// NewGenerator returns np.random.default_rng(seed) for seed >= 0; negative
// seeds are an error as in NumPy.
func NewGenerator(seed int64) (*Generator, error) {
	if seed < 0 {
		return nil, fmt.Errorf("pyrand: generator seed %d: expected non-negative integer", seed)
	}
	return NewGeneratorUint64(uint64(seed)), nil
}

// NewGeneratorUint64 returns np.random.default_rng(seed) for any seed
// below 2^64.
func NewGeneratorUint64(seed uint64) *Generator {
	g := &Generator{}
	st := seedSequenceState(seed, 4)
	g.setSeed(st[0], st[1], st[2], st[3])
	return g
}

// NewGeneratorSum returns np.random.default_rng(a + b) with the sum taken
// as Python's unbounded ints (two int64 seeds may sum past 2^63); a
// negative sum is NumPy's error.
func NewGeneratorSum(a, b int64) (*Generator, error) {
	if a >= 0 && b >= 0 {
		return NewGeneratorUint64(uint64(a) + uint64(b)), nil // below 2^64
	}
	s := a + b // one is negative: no overflow; both negative: the sum is negative
	if a < 0 && b < 0 || s < 0 {
		return nil, fmt.Errorf("pyrand: generator seed %d + %d: expected non-negative integer", a, b)
	}
	return NewGeneratorUint64(uint64(s)), nil
}

// setSeed is pcg_setseq_128_srandom_r(initstate = s0:s1, initseq = i0:i1).
func (g *Generator) setSeed(s0, s1, i0, i1 uint64) {
	g.stHi, g.stLo = 0, 0
	// inc = (initseq << 1) | 1
	g.incHi = i0<<1 | i1>>63
	g.incLo = i1<<1 | 1
	g.step()
	var c uint64
	g.stLo, c = bits.Add64(g.stLo, s1, 0)
	g.stHi, _ = bits.Add64(g.stHi, s0, c)
	g.step()
	g.hasUint32 = false
	g.uinteger = 0
}

// step: state = state*mult + inc (mod 2^128).
func (g *Generator) step() {
	hi, lo := bits.Mul64(g.stLo, pcgMultLo)
	hi += g.stHi*pcgMultLo + g.stLo*pcgMultHi
	var c uint64
	lo, c = bits.Add64(lo, g.incLo, 0)
	hi, _ = bits.Add64(hi, g.incHi, c)
	g.stHi, g.stLo = hi, lo
}

// Uint64 is PCG64's next64: advance, then XSL-RR output of the new state.
func (g *Generator) Uint64() uint64 {
	g.step()
	return bits.RotateLeft64(g.stHi^g.stLo, -int(g.stHi>>58))
}

// Uint32 is PCG64's next32: the low half of a fresh next64, then its high
// half on the following call.
func (g *Generator) Uint32() uint32 {
	if g.hasUint32 {
		g.hasUint32 = false
		return g.uinteger
	}
	v := g.Uint64()
	g.hasUint32 = true
	g.uinteger = uint32(v >> 32)
	return uint32(v)
}

// Random is Generator.random(): (next64 >> 11) * 2^-53.
func (g *Generator) Random() float64 {
	return float64(g.Uint64()>>11) * (1.0 / 9007199254740992.0)
}

// Float64 is Random (env.Rand).
func (g *Generator) Float64() float64 { return g.Random() }

// bounded returns a value in [0, rng] the way Generator.integers does
// (random_bounded_uint64_fill with use_masked=false): nothing drawn for
// rng == 0, a plain next32 for rng == 2^32-1, Lemire's method on next32 for
// smaller ranges and on next64 for larger ones.
func (g *Generator) bounded(rng uint64) uint64 {
	switch {
	case rng == 0:
		return 0
	case rng == 0xFFFFFFFF:
		return uint64(g.Uint32())
	case rng < 0xFFFFFFFF:
		excl := uint32(rng) + 1
		m := uint64(g.Uint32()) * uint64(excl)
		left := uint32(m)
		if left < excl {
			threshold := (0xFFFFFFFF - uint32(rng)) % excl
			for left < threshold {
				m = uint64(g.Uint32()) * uint64(excl)
				left = uint32(m)
			}
		}
		return m >> 32
	case rng == ^uint64(0):
		return g.Uint64()
	default:
		excl := rng + 1
		hi, lo := bits.Mul64(g.Uint64(), excl)
		if lo < excl {
			threshold := (^uint64(0) - rng) % excl
			for lo < threshold {
				hi, lo = bits.Mul64(g.Uint64(), excl)
			}
		}
		return hi
	}
}

// Integers is Generator.integers(low, high) (high exclusive, int64 dtype).
// Panics if high <= low (NumPy raises; a caller bug here).
func (g *Generator) Integers(low, high int64) int64 {
	if high <= low {
		panic(fmt.Sprintf("pyrand: Integers(%d, %d): low >= high", low, high))
	}
	return low + int64(g.bounded(uint64(high-low-1)))
}

// Intn is Integers(0, n) (env.Rand).
func (g *Generator) Intn(n int) int { return int(g.Integers(0, int64(n))) }

// Uniform is Generator.uniform(low, high) = low + (high-low)*random().
func (g *Generator) Uniform(low, high float64) float64 { return low + (high-low)*g.Random() }

// interval is NumPy's random_interval(max): masked rejection, on next32 for
// max <= 2^32-1, else on next64 (Generator.shuffle/permutation use it).
func (g *Generator) interval(max uint64) uint64 {
	if max == 0 {
		return 0
	}
	mask := maskFor(max)
	if max <= 0xFFFFFFFF {
		for {
			v := uint64(g.Uint32()) & mask
			if v <= max {
				return v
			}
		}
	}
	for {
		v := g.Uint64() & mask
		if v <= max {
			return v
		}
	}
}

// Shuffle is Generator.shuffle over n elements: for i = n-1 down to 1,
// j = random_interval(i), swap(i, j).
func (g *Generator) Shuffle(n int, swap func(i, j int)) {
	for i := n - 1; i > 0; i-- {
		swap(i, int(g.interval(uint64(i))))
	}
}

// Permutation is Generator.permutation(n): arange(n) shuffled.
func (g *Generator) Permutation(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	g.Shuffle(n, func(i, j int) { p[i], p[j] = p[j], p[i] })
	return p
}

// ChoiceP is Generator.choice(len(p), p=p) for one sample: searchsorted
// (side="right") of one random() draw in cumsum(p)/cumsum(p)[-1].
func (g *Generator) ChoiceP(p []float64) (int, error) {
	cdf, err := cdfOf(p)
	if err != nil {
		return 0, err
	}
	return searchRight(cdf, g.Random()), nil
}

// ChoicePN is Generator.choice(len(p), size=n, p=p): n random() draws, each
// mapped through the same cdf (row-major order for a shaped size).
func (g *Generator) ChoicePN(p []float64, n int) ([]int, error) {
	cdf, err := cdfOf(p)
	if err != nil {
		return nil, err
	}
	out := make([]int, n)
	for i := range out {
		out[i] = searchRight(cdf, g.Random())
	}
	return out, nil
}

// GeneratorChoice is Generator.choice(s) for one element:
// s[integers(0, len(s))].
func GeneratorChoice[T any](g *Generator, s []T) T {
	return s[g.Intn(len(s))]
}
