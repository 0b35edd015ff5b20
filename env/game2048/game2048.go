package game2048

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"ragen/env"
	"ragen/internal/pyrand"
)

// Action ids, upstream's default action_lookup.
const (
	Up    = 0
	Right = 1
	Down  = 2
	Left  = 3
)

// InvalidActScore is the raw reward of a move that changes nothing (a
// constant upstream, not part of env_config).
const InvalidActScore = -0.1

// Config is the env_config of a game_2048 tag, with upstream's field
// names and defaults.
type Config struct {
	Size         int            `yaml:"size"`
	TwoProb      float64        `yaml:"two_prob"` // probability that a spawned tile is 2 (else 4)
	RenderMode   string         `yaml:"render_mode"`
	ActionLookup map[int]string `yaml:"action_lookup"`
	// UseLogReward returns 0.1·log2(raw+1) for merges and 0.0 otherwise,
	// which erases the invalid-move penalty exactly as upstream does.
	UseLogReward bool `yaml:"use_log_reward"`
	// KeepInvalidPenalty (ours, off by default): with use_log_reward, a
	// move that changes nothing returns the -0.1 penalty instead of 0.0.
	KeepInvalidPenalty bool `yaml:"keep_invalid_penalty"`
}

// DefaultConfig returns upstream's defaults.
func DefaultConfig() Config {
	return Config{Size: 4, TwoProb: 0.9, RenderMode: "text", ActionLookup: defaultLookup(), UseLogReward: true}
}

func defaultLookup() map[int]string {
	return map[int]string{Up: "Up", Right: "Right", Down: "Down", Left: "Left"}
}

// Validate reports every problem of c at once.
func (c Config) Validate() error {
	var errs []error
	if c.Size < 2 {
		errs = append(errs, fmt.Errorf("game_2048: size %d too small (want ≥ 2)", c.Size))
	}
	if c.Size > 64 {
		errs = append(errs, fmt.Errorf("game_2048: size %d too large (want ≤ 64)", c.Size))
	}
	if !(c.TwoProb >= 0 && c.TwoProb <= 1) {
		errs = append(errs, fmt.Errorf("game_2048: two_prob %v outside [0, 1]", c.TwoProb))
	}
	if c.RenderMode != "text" {
		errs = append(errs, fmt.Errorf("game_2048: render_mode %q not supported (want \"text\")", c.RenderMode))
	}
	for id := range c.ActionLookup {
		if id < 0 || id > 3 {
			errs = append(errs, fmt.Errorf("game_2048: action_lookup id %d is not a direction (want 0..3)", id))
		}
	}
	return errors.Join(errs...)
}

// RandFunc builds the generator a reset (and the spawns that follow) draws
// from. Upstream uses np.random.default_rng(seed): a spawn picks
// empties[integers(0, len)] (Intn) and makes a 2 when random() < two_prob
// (Float64).
type RandFunc func(seed int64) (env.Rand, error)

func defaultRand(seed int64) (env.Rand, error) { return pyrand.NewGenerator(seed) }

// Env is the 2048 environment.
type Env struct {
	cfg     Config
	newRand RandFunc
	rng     env.Rand
	grid    [][]int
	score   int
}

var (
	_ env.BaseEnv      = (*Env)(nil)
	_ env.ActionLookup = (*Env)(nil)
	_ env.Gridder      = (*Env)(nil)
)

func init() {
	// Upstream's default action_lookup in dict order, listed in the system prompt.
	env.RegisterPromptDefaults("game_2048", env.PromptDefaults{ActionNames: []string{"Up", "Right", "Down", "Left"}})
	env.Register("game_2048", func(m map[string]any) (env.BaseEnv, error) { return FromEnvConfig(m) })
}

// FromEnvConfig builds an env from env_config overrides (the registry's
// factory: unknown keys are errors).
func FromEnvConfig(envConfig map[string]any) (*Env, error) {
	return env.FromConfig("game_2048", DefaultConfig(), envConfig, New)
}

// New builds an env seeded like upstream on every reset.
func New(cfg Config) (*Env, error) { return NewWithRand(cfg, defaultRand) }

