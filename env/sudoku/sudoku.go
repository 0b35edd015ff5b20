package sudoku

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"ragen/env"
	"ragen/internal/pyrand"
)

// Config is the env_config of a sudoku tag, with upstream's field names
// and defaults.
type Config struct {
	GridSize         int    `yaml:"grid_size"` // 4, 9 or 16
	MaxSteps         int    `yaml:"max_steps"`
	Difficulty       string `yaml:"difficulty"` // easy | medium | hard: 40/50/60 % of cells blank
	RenderMode       string `yaml:"render_mode"`
	ShowConflicts    bool   `yaml:"show_conflicts"`
	ShowValidNumbers bool   `yaml:"show_valid_numbers"`
	ShowCandidates   bool   `yaml:"show_candidates"` // accepted, unused (as upstream)
	// RenderFormat is simple | detailed | with_feedback.
	RenderFormat          string  `yaml:"render_format"`
	CorrectPlacementScore float64 `yaml:"correct_placement_score"`
	InvalidActionScore    float64 `yaml:"invalid_action_score"`
	CompletionBonus       float64 `yaml:"completion_bonus"`
	// UniqueSolution (ours, off by default) blanks only cells that keep the
	// puzzle uniquely solvable; upstream does not check uniqueness.
	UniqueSolution bool `yaml:"unique_solution"`
	// GenerateMaxSteps (ours; 0 = 5,000,000, about 2 s) bounds the backtracking of
	// puzzle generation: some 16×16 seeds would otherwise run for hours
	// (upstream hangs on them); reset then fails with an error.
	GenerateMaxSteps int `yaml:"generate_max_steps"`
	// InvalidEndsAtMaxSteps (ours, off by default): an invalid action on or
	// past step max_steps ends the episode too. Upstream ends it only on a
	// placement (envs.md §6), so invalid actions can run past max_steps.
	InvalidEndsAtMaxSteps bool `yaml:"invalid_ends_at_max_steps"`
	// IntScores names the score fields given as Python ints in env_config
	// ("correct_placement_score", "invalid_action_score",
	// "completion_bonus"): upstream's sums of ints stay ints and print
	// without ".0". FromEnvConfig fills it from env_config.
	IntScores map[string]bool `yaml:"-"`
}

// maxNodes is the backtracking budget of one generation: far above what
// 4×4 and 9×9 boards need (hundreds of steps), enough for most 16×16 seeds
// (2 of seeds 0..59 exceed it).
func (c Config) maxNodes() int {
	if c.GenerateMaxSteps > 0 {
		return c.GenerateMaxSteps
	}
	return defaultGenerateMaxSteps
}

const defaultGenerateMaxSteps = 5_000_000

// ValidButWrongScore is the reward of a rule-abiding placement that
// differs from the stored solution with the default scores: upstream gives
// correct_placement_score * 0.5.
const ValidButWrongScore = 0.5

// DefaultConfig returns upstream's defaults.
func DefaultConfig() Config {
	return Config{
		GridSize: 9, MaxSteps: 81, Difficulty: "easy", RenderMode: "text",
		ShowConflicts: true, ShowValidNumbers: true, RenderFormat: "detailed",
		CorrectPlacementScore: 1.0, InvalidActionScore: -0.1, CompletionBonus: 10.0,
	}
}

var fractions = map[string]float64{"easy": 0.4, "medium": 0.5, "hard": 0.6}

// Validate reports every problem of c at once.
func (c Config) Validate() error {
	var errs []error
	if c.GridSize != 4 && c.GridSize != 9 && c.GridSize != 16 {
		errs = append(errs, fmt.Errorf("sudoku: grid_size %d not supported (want 4, 9 or 16)", c.GridSize))
	}
	if _, ok := fractions[c.Difficulty]; !ok {
		errs = append(errs, fmt.Errorf("sudoku: difficulty %q unknown (want easy, medium or hard)", c.Difficulty))
	}
	if c.RenderMode != "text" {
		errs = append(errs, fmt.Errorf("sudoku: render_mode %q not supported (want \"text\")", c.RenderMode))
	}
	switch c.RenderFormat {
	case "simple", "detailed", "with_feedback":
	default:
		errs = append(errs, fmt.Errorf("sudoku: render_format %q unknown (want simple, detailed or with_feedback)", c.RenderFormat))
	}
	if c.MaxSteps < 0 {
		errs = append(errs, fmt.Errorf("sudoku: max_steps %d is negative", c.MaxSteps))
	}
	return errors.Join(errs...)
}

// RandFunc builds the generator a reset draws its puzzle from. Upstream
// seeds Python's global random with the seed (Intn = randbelow).
type RandFunc func(seed int64) (env.Rand, error)

