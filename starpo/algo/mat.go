package algo

import (
	"fmt"
	"math"
)

// Mat is a (B, T) matrix of float64 stored row-major: element (i, t) is
// Data[i*T+t]. Rows are trajectories (batch entries), columns are response
// positions. Masks use the same type with entries 0 or 1.
type Mat struct {
	B, T int       // B: rows (batch size), T: columns (response length)
	Data []float64 // len B*T, row-major
}

// NewMat returns a zero (b, t) matrix. It panics on negative sizes, which
// are programming mistakes.
func NewMat(b, t int) Mat {
	if b < 0 || t < 0 {
		panic(fmt.Sprintf("algo: NewMat(%d, %d): negative size", b, t))
	}
	return Mat{B: b, T: t, Data: make([]float64, b*t)}
}

// MatFrom wraps data (not copied) as a (b, t) matrix; len(data) must be b*t.
func MatFrom(b, t int, data []float64) (Mat, error) {
	m := Mat{B: b, T: t, Data: data}
	if err := m.check("data"); err != nil {
		return Mat{}, err
	}
	return m, nil
}

// MatFromRows copies equal-length rows into a new matrix.
func MatFromRows(rows [][]float64) (Mat, error) {
	if len(rows) == 0 {
		return NewMat(0, 0), nil
	}
	t := len(rows[0])
	m := NewMat(len(rows), t)
	for i, r := range rows {
		if len(r) != t {
			return Mat{}, fmt.Errorf("algo: row %d has %d columns, row 0 has %d", i, len(r), t)
		}
		copy(m.Data[i*t:], r)
	}
	return m, nil
}

// At returns element (i, t).
func (m Mat) At(i, t int) float64 { return m.Data[i*m.T+t] }

// Set sets element (i, t).
func (m Mat) Set(i, t int, v float64) { m.Data[i*m.T+t] = v }

// Row returns row i as a sub-slice (shared storage).
func (m Mat) Row(i int) []float64 { return m.Data[i*m.T : (i+1)*m.T] }

// Clone returns a deep copy.
func (m Mat) Clone() Mat {
	c := Mat{B: m.B, T: m.T, Data: make([]float64, len(m.Data))}
	copy(c.Data, m.Data)
	return c
}

// Rows returns the matrix as a slice of row copies (handy in tests and logs).
func (m Mat) Rows() [][]float64 {
	out := make([][]float64, m.B)
	for i := range out {
		out[i] = append([]float64(nil), m.Row(i)...)
	}
	return out
}

func (m Mat) check(name string) error {
	if m.B < 0 || m.T < 0 {
		return fmt.Errorf("algo: %s: negative shape (%d, %d)", name, m.B, m.T)
	}
	if len(m.Data) != m.B*m.T {
		return fmt.Errorf("algo: %s: shape (%d, %d) needs %d values, have %d", name, m.B, m.T, m.B*m.T, len(m.Data))
	}
	return nil
}

// sameShape checks that every named matrix is well formed and has the shape
// of the first one.
func sameShape(names []string, ms ...Mat) error {
	for k, m := range ms {
		if err := m.check(names[k]); err != nil {
			return err
		}
		if m.B != ms[0].B || m.T != ms[0].T {
			return fmt.Errorf("algo: %s has shape (%d, %d), %s has (%d, %d)", names[k], m.B, m.T, names[0], ms[0].B, ms[0].T)
		}
	}
	return nil
}

// checkMask verifies that every mask entry is exactly 0 or 1.
func checkMask(name string, m Mat) error {
	for k, v := range m.Data {
		if v != 0 && v != 1 {
			return fmt.Errorf("algo: %s[%d][%d] = %v: mask entries must be 0 or 1", name, k/max(m.T, 1), k%max(m.T, 1), v)
		}
	}
	return nil
}

// checkRowLen checks a per-row metadata slice.
func checkRowLen(name string, n, b int) error {
	if n != b {
		return fmt.Errorf("algo: %s has %d entries for %d rows", name, n, b)
	}
	return nil
}

func checkFinite(name string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("algo: %s = %v is not finite", name, v)
	}
	return nil
}

// fmax is math.Max without the function-call overhead on the hot path:
// NaN if either is NaN, +0 for max(−0, +0).
func fmax(a, b float64) float64 {
	switch {
	case a > b:
		return a
	case b > a:
		return b
	case a == b:
		if a == 0 {
			return a + b
		}
		return a
	}
	return math.NaN()
}

// fmin is math.Min likewise: NaN if either is NaN, −0 for min(−0, +0).
func fmin(a, b float64) float64 {
	switch {
	case a < b:
		return a
	case b < a:
		return b
	case a == b:
		if a == 0 {
			return -(-a + -b)
		}
		return a
	}
	return math.NaN()
}

// clamp is torch.clamp(x, lo, hi): NaN stays NaN.
func clamp(x, lo, hi float64) float64 {
	if x < lo {
		return lo
	}
	if x > hi {
		return hi
	}
	return x
}
