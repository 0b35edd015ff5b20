package algo

import (
	"math"
	"testing"
)

// mat builds a Mat from rows or fails the test.
func mat(t testing.TB, rows ...[]float64) Mat {
	t.Helper()
	m, err := MatFromRows(rows)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func ones(b, tt int) Mat {
	m := NewMat(b, tt)
	for k := range m.Data {
		m.Data[k] = 1
	}
	return m
}

func close(a, b, tol float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		return a == b
	}
	return math.Abs(a-b) <= tol*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

func assertClose(t testing.TB, name string, got, want, tol float64) {
	t.Helper()
	if !close(got, want, tol) {
		t.Errorf("%s = %.12g, want %.12g", name, got, want)
	}
}

func assertMat(t testing.TB, name string, got Mat, want [][]float64, tol float64) {
	t.Helper()
	if got.B != len(want) {
		t.Fatalf("%s: %d rows, want %d", name, got.B, len(want))
	}
	for i, row := range want {
		if got.T != len(row) {
			t.Fatalf("%s: %d columns, want %d", name, got.T, len(row))
		}
		for j, w := range row {
			if !close(got.At(i, j), w, tol) {
				t.Errorf("%s[%d][%d] = %.12g, want %.12g", name, i, j, got.At(i, j), w)
			}
		}
	}
}

// whitenRef whitens x over mask with veRL's formula written out for tests:
// μ = Σx/(n+1e-8), σ² = Σ(x−μ)²/(n+1e-8)·n/(n−1), (x−μ)/sqrt(σ²+1e-8).
func whitenRef(x, m []float64) []float64 {
	n, s := 0.0, 0.0
	for k := range x {
		if m[k] != 0 {
			n++
			s += x[k]
		}
	}
	mu := s / (n + 1e-8)
	ss := 0.0
	for k := range x {
		if m[k] != 0 {
			ss += (x[k] - mu) * (x[k] - mu)
		}
	}
	sd := math.Sqrt(ss/(n+1e-8)*n/(n-1) + 1e-8)
	out := make([]float64, len(x))
	for k := range x {
		out[k] = (x[k] - mu) / sd
	}
	return out
}

func reshape(b, tt int, x []float64) [][]float64 {
	out := make([][]float64, b)
	for i := range out {
		out[i] = x[i*tt : (i+1)*tt]
	}
	return out
}

func TestFminFmaxClamp(t *testing.T) {
	nan, negZero := math.NaN(), math.Copysign(0, -1)
	for _, p := range [][2]float64{{1, 2}, {2, 1}, {3, 3}, {nan, 1}, {1, nan}, {negZero, 0}, {0, negZero}, {negZero, negZero}, {math.Inf(-1), 4}} {
		a, b := p[0], p[1]
		if got, want := fmax(a, b), math.Max(a, b); math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Errorf("fmax(%v, %v) = %v, want %v", a, b, got, want)
		}
		if got, want := fmin(a, b), math.Min(a, b); math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Errorf("fmin(%v, %v) = %v, want %v", a, b, got, want)
		}
	}
	if !math.IsNaN(clamp(nan, 0, 1)) || clamp(-2, 0, 1) != 0 || clamp(2, 0, 1) != 1 || clamp(.5, 0, 1) != .5 {
		t.Error("clamp")
	}
}
