package countdown

import (
	"math"
	"math/big"
)

// Go's math.Pow can be one ulp off where C's pow (which CPython calls) is
// correctly rounded, e.g. 8**(1/3) is 2.0 in Python but 1.9999999999999998
// with math.Pow. powCR computes x**y for finite x > 0 and finite y as
// exp(y·ln x) in 160-bit arithmetic and rounds once to float64, which
// agrees with a correctly rounded pow except in cases closer to a rounding
// boundary than 2^-100 relative. glibc's pow is itself only nearly correctly
// rounded: about 1 in 2,000 random float powers, and some exact halfway
// cases (17.0**13), differ in the last bit — never enough to change a score.

const powPrec = 160

func bf(x float64) *big.Float { return new(big.Float).SetPrec(powPrec).SetFloat64(x) }

// atanhSeries returns 2·atanh(z) = 2(z + z³/3 + z⁵/5 + …) for |z| ≤ 1/3.
func atanhSeries(z *big.Float) *big.Float {
	sum := new(big.Float).SetPrec(powPrec).Set(z)
	z2 := new(big.Float).SetPrec(powPrec).Mul(z, z)
	term := new(big.Float).SetPrec(powPrec).Set(z)
	tmp := new(big.Float).SetPrec(powPrec)
	for k := int64(3); k < 400; k += 2 {
		term.Mul(term, z2)
		tmp.Quo(term, new(big.Float).SetPrec(powPrec).SetInt64(k))
		if tmp.Sign() == 0 || tmp.MantExp(nil)-sum.MantExp(nil) < -powPrec-4 {
			break
		}
		sum.Add(sum, tmp)
	}
	return sum.Mul(sum, bf(2))
}

var ln2Big = func() *big.Float {
	// ln 2 = 2·atanh(1/3).
	third := new(big.Float).SetPrec(powPrec).Quo(bf(1), bf(3))
	return atanhSeries(third)
}()

// lnBig returns ln x for finite x > 0.
func lnBig(x float64) *big.Float {
	m, e := math.Frexp(x) // x = m·2^e, m in [0.5, 1)
	mb := bf(m)
	// ln m = 2·atanh((m−1)/(m+1)); |z| ≤ 1/3 for m in [0.5, 1).
	z := new(big.Float).SetPrec(powPrec).Quo(new(big.Float).SetPrec(powPrec).Sub(mb, bf(1)), new(big.Float).SetPrec(powPrec).Add(mb, bf(1)))
	r := atanhSeries(z)
	le := new(big.Float).SetPrec(powPrec).Mul(ln2Big, new(big.Float).SetPrec(powPrec).SetInt64(int64(e)))
	return r.Add(r, le)
}

// expBig returns exp(t) for moderate t (|t| < 1000).
func expBig(t *big.Float) *big.Float {
	// t = k·ln2 + r, |r| ≤ ln2/2; exp(r) by Taylor after halving r 16 times.
	q := new(big.Float).SetPrec(powPrec).Quo(t, ln2Big)
	kf, _ := q.Float64()
	k := math.Round(kf)
	r := new(big.Float).SetPrec(powPrec).Sub(t, new(big.Float).SetPrec(powPrec).Mul(ln2Big, bf(k)))
	const halvings = 16
	r.SetMantExp(r, -halvings)
	sum := bf(1)
	term := bf(1)
	for n := int64(1); n < 60; n++ {
		term.Mul(term, r)
		term.Quo(term, new(big.Float).SetPrec(powPrec).SetInt64(n))
		if term.Sign() == 0 || term.MantExp(nil) < -powPrec-4 {
			break
		}
		sum.Add(sum, term)
	}
	for i := 0; i < halvings; i++ {
		sum.Mul(sum, sum)
	}
	return sum.SetMantExp(sum, int(k))
}

// powCR is x**y for finite x > 0 and finite y; overflow reports ok=false.
func powCR(x, y float64) (float64, bool) {
	if x == 1 || y == 0 {
		return 1, true
	}
	if y == 1 {
		return x, true
	}
	t := lnBig(x)
	t.Mul(t, bf(y))
	tf, _ := t.Float64()
	if tf > 710 {
		return 0, false
	}
	if tf < -746 {
		return 0, true
	}
	r, _ := expBig(t).Float64()
	if math.IsInf(r, 0) {
		return 0, false
	}
	return r, true
}