// NewWithRand builds an env whose resets draw from newRand(seed).
func NewWithRand(cfg Config, newRand RandFunc) (*Env, error) {
	if cfg.ActionLookup == nil {
		cfg.ActionLookup = defaultLookup()
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if newRand == nil {
		return nil, errors.New("game_2048: nil RandFunc")
	}
	e := &Env{cfg: cfg, newRand: newRand}
	e.grid = newGrid(cfg.Size)
	return e, nil
}

// NewFromState builds an env in an explicit position: grid (Size×Size,
// tiles 0 or powers of two ≥ 2), cumulative score, and the generator later
// spawns draw from.
func NewFromState(cfg Config, grid [][]int, score int, rng env.Rand) (*Env, error) {
	e, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if err := checkGrid(grid, cfg.Size); err != nil {
		return nil, err
	}
	if rng == nil {
		return nil, errors.New("game_2048: nil rng")
	}
	e.grid = copyGrid(grid)
	e.score = score
	e.rng = rng
	return e, nil
}

func checkGrid(g [][]int, n int) error {
	if len(g) != n {
		return fmt.Errorf("game_2048: grid has %d rows, want %d", len(g), n)
	}
	for i, row := range g {
		if len(row) != n {
			return fmt.Errorf("game_2048: grid row %d has %d cells, want %d", i, len(row), n)
		}
		for j, v := range row {
			if v != 0 && (v < 2 || v&(v-1) != 0) {
				return fmt.Errorf("game_2048: grid cell (%d,%d) = %d is not 0 or a power of two ≥ 2", i, j, v)
			}
		}
	}
	return nil
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

// Config returns the env's configuration.
func (e *Env) Config() Config { return e.cfg }

// Grid returns a copy of the board (rows top to bottom).
func (e *Env) Grid() [][]int { return copyGrid(e.grid) }

// Score is the sum of all merged tiles since reset.
func (e *Env) Score() int { return e.score }

// MaxTile is the largest tile on the board.
func (e *Env) MaxTile() int {
	m := 0
	for _, row := range e.grid {
		for _, v := range row {
			m = max(m, v)
		}
	}
	return m
}

// ActionLookup returns a copy of the id→name map.
func (e *Env) ActionLookup() map[int]string {
	m := make(map[int]string, len(e.cfg.ActionLookup))
	for k, v := range e.cfg.ActionLookup {
		m[k] = v
	}
	return m
}

// Reset clears the board and spawns two tiles.
func (e *Env) Reset(ctx context.Context, seed int64, _ env.Mode) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	rng, err := e.newRand(seed)
	if err != nil {
		return "", fmt.Errorf("game_2048: reset: %w", err)
	}
	e.rng = rng
	e.grid = newGrid(e.cfg.Size)
	e.score = 0
	e.spawn()
	e.spawn()
	return e.Render(), nil
}

func (e *Env) spawn() {
	n := e.cfg.Size
	empties := make([]int, 0, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if e.grid[i][j] == 0 {
				empties = append(empties, i*n+j)
			}
		}
	}
	if len(empties) == 0 {
		return
	}
	k := empties[e.rng.Intn(len(empties))]
	v := 4
	if e.rng.Float64() < e.cfg.TwoProb {
		v = 2
	}
	e.grid[k/n][k%n] = v
}

// slide compacts line toward index 0 and merges equal neighbours once,
// front to back. It returns the merge reward and whether line changed.
func slide(line []int) (reward int, changed bool) {
	w := 0
	last := -1 // index in line of a tile that may still merge
	for r := 0; r < len(line); r++ {
		v := line[r]
		if v == 0 {
			continue
		}
		if last >= 0 && line[last] == v {
			line[last] = 2 * v
			reward += 2 * v
			last = -1
			changed = true
			line[r] = 0
			continue
		}
		if w != r {
			line[w] = v
			line[r] = 0
			changed = true
		}
		last = w
		w++
	}
	return reward, changed
}

// move applies direction a to g in place; it returns the merge reward and
// whether any line changed.
func move(g [][]int, a int) (int, bool) {
	n := len(g)
	line := make([]int, n)
	total, moved := 0, false
	for k := 0; k < n; k++ {
		// Read line k in compaction order.
		for t := 0; t < n; t++ {
			line[t] = g[cellOf(a, k, t, n)[0]][cellOf(a, k, t, n)[1]]
		}
		r, ch := slide(line)
		if ch {
			moved = true
			for t := 0; t < n; t++ {
				c := cellOf(a, k, t, n)
				g[c[0]][c[1]] = line[t]
			}
		}
		total += r
	}
	return total, moved
}

