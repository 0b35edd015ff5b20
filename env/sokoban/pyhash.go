package sokoban

import (
	"math/bits"
	"strconv"
)

// pyStrHash is CPython's (3.11+) hash() of an ASCII str with hash
// randomisation disabled (PYTHONHASHSEED=0): SipHash-1-3 with a zero key
// over the string's bytes, 0 for the empty string, -1 mapped to -2.
func pyStrHash(s string) int64 {
	if len(s) == 0 {
		return 0
	}
	var k0, k1 uint64
	v0 := k0 ^ 0x736f6d6570736575
	v1 := k1 ^ 0x646f72616e646f6d
	v2 := k0 ^ 0x6c7967656e657261
	v3 := k1 ^ 0x7465646279746573
	round := func() {
		v0 += v1
		v2 += v3
		v1 = bits.RotateLeft64(v1, 13) ^ v0
		v3 = bits.RotateLeft64(v3, 16) ^ v2
		v0 = bits.RotateLeft64(v0, 32)
		v2 += v1
		v0 += v3
		v1 = bits.RotateLeft64(v1, 17) ^ v2
		v3 = bits.RotateLeft64(v3, 21) ^ v0
		v2 = bits.RotateLeft64(v2, 32)
	}
	b := uint64(len(s)) << 56
	in := []byte(s)
	for len(in) >= 8 {
		var m uint64
		for i := 7; i >= 0; i-- {
			m = m<<8 | uint64(in[i])
		}
		in = in[8:]
		v3 ^= m
		round()
		v0 ^= m
	}
	var t uint64
	for i := len(in) - 1; i >= 0; i-- {
		t = t<<8 | uint64(in[i])
	}
	b |= t
	v3 ^= b
	round()
	v0 ^= b
	v2 ^= 0xff
	round()
	round()
	round()
	h := int64((v0 ^ v1) ^ (v2 ^ v3))
	if h == -1 {
		h = -2
	}
	return h
}

// RetrySeed is the seed upstream's reset falls back to after seed fails
// to generate a level: abs(hash(str(seed))) % 2**32. Upstream's str hash is
// salted per process; we compute it as CPython 3.11+ does with
// PYTHONHASHSEED=0, so retries are reproducible and equal upstream's under
// that setting.
func RetrySeed(seed int64) int64 {
	h := pyStrHash(strconv.FormatInt(seed, 10))
	u := uint64(h)
	if h < 0 {
		u = -u // abs, also for math.MinInt64
	}
	return int64(u % (1 << 32))
}
