package pyrand

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Values printed by Debian's python3-numpy (1.24) on this machine:
//
//	np.random.seed(0); np.random.rand(3); np.random.randint(10, size=5)
//	np.random.seed(42); np.random.randint(0, 100, size=5); np.random.permutation(10)
//	g = np.random.default_rng(42); g.random(3); g.integers(0, 100, size=5); g.permutation(10)
//	g = np.random.default_rng(12345); g.random(); g.integers(0, 10, size=5); g.choice(5, p=[.1,.2,.3,.2,.2])
func TestAgainstNumPy(t *testing.T) {
	l, err := NewLegacy(0)
	require.NoError(t, err)
	require.Equal(t, []float64{0.5488135039273248, 0.7151893663724195, 0.6027633760716439}, []float64{l.Rand(), l.Rand(), l.Rand()})
	var ints []int
	for range 5 {
		ints = append(ints, l.RandIntN(10))
	}
	require.Equal(t, []int{3, 7, 9, 3, 5}, ints)

	l, err = NewLegacy(42)
	require.NoError(t, err)
	ints = ints[:0]
	for range 5 {
		ints = append(ints, l.RandInt(0, 100))
	}
	require.Equal(t, []int{51, 92, 14, 71, 60}, ints)
	require.Equal(t, []int{9, 7, 0, 3, 5, 8, 2, 1, 6, 4}, l.Permutation(10))

	g, err := NewGenerator(42)
	require.NoError(t, err)
	require.Equal(t, []float64{0.7739560485559633, 0.4388784397520523, 0.8585979199113825}, []float64{g.Random(), g.Random(), g.Random()})
	var i64 []int64
	for range 5 {
		i64 = append(i64, g.Integers(0, 100))
	}
	require.Equal(t, []int64{8, 69, 20, 9, 52}, i64)
	require.Equal(t, []int{4, 8, 2, 6, 5, 9, 7, 3, 0, 1}, g.Permutation(10))

	g, err = NewGenerator(12345)
	require.NoError(t, err)
	require.Equal(t, 0.22733602246716966, g.Random())
	i64 = i64[:0]
	for range 5 {
		i64 = append(i64, g.Integers(0, 10))
	}
	require.Equal(t, []int64{7, 3, 2, 7, 6}, i64)
	c, err := g.ChoiceP([]float64{0.1, 0.2, 0.3, 0.2, 0.2})
	require.NoError(t, err)
	require.Equal(t, 2, c)
}
