package sudoku

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"

	"ragen/env"
)

// boxSize is upstream's int(sqrt(n)).
func boxSize(n int) int { return int(math.Sqrt(float64(n))) }

// Generate fills an n×n grid the way upstream does and returns the full
// solution. It backtracks over the first empty cell in row-major order,
// trying the values 1..n in the order of a fresh random.shuffle at every
// visit; a value is kept when it is absent from the row, column and box.
//
// Plain backtracking can run for hours on some 16×16 seeds (upstream
// hangs there too), so Generate gives up with an error after maxNodes
// cell visits (≤ 0: no limit) and checks ctx every 4096 visits.
func Generate(ctx context.Context, n int, rng env.Rand, maxNodes int) ([][]int, error) {
	g := newGrid(n)
	b := boxSize(n)
	nums := make([][]int, n*n) // one scratch slice per recursion depth
	for i := range nums {
		nums[i] = make([]int, n)
	}
	nodes := 0
	var stop error
	var fill func(pos int) bool
	fill = func(pos int) bool {
		// First empty cell at or after pos (cells before pos are filled).
		for pos < n*n && g[pos/n][pos%n] != 0 {
			pos++
		}
		if pos == n*n {
			return true
		}
		nodes++
		if maxNodes > 0 && nodes > maxNodes {
			stop = fmt.Errorf("sudoku: generation gave up after %d backtracking steps", maxNodes)
			return false
		}
		if nodes%4096 == 0 {
			if err := ctx.Err(); err != nil {
				stop = err
				return false
			}
		}
		i, j := pos/n, pos%n
		cand := nums[pos]
		for k := range cand {
			cand[k] = k + 1
		}
		shuffle(rng, cand)
		for _, v := range cand {
			if canPlace(g, b, i, j, v) {
				g[i][j] = v
				if fill(pos + 1) {
					return true
				}
				g[i][j] = 0
				if stop != nil {
					return false
				}
			}
		}
		return false
	}
	fill(0)
	if stop != nil {
		return nil, stop
	}
	return g, nil
}

// shuffle is Python's random.shuffle: for i = len−1 … 1, swap s[i] with
// s[randbelow(i+1)].
func shuffle[T any](rng env.Rand, s []T) {
	for i := len(s) - 1; i > 0; i-- {
		j := rng.Intn(i + 1)
		s[i], s[j] = s[j], s[i]
	}
}

// canPlace reports whether v is absent from row i, column j and the box of
// (i,j) of g (the cell itself included).
func canPlace(g [][]int, b, i, j, v int) bool {
	n := len(g)
	for k := 0; k < n; k++ {
		if g[i][k] == v || g[k][j] == v {
			return false
		}
	}
	bi, bj := i/b*b, j/b*b
	for r := bi; r < bi+b; r++ {
		for c := bj; c < bj+b; c++ {
			if g[r][c] == v {
				return false
			}
		}
	}
	return true
}

// Puzzle blanks the first int(n²·f) cells of a shuffled list of all (i,j)
// of solution, as upstream does, and returns the puzzle.
func Puzzle(solution [][]int, fraction float64, rng env.Rand) [][]int {
	n := len(solution)
	p := copyGrid(solution)
	cells := make([]int, n*n)
	for k := range cells {
		cells[k] = k
	}
	shuffle(rng, cells)
	remove := int(float64(n*n) * fraction)
	for _, k := range cells[:remove] {
		p[k/n][k%n] = 0
	}
	return p
}

// UniquePuzzle is Puzzle with a uniqueness guarantee: it walks the same
// shuffled cell list and blanks a cell only if the puzzle provably keeps
// exactly one solution, stopping at int(n²·f) blanks or when the list is
// exhausted (so it may blank fewer cells than Puzzle). A cell whose check
// exceeds uniqueCheckNodes solver steps stays filled, which bounds the time
// on 16×16 boards.
func UniquePuzzle(solution [][]int, fraction float64, rng env.Rand) [][]int {
	n := len(solution)
	p := copyGrid(solution)
	cells := make([]int, n*n)
	for k := range cells {
		cells[k] = k
	}
	shuffle(rng, cells)
	remove := int(float64(n*n) * fraction)
	removed := 0
	for _, k := range cells {
		if removed == remove {
			break
		}
		i, j := k/n, k%n
		v := p[i][j]
		p[i][j] = 0
		if c, done := countSolutions(p, 2, uniqueCheckNodes); !done || c != 1 {
			p[i][j] = v
			continue
		}
		removed++
	}
	return p
}

// uniqueCheckNodes bounds one uniqueness check of UniquePuzzle.
const uniqueCheckNodes = 20000

