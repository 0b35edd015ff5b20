package sudoku

import (
	"errors"
	"fmt"
)

// SetBoard puts the env in a position a player reached: puzzle holds the
// given cells (0 = empty), placed the cells the player has filled in since
// (0 = none; each must be empty in puzzle; values may be wrong, as a
// player's may). Given cells stay fixed; placed ones can be overwritten or
// cleared like any move. The solution is solved from puzzle (an error if it
// has none). The step counter restarts at 0.
func (e *Env) SetBoard(puzzle, placed [][]int) error {
	if err := checkGrid("puzzle", puzzle, e.n); err != nil {
		return err
	}
	if placed != nil {
		if err := checkGrid("placed", placed, e.n); err != nil {
			return err
		}
	}
	sol, ok := Solve(puzzle)
	if !ok {
		return errors.New("sudoku: puzzle has no solution")
	}
	for i := range puzzle {
		for j := range puzzle[i] {
			if placed != nil && placed[i][j] != 0 && puzzle[i][j] != 0 {
				return fmt.Errorf("sudoku: placed cell (%d,%d) = %d is a given cell of the puzzle", i+1, j+1, placed[i][j])
			}
		}
	}
	e.load(puzzle, sol)
	for i := range placed {
		for j, v := range placed[i] {
			if v != 0 {
				e.grid[i][j] = v
			}
		}
	}
	return nil
}
