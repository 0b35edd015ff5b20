package env

import "fmt"

// Rand is the randomness an env draws from during play (after reset):
// FrozenLake's slip, Bandit's reward coin, 2048's tile spawns. Tests swap
// in a Scripted source to force outcomes.
//
// Float64 returns a double in [0, 1); Intn returns an integer in [0, n) for
// n > 0. The pyrand types implement both with upstream's exact algorithms:
// pyrand.Generator (NumPy Generator/PCG64: random(), integers(0, n)),
// pyrand.Random (Python random: random(), randbelow(n)) and pyrand.Legacy
// (NumPy legacy: rand(), randint(n)). An env documents which one it uses
// for seeded play so that a Scripted source can stand in for it.
type Rand interface {
	Float64() float64
	Intn(n int) int
}

// Scripted is a Rand that replays fixed values, for tests: Float64 returns
// Floats in order and Intn returns Ints in order. Running out of values, or
// an int outside [0, n), is a mistake in the test and panics with a message
// saying which.
type Scripted struct {
	Floats []float64
	Ints   []int
	fi, ii int
}

// NewScripted returns a Scripted source over the given values.
func NewScripted(floats []float64, ints []int) *Scripted {
	return &Scripted{Floats: floats, Ints: ints}
}

// Float64 returns the next scripted float.
func (s *Scripted) Float64() float64 {
	if s.fi >= len(s.Floats) {
		panic(fmt.Sprintf("env: Scripted: Float64 call %d but only %d floats scripted", s.fi+1, len(s.Floats)))
	}
	v := s.Floats[s.fi]
	s.fi++
	return v
}

// Intn returns the next scripted int, which must lie in [0, n).
func (s *Scripted) Intn(n int) int {
	if s.ii >= len(s.Ints) {
		panic(fmt.Sprintf("env: Scripted: Intn call %d but only %d ints scripted", s.ii+1, len(s.Ints)))
	}
	v := s.Ints[s.ii]
	if v < 0 || v >= n {
		panic(fmt.Sprintf("env: Scripted: Intn(%d) call %d: scripted value %d out of range", n, s.ii+1, v))
	}
	s.ii++
	return v
}

// Remaining reports how many scripted floats and ints are still unused, so
// a test can check that an env drew exactly what it expected.
func (s *Scripted) Remaining() (floats, ints int) {
	return len(s.Floats) - s.fi, len(s.Ints) - s.ii
}
