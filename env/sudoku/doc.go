// Package sudoku is the Sudoku environment (upstream env_type "sudoku",
// shared spec envs.md §6) for 4×4, 9×9 and 16×16 boards.
//
// Reset generates a full grid by randomised backtracking and blanks
// 40/50/60 % of the cells (easy/medium/hard), drawing from CPython's
// random seeded with the reset seed, so puzzles equal upstream's bit for
// bit. Actions are text such as "place 5 at row 2 col 3" or "2,3,5" (see
// [ParseAction]). A placement that breaks no rule earns
// correct_placement_score (1.0) when it matches the stored solution and
// half of it otherwise, plus completion_bonus (10.0) when the board is
// solved; an unparsable action, an initial cell or a rule conflict costs
// 0.1 and, as upstream, never ends the episode.
//
// Upstream does not check that a puzzle has one solution; the env_config
// option unique_solution (ours, off by default) blanks only cells that keep
// the solution unique, verified with [CountSolutions].
package sudoku