func defaultRand(seed int64) (env.Rand, error) { return pyrand.NewRandom(seed), nil }

// Env is the Sudoku environment.
type Env struct {
	cfg      Config
	newRand  RandFunc
	n, b     int
	solution [][]int
	grid     [][]int
	initial  [][]bool
	numSteps int
	feedback string // last_action_feedback
}

var _ env.BaseEnv = (*Env)(nil)

func init() {
	env.RegisterPromptDefaults("sudoku", env.PromptDefaults{}) // no grid_vocab, no action_lookup
	env.Register("sudoku", func(m map[string]any) (env.BaseEnv, error) { return FromEnvConfig(m) })
}

// FromEnvConfig builds an env from env_config overrides (the registry's
// factory: unknown keys are errors).
func FromEnvConfig(envConfig map[string]any) (*Env, error) {
	return env.FromConfig("sudoku", DefaultConfig(), envConfig, func(c Config) (*Env, error) {
		c.IntScores = env.IntKeys(envConfig, "correct_placement_score", "invalid_action_score", "completion_bonus")
		return New(c)
	})
}

// New builds an env that generates puzzles like upstream.
func New(cfg Config) (*Env, error) { return NewWithRand(cfg, defaultRand) }

// NewWithRand builds an env whose resets draw from newRand(seed).
func NewWithRand(cfg Config, newRand RandFunc) (*Env, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if newRand == nil {
		return nil, errors.New("sudoku: nil RandFunc")
	}
	n := cfg.GridSize
	e := &Env{cfg: cfg, newRand: newRand, n: n, b: boxSize(n)}
	e.load(newGrid(n), newGrid(n))
	return e, nil
}

// NewFromPuzzle builds an env in an explicit position, as if reset had
// produced it: puzzle holds the initial cells (0 = empty), solution the
// stored answer (nil: solved here; an error if the puzzle has none).
func NewFromPuzzle(cfg Config, puzzle, solution [][]int) (*Env, error) {
	if cfg.GridSize == 0 {
		cfg.GridSize = len(puzzle)
	}
	e, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if err := checkGrid("puzzle", puzzle, e.n); err != nil {
		return nil, err
	}
	if solution == nil {
		s, ok := Solve(puzzle)
		if !ok {
			return nil, errors.New("sudoku: puzzle has no solution")
		}
		solution = s
	}
	if err := checkGrid("solution", solution, e.n); err != nil {
		return nil, err
	}
	for i := range puzzle {
		for j, v := range puzzle[i] {
			if solution[i][j] == 0 {
				return nil, fmt.Errorf("sudoku: solution cell (%d,%d) is empty", i+1, j+1)
			}
			if v != 0 && v != solution[i][j] {
				return nil, fmt.Errorf("sudoku: puzzle cell (%d,%d) = %d differs from solution %d", i+1, j+1, v, solution[i][j])
			}
		}
	}
	e.load(puzzle, solution)
	return e, nil
}

func (e *Env) load(puzzle, solution [][]int) {
	e.solution = copyGrid(solution)
	e.grid = copyGrid(puzzle)
	e.initial = make([][]bool, e.n)
	for i := range e.initial {
		e.initial[i] = make([]bool, e.n)
		for j := range e.initial[i] {
			e.initial[i][j] = puzzle[i][j] != 0
		}
	}
	e.numSteps = 0
	e.feedback = ""
}

// Config returns the env's configuration.
func (e *Env) Config() Config { return e.cfg }

// Grid returns a copy of the current board (0 = empty).
func (e *Env) Grid() [][]int { return copyGrid(e.grid) }

// Solution returns a copy of the stored solution.
func (e *Env) Solution() [][]int { return copyGrid(e.solution) }

// Reset generates a new puzzle from seed.
func (e *Env) Reset(ctx context.Context, seed int64, _ env.Mode) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	rng, err := e.newRand(seed)
	if err != nil {
		return "", fmt.Errorf("sudoku: reset: %w", err)
	}
	sol, err := Generate(ctx, e.n, rng, e.cfg.maxNodes())
	if err != nil {
		return "", fmt.Errorf("sudoku: reset seed %d: %w", seed, err)
	}
	var p [][]int
	if e.cfg.UniqueSolution {
		p = UniquePuzzle(sol, fractions[e.cfg.Difficulty], rng)
	} else {
		p = Puzzle(sol, fractions[e.cfg.Difficulty], rng)
	}
	e.load(p, sol)
	return e.Render(), nil
}

