package game2048

import (
	"math"
	"math/big"
	"sync"
)

// log2 is a correctly rounded base-2 logarithm for x ≥ 1, as C's log2
// (and so NumPy's np.log2) returns it. Go's math.Log2 is off by one ulp
// for about 1 argument in 80 (log2(9), log2(107), …), which would change
// the log rewards that reach prompts as text.
//
// x = 2^e·m with m in [1, 2) exactly; ln m = 2·atanh(z), z = (m−1)/(m+1)
// ≤ 1/3, summed to 256 bits; log2 x = e + ln m / ln 2, rounded once.
func log2(x float64) float64 {
	if !(x >= 1) || math.IsInf(x, 1) {
		return math.Log2(x)
	}
	// Merge rewards are small integers with few distinct values: remember them.
	if x < 1<<24 && x == math.Trunc(x) {
		if v, ok := log2Cache.Load(x); ok {
			return v.(float64)
		}
		v := log2Exact(x)
		log2Cache.Store(x, v)
		return v
	}
	return log2Exact(x)
}

var log2Cache sync.Map // float64 → float64

func log2Exact(x float64) float64 {
	frac, exp := math.Frexp(x) // x = frac·2^exp, frac in [0.5, 1)
	m, e := frac*2, exp-1      // exact
	if m == 1 {
		return float64(e)
	}
	lnm := atanh2(m)
	r := new(big.Float).SetPrec(log2Prec).Quo(lnm, ln2())
	r.Add(r, new(big.Float).SetPrec(log2Prec).SetInt64(int64(e)))
	f, _ := r.Float64()
	return f
}

const log2Prec = 256

// atanh2 returns 2·atanh((m−1)/(m+1)) = ln m to log2Prec bits.
func atanh2(m float64) *big.Float {
	one := new(big.Float).SetPrec(log2Prec).SetInt64(1)
	mb := new(big.Float).SetPrec(log2Prec).SetFloat64(m)
	num := new(big.Float).SetPrec(log2Prec).Sub(mb, one)
	den := new(big.Float).SetPrec(log2Prec).Add(mb, one)
	z := new(big.Float).SetPrec(log2Prec).Quo(num, den)
	return atanhSeries(z)
}

// atanhSeries is 2·Σ z^(2k+1)/(2k+1) for |z| ≤ 1/3, to log2Prec bits.
func atanhSeries(z *big.Float) *big.Float {
	z2 := new(big.Float).SetPrec(log2Prec).Mul(z, z)
	term := new(big.Float).SetPrec(log2Prec).Set(z) // z^(2k+1)
	sum := new(big.Float).SetPrec(log2Prec).Set(z)
	q := new(big.Float).SetPrec(log2Prec)
	for k := 1; k < 200; k++ {
		term.Mul(term, z2)
		if term.Sign() == 0 || term.MantExp(nil)-sum.MantExp(nil) < -log2Prec-8 {
			break
		}
		q.Quo(term, new(big.Float).SetPrec(log2Prec).SetInt64(int64(2*k+1)))
		sum.Add(sum, q)
	}
	return sum.Mul(sum, new(big.Float).SetPrec(log2Prec).SetInt64(2))
}

var ln2Once = sync.OnceValue(func() *big.Float {
	third := new(big.Float).SetPrec(log2Prec).Quo(
		new(big.Float).SetPrec(log2Prec).SetInt64(1),
		new(big.Float).SetPrec(log2Prec).SetInt64(3))
	return atanhSeries(third) // ln 2 = 2·atanh(1/3)
})

func ln2() *big.Float { return ln2Once() }