// CountSolutions counts the completions of g (0 = empty) up to limit,
// with a bitmask backtracking solver that always branches on the empty
// cell with the fewest candidates. A grid whose givens already conflict has
// no solution. It is exact but can be slow on sparse 16×16 grids.
func CountSolutions(g [][]int, limit int) int {
	c, _ := countSolutions(g, limit, 0)
	return c
}

// countSolutions is CountSolutions with a budget of maxNodes search steps
// (≤ 0: none); done is false when the budget ran out first.
func countSolutions(g [][]int, limit, maxNodes int) (count int, done bool) {
	n := len(g)
	b := boxSize(n)
	if n == 0 || b*b != n || n > 32 {
		return 0, true
	}
	var rows, cols, boxes [32]uint32
	var empties []int
	for i := 0; i < n; i++ {
		if len(g[i]) != n {
			return 0, true
		}
		for j := 0; j < n; j++ {
			v := g[i][j]
			if v == 0 {
				empties = append(empties, i*n+j)
				continue
			}
			if v < 0 || v > n {
				return 0, true
			}
			bit := uint32(1) << (v - 1)
			bx := i/b*b + j/b
			if rows[i]&bit != 0 || cols[j]&bit != 0 || boxes[bx]&bit != 0 {
				return 0, true
			}
			rows[i] |= bit
			cols[j] |= bit
			boxes[bx] |= bit
		}
	}
	full := uint32(1)<<n - 1
	nodes := 0
	exhausted := false
	var solve func(depth int)
	solve = func(depth int) {
		if count >= limit || exhausted {
			return
		}
		if depth == len(empties) {
			count++
			return
		}
		nodes++
		if maxNodes > 0 && nodes > maxNodes {
			exhausted = true
			return
		}
		// Pick the remaining empty cell with the fewest candidates.
		best, bestN := depth, n+1
		for k := depth; k < len(empties); k++ {
			p := empties[k]
			i, j := p/n, p%n
			free := full &^ (rows[i] | cols[j] | boxes[i/b*b+j/b])
			c := bits.OnesCount32(free)
			if c < bestN {
				best, bestN = k, c
				if c <= 1 {
					break
				}
			}
		}
		if bestN == 0 {
			return
		}
		empties[depth], empties[best] = empties[best], empties[depth]
		p := empties[depth]
		i, j := p/n, p%n
		bx := i/b*b + j/b
		free := full &^ (rows[i] | cols[j] | boxes[bx])
		for free != 0 && count < limit && !exhausted {
			bit := free & -free
			free &^= bit
			rows[i] |= bit
			cols[j] |= bit
			boxes[bx] |= bit
			solve(depth + 1)
			rows[i] &^= bit
			cols[j] &^= bit
			boxes[bx] &^= bit
		}
		empties[depth], empties[best] = empties[best], empties[depth]
	}
	solve(0)
	return count, !exhausted || count >= limit
}

// Solve returns one completion of g, or false when there is none.
func Solve(g [][]int) ([][]int, bool) {
	n := len(g)
	if CountSolutions(g, 1) == 0 {
		return nil, false
	}
	b := boxSize(n)
	s := copyGrid(g)
	// Fill cell by cell, keeping the first value that leaves a solution.
	for p := 0; p < n*n; p++ {
		i, j := p/n, p%n
		if s[i][j] != 0 {
			continue
		}
		for v := 1; v <= n; v++ {
			if !canPlace(s, b, i, j, v) {
				continue
			}
			s[i][j] = v
			if CountSolutions(s, 1) == 1 {
				break
			}
			s[i][j] = 0
		}
	}
	return s, true
}

func newGrid(n int) [][]int {
	g := make([][]int, n)
	cells := make([]int, n*n)
	for i := range g {
		g[i] = cells[i*n : (i+1)*n : (i+1)*n]
	}
	return g
}

func copyGrid(src [][]int) [][]int {
	g := newGrid(len(src))
	for i := range src {
		copy(g[i], src[i])
	}
	return g
}

// pyList writes ints as a Python list: [1, 2, 3].
func pyList(xs []int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, x := range xs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(x))
	}
	b.WriteByte(']')
	return b.String()
}

// checkGrid validates an n×n grid of values 0..n.
func checkGrid(name string, g [][]int, n int) error {
	if len(g) != n {
		return fmt.Errorf("sudoku: %s has %d rows, want %d", name, len(g), n)
	}
	for i, row := range g {
		if len(row) != n {
			return fmt.Errorf("sudoku: %s row %d has %d cells, want %d", name, i+1, len(row), n)
		}
		for j, v := range row {
			if v < 0 || v > n {
				return fmt.Errorf("sudoku: %s cell (%d,%d) = %d outside 0..%d", name, i+1, j+1, v, n)
			}
		}
	}
	return nil
}