// conflictsWith lists where v already appears for cell (r,c): "row R",
// "column C", "box (I,J)", 1-based, the cell itself included.
func (e *Env) conflictsWith(r, c, v int) []string {
	var out []string
	for k := 0; k < e.n; k++ {
		if e.grid[r][k] == v {
			out = append(out, fmt.Sprintf("row %d", r+1))
			break
		}
	}
	for k := 0; k < e.n; k++ {
		if e.grid[k][c] == v {
			out = append(out, fmt.Sprintf("column %d", c+1))
			break
		}
	}
	bi, bj := r/e.b*e.b, c/e.b*e.b
box:
	for i := bi; i < bi+e.b; i++ {
		for j := bj; j < bj+e.b; j++ {
			if e.grid[i][j] == v {
				out = append(out, fmt.Sprintf("box (%d,%d)", r/e.b+1, c/e.b+1))
				break box
			}
		}
	}
	return out
}

// ValidNumbers lists the values absent from the row, column and box of
// cell (r,c) (0-based) on the current board; like upstream's
// get_valid_numbers it is empty when the cell already holds a value (a
// user placement being overwritten, say).
func (e *Env) ValidNumbers(r, c int) []int {
	out := []int{}
	if e.grid[r][c] != 0 {
		return out
	}
	for v := 1; v <= e.n; v++ {
		if canPlace(e.grid, e.b, r, c, v) {
			out = append(out, v)
		}
	}
	return out
}

func (e *Env) counts() (filled, initial int) {
	for i := range e.grid {
		for j, v := range e.grid[i] {
			if v != 0 {
				filled++
			}
			if e.initial[i][j] {
				initial++
			}
		}
	}
	return filled, initial
}

// conflictCells marks every filled cell whose value repeats in its row,
// column or box.
func (e *Env) conflictCells() [][]bool {
	n, b := e.n, e.b
	out := make([][]bool, n)
	for i := range out {
		out[i] = make([]bool, n)
	}
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			v := e.grid[i][j]
			if v == 0 {
				continue
			}
			for k := 0; k < n && !out[i][j]; k++ {
				if (k != j && e.grid[i][k] == v) || (k != i && e.grid[k][j] == v) {
					out[i][j] = true
				}
			}
			bi, bj := i/b*b, j/b*b
			for r := bi; r < bi+b && !out[i][j]; r++ {
				for c := bj; c < bj+b; c++ {
					if (r != i || c != j) && e.grid[r][c] == v {
						out[i][j] = true
						break
					}
				}
			}
		}
	}
	return out
}

// Solved reports a complete board without conflicts.
func (e *Env) Solved() bool {
	filled, _ := e.counts()
	if filled != e.n*e.n {
		return false
	}
	for _, row := range e.conflictCells() {
		for _, c := range row {
			if c {
				return false
			}
		}
	}
	return true
}

// Step applies a placement action (raw text, see ParseAction).
func (e *Env) Step(ctx context.Context, a env.Action) (env.StepResult, error) {
	if err := ctx.Err(); err != nil {
		return env.StepResult{}, err
	}
	e.numSteps++
	res := env.StepResult{}
	// Upstream's info per outcome: a rejected action carries the three
	// flags, error (and valid_numbers for a rule conflict); a placement
	// carries the flags and correct_placement, steps_remaining,
	// cells_filled, cells_remaining. Every numeric key becomes a metric, so
	// the key sets matter.
	invalid := func(errMsg string) env.Info {
		res.Reward, res.RewardIsInt = e.cfg.InvalidActionScore, e.cfg.IntScores["invalid_action_score"]
		res.Done = e.cfg.InvalidEndsAtMaxSteps && e.numSteps >= e.cfg.MaxSteps
		return env.Info{"action_is_effective": false, "action_is_valid": false, "success": false, "error": errMsg}
	}
	p, err := ParseAction(a.Text, e.n)
	switch {
	case err != nil:
		e.feedback = "❌ Invalid action format: " + err.Error()
		res.Info = invalid(err.Error())
	case e.initial[p.Row][p.Col]:
		e.feedback = fmt.Sprintf("❌ Cannot modify initial cell at (%d,%d)", p.Row+1, p.Col+1)
		res.Info = invalid("Cannot modify initial cells")
	default:
		if where := e.conflictsWith(p.Row, p.Col, p.Num); len(where) > 0 {
			conflict := fmt.Sprintf("%d conflicts with %s", p.Num, strings.Join(where, ", "))
			e.feedback = "❌ Invalid placement: " + conflict
			validNums := e.ValidNumbers(p.Row, p.Col)
			if len(validNums) > 0 {
				e.feedback += fmt.Sprintf("\n   Valid numbers for (%d,%d): %s", p.Row+1, p.Col+1, pyList(validNums))
			}
			res.Info = invalid("Number " + conflict)
			res.Info["valid_numbers"] = validNums
			break
		}
		e.grid[p.Row][p.Col] = p.Num
		correct := e.solution[p.Row][p.Col] == p.Num
		if correct {
			res.Reward, res.RewardIsInt = e.cfg.CorrectPlacementScore, e.cfg.IntScores["correct_placement_score"]
			e.feedback = fmt.Sprintf("✓ Correct! Placed %d at (%d,%d)", p.Num, p.Row+1, p.Col+1)
		} else {
			res.Reward = e.cfg.CorrectPlacementScore * 0.5
			e.feedback = fmt.Sprintf("⚠ Placed %d at (%d,%d) - Valid but not optimal", p.Num, p.Row+1, p.Col+1)
		}
		solved := e.Solved()
		if solved {
			res.Reward += e.cfg.CompletionBonus
			res.RewardIsInt = res.RewardIsInt && e.cfg.IntScores["completion_bonus"]
			e.feedback += "\n🎉 Congratulations! Puzzle solved!"
		}
		res.Done = solved || e.numSteps >= e.cfg.MaxSteps
		filled, _ := e.counts()
		res.Info = env.Info{
			"action_is_effective": true,
			"action_is_valid":     true,
			"success":             solved,
			"correct_placement":   correct,
			"steps_remaining":     e.cfg.MaxSteps - e.numSteps,
			"cells_filled":        filled,
			"cells_remaining":     e.n*e.n - filled,
		}
	}
	res.Observation = e.Render()
	return res, nil
}

