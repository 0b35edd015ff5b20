package pyrand

// mt19937 is the Mersenne Twister state shared by Random and Legacy.
type mt19937 struct {
	mt  [624]uint32
	idx int // next output word
	gen int // words [0, gen) of the current block are regenerated
}

const (
	mtN         = 624
	mtM         = 397
	mtMatrixA   = 0x9908b0df
	mtUpperMask = 0x80000000
	mtLowerMask = 0x7fffffff
)

// initGenrand is MT19937's init_genrand (NumPy's np.random.seed(int)).
func (m *mt19937) initGenrand(s uint32) {
	m.mt[0] = s
	for i := 1; i < mtN; i++ {
		m.mt[i] = 1812433253*(m.mt[i-1]^(m.mt[i-1]>>30)) + uint32(i)
	}
	m.idx, m.gen = mtN, mtN
}

// genrand19650218 is the state after init_genrand(19650218), the fixed
// starting point of init_by_array (a constant table, computed once).
var genrand19650218 = func() [mtN]uint32 {
	var m mt19937
	m.initGenrand(19650218)
	return m.mt
}()

// initByArray is MT19937's init_by_array (CPython's random.seed(int)).
func (m *mt19937) initByArray(key []uint32) {
	m.mt = genrand19650218
	i, j := 1, 0
	k := mtN
	if len(key) > k {
		k = len(key)
	}
	for ; k > 0; k-- {
		m.mt[i] = (m.mt[i] ^ ((m.mt[i-1] ^ (m.mt[i-1] >> 30)) * 1664525)) + key[j] + uint32(j)
		i++
		j++
		if i >= mtN {
			m.mt[0] = m.mt[mtN-1]
			i = 1
		}
		if j >= len(key) {
			j = 0
		}
	}
	for k = mtN - 1; k > 0; k-- {
		m.mt[i] = (m.mt[i] ^ ((m.mt[i-1] ^ (m.mt[i-1] >> 30)) * 1566083941)) - uint32(i)
		i++
		if i >= mtN {
			m.mt[0] = m.mt[mtN-1]
			i = 1
		}
	}
	m.mt[0] = 0x80000000
	m.idx, m.gen = mtN, mtN
}

// regen regenerates word i of the next block. Words are regenerated in
// order, lazily as they are consumed: word i < N-M reads old words i+1 and
// i+M, later words read already regenerated ones, exactly as the batch
// regeneration of genrand_uint32 does.
func (m *mt19937) regen(i int) {
	j := i + 1
	if j == mtN {
		j = 0
	}
	k := i + mtM
	if k >= mtN {
		k -= mtN
	}
	y := (m.mt[i] & mtUpperMask) | (m.mt[j] & mtLowerMask)
	m.mt[i] = m.mt[k] ^ (y >> 1) ^ ((y & 1) * mtMatrixA)
}

// uint32 is genrand_uint32: one tempered 32-bit output.
func (m *mt19937) uint32() uint32 {
	if m.idx >= mtN {
		m.idx, m.gen = 0, 0
	}
	if m.idx >= m.gen {
		m.regen(m.gen)
		m.gen++
	}
	y := m.mt[m.idx]
	m.idx++
	y ^= y >> 11
	y ^= (y << 7) & 0x9d2c5680
	y ^= (y << 15) & 0xefc60000
	y ^= y >> 18
	return y
}

// res53 is genrand_res53, the double both CPython and NumPy legacy use:
// (a>>5)*2^26 + (b>>6) over 2^53.
func (m *mt19937) res53() float64 {
	a := m.uint32() >> 5
	b := m.uint32() >> 6
	return (float64(a)*67108864.0 + float64(b)) * (1.0 / 9007199254740992.0)
}

// maskFor returns the smallest 2^k-1 >= v.
func maskFor(v uint64) uint64 {
	v |= v >> 1
	v |= v >> 2
	v |= v >> 4
	v |= v >> 8
	v |= v >> 16
	v |= v >> 32
	return v
}
