package pyrand

// mt19937 is the Mersenne Twister state shared by Random and Legacy.
type mt19937 struct {
	mt  [624]uint32
	idx int
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
	m.idx = mtN
}

// initByArray is MT19937's init_by_array (CPython's random.seed(int)).
func (m *mt19937) initByArray(key []uint32) {
	m.initGenrand(19650218)
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
	m.idx = mtN
}

func (m *mt19937) generate() {
	mag := [2]uint32{0, mtMatrixA}
	var kk int
	for kk = 0; kk < mtN-mtM; kk++ {
		y := (m.mt[kk] & mtUpperMask) | (m.mt[kk+1] & mtLowerMask)
		m.mt[kk] = m.mt[kk+mtM] ^ (y >> 1) ^ mag[y&1]
	}
	for ; kk < mtN-1; kk++ {
		y := (m.mt[kk] & mtUpperMask) | (m.mt[kk+1] & mtLowerMask)
		m.mt[kk] = m.mt[kk+(mtM-mtN)] ^ (y >> 1) ^ mag[y&1]
	}
	y := (m.mt[mtN-1] & mtUpperMask) | (m.mt[0] & mtLowerMask)
	m.mt[mtN-1] = m.mt[mtM-1] ^ (y >> 1) ^ mag[y&1]
	m.idx = 0
}

// uint32 is genrand_uint32: one tempered 32-bit output.
func (m *mt19937) uint32() uint32 {
	if m.idx >= mtN {
		m.generate()
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