// Render draws the board in the configured render_format.
func (e *Env) Render() string {
	switch e.cfg.RenderFormat {
	case "simple":
		return strings.Join(e.gridLines(true), "\n")
	case "with_feedback":
		return e.renderFull(true)
	default:
		return e.renderFull(false)
	}
}

// gridLines draws the rows; simple uses "v " cells, otherwise 3-wide cells
// with initial [v] and conflicting *v* marks.
func (e *Env) gridLines(simple bool) []string {
	n, b := e.n, e.b
	var conflicts [][]bool
	dash := strings.Repeat("-", n*2+b-1)
	if !simple {
		conflicts = e.conflictCells()
		dash = strings.Repeat("-", n*3+b-1)
	}
	var lines []string
	var row strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 && i%b == 0 {
			lines = append(lines, dash)
		}
		row.Reset()
		for j := 0; j < n; j++ {
			if j > 0 && j%b == 0 {
				row.WriteString("| ")
			}
			v := e.grid[i][j]
			switch {
			case simple && v == 0:
				row.WriteString(". ")
			case simple:
				fmt.Fprintf(&row, "%d ", v)
			case v == 0:
				row.WriteString(" . ")
			case e.initial[i][j]:
				fmt.Fprintf(&row, "[%d]", v)
			case conflicts[i][j]:
				fmt.Fprintf(&row, "*%d*", v)
			default:
				fmt.Fprintf(&row, " %d ", v)
			}
		}
		lines = append(lines, strings.TrimRight(row.String(), " \t"))
	}
	return lines
}

func (e *Env) renderFull(extras bool) string {
	bar := strings.Repeat("=", 50)
	lines := []string{bar, "SUDOKU PUZZLE", bar}
	lines = append(lines, e.gridLines(false)...)
	lines = append(lines, "", "Legend: [N]=initial cell, N=user-placed, *N*=conflict, .=empty")
	if e.feedback != "" {
		lines = append(lines, "", e.feedback)
	}
	if !extras {
		return strings.Join(lines, "\n")
	}
	if e.cfg.ShowConflicts {
		var cs []string
		for i, row := range e.conflictCells() {
			for j, c := range row {
				if c {
					cs = append(cs, fmt.Sprintf("  - Cell (%d,%d): %d", i+1, j+1, e.grid[i][j]))
				}
			}
		}
		if len(cs) > 0 {
			lines = append(lines, "", "⚠ CONFLICTS DETECTED:")
			lines = append(lines, cs...)
		}
	}
	filled, initial := e.counts()
	empty := e.n*e.n - filled
	if e.cfg.ShowValidNumbers && empty >= 1 && empty <= 10 {
		lines = append(lines, "", "💡 VALID NUMBERS FOR EMPTY CELLS:")
		for i := range e.grid {
			for j, v := range e.grid[i] {
				if v != 0 {
					continue
				}
				if vs := e.ValidNumbers(i, j); len(vs) > 0 {
					lines = append(lines, fmt.Sprintf("  - (%d,%d): %s", i+1, j+1, pyList(vs)))
				}
			}
		}
	}
	lines = append(lines, "",
		fmt.Sprintf("Progress: %d/%d cells filled (%d initial, %d placed)", filled, e.n*e.n, initial, filled-initial),
		fmt.Sprintf("Steps: %d/%d", e.numSteps, e.cfg.MaxSteps))
	return strings.Join(lines, "\n")
}

// Close does nothing.
func (e *Env) Close() error { return nil }