// cellOf is the (row, col) of position t of line k for direction a, t = 0
// being the end tiles compact toward.
func cellOf(a, k, t, n int) [2]int {
	switch a {
	case Up:
		return [2]int{t, k}
	case Down:
		return [2]int{n - 1 - t, k}
	case Left:
		return [2]int{k, t}
	default: // Right
		return [2]int{k, n - 1 - t}
	}
}

func (e *Env) canMove(a int) bool {
	g := copyGrid(e.grid)
	_, moved := move(g, a)
	return moved
}

// actionMask is true for each direction 0..3 that would change the board
// (upstream's list of Python bools).
func (e *Env) actionMask() []bool {
	m := make([]bool, 4)
	for a := 0; a < 4; a++ {
		m[a] = e.canMove(a)
	}
	return m
}

func (e *Env) hasEmpty() bool {
	for _, row := range e.grid {
		for _, v := range row {
			if v == 0 {
				return true
			}
		}
	}
	return false
}

// Step moves the tiles in direction a.ID (0 Up, 1 Right, 2 Down, 3 Left).
func (e *Env) Step(ctx context.Context, a env.Action) (env.StepResult, error) {
	if err := ctx.Err(); err != nil {
		return env.StepResult{}, err
	}
	if e.rng == nil {
		return env.StepResult{}, errors.New("game_2048: step before reset")
	}
	var mergeReward int
	moved := false
	if a.ID >= 0 && a.ID <= 3 {
		mergeReward, moved = move(e.grid, a.ID)
	}
	res := env.StepResult{}
	// Upstream's info: the three flags first, max_tile (and success when
	// max_tile ≥ 2048) only on the terminal step.
	info := env.Info{"action_is_effective": moved, "action_is_valid": moved, "success": false}
	raw := InvalidActScore
	if moved {
		e.spawn()
		e.score += mergeReward
		raw = float64(mergeReward) // float(reward_merge)
		res.Done = !e.hasEmpty() && !e.canMove(0) && !e.canMove(1) && !e.canMove(2) && !e.canMove(3)
		if res.Done {
			maxTile := e.MaxTile()
			info["max_tile"] = maxTile
			info["success"] = maxTile >= 2048
		}
	}
	// The returned reward is always a Python float: raw (float) or, with
	// use_log_reward, float(np.log2(raw + 1.0)) * 0.1 for raw > 0 else 0.0.
	res.Reward = raw
	if e.cfg.UseLogReward {
		res.Reward = 0.0
		switch {
		case raw > 0:
			res.Reward = log2(raw+1.0) * 0.1
		case !moved && e.cfg.KeepInvalidPenalty:
			res.Reward = InvalidActScore
		}
	}
	info["grid"] = e.Grid()
	info["action_mask"] = e.actionMask()
	info["score"] = e.score
	info["raw_reward"] = raw
	res.Info = info
	res.Observation = e.Render()
	return res, nil
}

// Render is the text observation.
func (e *Env) Render() string {
	var b strings.Builder
	b.WriteString("Current 2048 Grid:\n")
	for i, row := range e.grid {
		fmt.Fprintf(&b, "Row %d: [", i+1)
		for j, v := range row {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.Itoa(v))
		}
		b.WriteString("]\n")
	}
	b.WriteString("\nValid Actions: ")
	ids := make([]int, 0, len(e.cfg.ActionLookup))
	for id := range e.cfg.ActionLookup {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	var valid []string
	for _, id := range ids {
		if e.canMove(id) {
			valid = append(valid, fmt.Sprintf("%d(%s)", id, e.cfg.ActionLookup[id]))
		}
	}
	if len(valid) == 0 {
		b.WriteString("None")
	} else {
		b.WriteString(strings.Join(valid, ", "))
	}
	b.WriteString(".\nGoal: Merge same numbers to reach 2048.\n")
	fmt.Fprintf(&b, "Current Score: %d\nWhat is your next move?", e.score)
	return b.String()
}

// Close does nothing.
func (e *Env) Close() error { return nil }

// PromptFacts reports the action names of the env's own action_lookup in
// id order, for ragen_prompt_from_env_config.
func (e *Env) PromptFacts() env.PromptDefaults {
	return env.PromptDefaults{ActionNames: env.NamesInIDOrder(e.cfg.ActionLookup)}
}
