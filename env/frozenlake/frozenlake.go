package frozenlake

import (
	"context"
	"fmt"
	"strings"

	"ragen/env"
	"ragen/internal/pyrand"
)

func init() {
	env.Register("frozen_lake", func(m map[string]any) (env.BaseEnv, error) { return FromEnvConfig(m) })
	env.RegisterPromptDefaults("frozen_lake", env.PromptDefaults{
		ObservationFormat: "grid",
		GridVocab: [][2]string{{"P", "player"}, {"_", "empty"}, {"O", "hole"}, {"G", "goal"},
			{"X", "player in hole"}, {"√", "player on goal"}},
		ActionNames: []string{"Left", "Down", "Right", "Up"},
	})
}

// Config is upstream's FrozenLakeEnvConfig.
type Config struct {
	Size              int               `yaml:"size"`
	P                 float64           `yaml:"p"` // probability a tile is frozen
	SuccessRate       float64           `yaml:"success_rate"`
	IsSlippery        bool              `yaml:"is_slippery"`
	MapSeed           *int64            `yaml:"map_seed"`
	RenderMode        string            `yaml:"render_mode"`
	ObservationFormat string            `yaml:"observation_format"` // grid | coord | grid_coord
	ActionMap         map[int]int       `yaml:"action_map"`         // our id -> gym action
	MapLookup         map[string]int    `yaml:"map_lookup"`         // tile letter -> render code
	GridLookup        map[int]string    `yaml:"grid_lookup"`
	GridVocab         map[string]string `yaml:"grid_vocab"`
	ActionLookupMap   map[int]string    `yaml:"action_lookup"`
}

// MaxSize bounds size (not upstream, which has none: size=2000 ran an env
// server out of memory).
const MaxSize = 64

// DefaultConfig returns upstream's defaults.
func DefaultConfig() Config {
	return Config{
		Size: 4, P: 0.9, SuccessRate: 0.8, IsSlippery: true, RenderMode: "text", ObservationFormat: "grid",
		ActionMap:  map[int]int{1: 0, 2: 1, 3: 2, 4: 3},
		MapLookup:  map[string]int{"P": 0, "F": 1, "H": 2, "G": 3},
		GridLookup: map[int]string{0: "P", 1: "_", 2: "O", 3: "G", 4: "X", 5: "√"},
		GridVocab: map[string]string{"P": "player", "_": "empty", "O": "hole", "G": "goal",
			"X": "player in hole", "√": "player on goal"},
		ActionLookupMap: map[int]string{1: "Left", 2: "Down", 3: "Right", 4: "Up"},
	}
}

// Validate reports every unusable config value at once.
func (c Config) Validate() error {
	var errs []string
	if c.Size < 2 || c.Size > MaxSize {
		errs = append(errs, fmt.Sprintf("size %d: must be in [2, %d]", c.Size, MaxSize))
	}
	if !(c.P > 0 && c.P <= 1) {
		errs = append(errs, fmt.Sprintf("p %v: must be in (0, 1]", c.P))
	}
	// success_rate is not range-checked, as gymnasium: the slip draw takes
	// the first cumulative probability above u, which is well defined for
	// any value (1.5 always moves as intended).
	switch c.ObservationFormat {
	case "grid", "coord", "grid_coord":
	default:
		errs = append(errs, fmt.Sprintf("observation_format %q: want grid, coord or grid_coord", c.ObservationFormat))
	}
	if c.RenderMode != "text" {
		errs = append(errs, fmt.Sprintf("render_mode %q: only \"text\" is supported", c.RenderMode))
	}
	for _, k := range []string{"F", "H", "G"} {
		if _, ok := c.MapLookup[k]; !ok {
			errs = append(errs, fmt.Sprintf("map_lookup lacks %q", k))
		}
	}
	for id, a := range c.ActionMap {
		if a < 0 || a > 3 {
			errs = append(errs, fmt.Sprintf("action_map[%d]=%d: gym actions are 0..3", id, a))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("frozenlake: %s", strings.Join(errs, "; "))
	}
	return nil
}

// Gym actions.
const (
	Left  = 0
	Down  = 1
	Right = 2
	Up    = 3
)

// Env is the FrozenLake env.
type Env struct {
	cfg        Config
	desc       [][]byte // 'S', 'F', 'H', 'G'
	rows, cols int
	pos        int // player cell, row*cols+col
	rng        env.Rand
	ready      bool
}

// FromEnvConfig builds an env from env_config overrides (the registry's
// factory: unknown keys are errors).
func FromEnvConfig(envConfig map[string]any) (*Env, error) {
	return env.FromConfig("frozenlake", DefaultConfig(), envConfig, New)
}

// New builds an env from a config.
func New(cfg Config) (*Env, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	e := &Env{cfg: cfg}
	if cfg.MapSeed != nil {
		if _, err := e.Reset(context.Background(), *cfg.MapSeed, env.ModeTrain); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// NewFromMap builds an env in an explicit state: desc rows of 'S', 'F',
// 'H', 'G' (one S, at least one G), the player on S, and rng as the slip
// source (one Float64 per step, as gymnasium's categorical_sample).
func NewFromMap(cfg Config, desc []string, rng env.Rand) (*Env, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	e := &Env{cfg: cfg}
	if err := e.setMap(desc); err != nil {
		return nil, err
	}
	e.rng = rng
	return e, nil
}

func (e *Env) setMap(desc []string) error {
	if len(desc) == 0 {
		return fmt.Errorf("frozenlake: empty map")
	}
	rows, cols := len(desc), len(desc[0])
	grid := make([][]byte, rows)
	start, goals := -1, 0
	for r, line := range desc {
		if len(line) != cols {
			return fmt.Errorf("frozenlake: map row %d has %d cells, want %d", r, len(line), cols)
		}
		grid[r] = []byte(line)
		for c := range cols {
			switch line[c] {
			case 'S':
				if start >= 0 {
					return fmt.Errorf("frozenlake: map has more than one start")
				}
				start = r*cols + c
			case 'G':
				goals++
			case 'F', 'H':
			default:
				return fmt.Errorf("frozenlake: map cell (%d, %d) is %q, want one of S F H G", r, c, line[c])
			}
		}
	}
	if start < 0 || goals == 0 {
		return fmt.Errorf("frozenlake: map needs one S and at least one G")
	}
	e.desc, e.rows, e.cols, e.pos, e.ready = grid, rows, cols, start, true
	return nil
}

// GenerateMap is upstream's generate_random_map(size, p, seed) with a
// PCG64 Generator seeded with seed: repeat { size*size tiles via
// choice(["F","H"], p=[p, 1-p]); start = two integers(0, size); goal = two
// more; if start != goal, place S and G and accept when a DFS from S over
// non-H cells reaches G }.
func GenerateMap(size int, p float64, seed int64) ([]string, error) {
	g, err := pyrand.NewGenerator(seed)
	if err != nil {
		return nil, fmt.Errorf("frozenlake: map seed: %w", err)
	}
	if p > 1 {
		p = 1
	}
	probs := []float64{p, 1 - p}
	board := make([][]byte, size)
	for r := range board {
		board[r] = make([]byte, size)
	}
	for {
		tiles, err := g.ChoicePN(probs, size*size)
		if err != nil {
			return nil, fmt.Errorf("frozenlake: %w", err)
		}
		for i, t := range tiles {
			board[i/size][i%size] = "FH"[t]
		}
		sr, sc := g.Integers(0, int64(size)), g.Integers(0, int64(size))
		gr, gc := g.Integers(0, int64(size)), g.Integers(0, int64(size))
		if sr == gr && sc == gc {
			continue
		}
		board[sr][sc] = 'S'
		board[gr][gc] = 'G'
		if reachable(board, int(sr), int(sc)) {
			out := make([]string, size)
			for r := range board {
				out[r] = string(board[r])
			}
			return out, nil
		}
	}
}

// reachable: DFS (LIFO stack) from (sr, sc) over non-H cells finds a G.
func reachable(board [][]byte, sr, sc int) bool {
	n := len(board)
	seen := make([]bool, n*n)
	stack := []int{sr*n + sc}
	for len(stack) > 0 {
		cur := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[cur] {
			continue
		}
		seen[cur] = true
		r, c := cur/n, cur%n
		for _, d := range [4][2]int{{1, 0}, {0, 1}, {-1, 0}, {0, -1}} {
			nr, nc := r+d[0], c+d[1]
			if nr < 0 || nr >= n || nc < 0 || nc >= n {
				continue
			}
			switch board[nr][nc] {
			case 'G':
				return true
			case 'H':
				continue
			}
			stack = append(stack, nr*n+nc)
		}
	}
	return false
}

// Reset regenerates the map from seed, then seeds the env's own Generator
// with seed again and draws the (one-hot) initial-state sample, as
// gymnasium's reset(seed) does. The player starts on S.
func (e *Env) Reset(_ context.Context, seed int64, _ env.Mode) (string, error) {
	desc, err := GenerateMap(e.cfg.Size, e.cfg.P, seed)
	if err != nil {
		return "", err
	}
	if err := e.setMap(desc); err != nil {
		return "", err
	}
	g, err := pyrand.NewGenerator(seed)
	if err != nil {
		return "", fmt.Errorf("frozenlake: reset: %w", err)
	}
	_ = g.Random() // categorical_sample(initial_state_distrib): one draw
	e.rng = g
	return e.Render(), nil
}

// move is gymnasium's inc(row, col, a): moving off the board keeps the
// coordinate.
func (e *Env) move(pos, a int) int {
	r, c := pos/e.cols, pos%e.cols
	switch a {
	case Left:
		c = max(c-1, 0)
	case Down:
		r = min(r+1, e.rows-1)
	case Right:
		c = min(c+1, e.cols-1)
	case Up:
		r = max(r-1, 0)
	}
	return r*e.cols + c
}

func (e *Env) tile(pos int) byte { return e.desc[pos/e.cols][pos%e.cols] }

// Step executes action a.ID (1 Left, 2 Down, 3 Right, 4 Up by default).
// On G or H the state is absorbing (reward 0, done; one draw is still
// consumed, as gymnasium samples its one-entry transition list). Otherwise
// the candidates are [(a-1)%4, a, (a+1)%4] with probabilities
// [(1-sr)/2, sr, (1-sr)/2] (only a when not slippery); u = Float64() picks
// the first index whose running sum exceeds u (index 0 if none does, as
// NumPy's argmax over all-false). Reward is int 1 on reaching G. An id
// outside action_map is an invalid action: no draw, no move, reward 0.
func (e *Env) Step(_ context.Context, a env.Action) (env.StepResult, error) {
	if !e.ready {
		return env.StepResult{}, fmt.Errorf("frozenlake: Step before Reset")
	}
	gymA, ok := e.cfg.ActionMap[a.ID]
	if !ok {
		return env.StepResult{Observation: e.Render(), RewardIsInt: true, Info: env.Info{
			"action_is_effective": false, "action_is_valid": false, "success": e.tile(e.pos) == 'G'}}, nil
	}
	prev := e.pos
	done := false
	reward := 0.0
	if t := e.tile(e.pos); t == 'G' || t == 'H' {
		_ = e.rng.Float64()
		done = true
	} else {
		var cands []int
		var probs []float64
		if e.cfg.IsSlippery {
			fail := (1 - e.cfg.SuccessRate) / 2
			cands = []int{(gymA + 3) % 4, gymA, (gymA + 1) % 4}
			probs = []float64{fail, e.cfg.SuccessRate, fail}
		} else {
			cands = []int{gymA}
			probs = []float64{1}
		}
		u := e.rng.Float64()
		pick, cum := 0, 0.0
		for i, p := range probs {
			cum += p
			if cum > u {
				pick = i
				break
			}
		}
		e.pos = e.move(e.pos, cands[pick])
		t := e.tile(e.pos)
		done = t == 'G' || t == 'H'
		if t == 'G' {
			reward = 1
		}
	}
	obs := e.Render()
	return env.StepResult{Observation: obs, Reward: reward, RewardIsInt: true, Done: done, Info: env.Info{
		"action_is_effective": prev != e.pos, "action_is_valid": true, "success": e.tile(e.pos) == 'G'}}, nil
}

// Render returns the observation in the configured format.
func (e *Env) Render() string {
	s, _ := e.RenderFormat(e.cfg.ObservationFormat)
	return s
}

// RenderFormat renders in an explicit format (upstream's render(mode) with
// mode grid, coord or grid_coord); another format is an error.
func (e *Env) RenderFormat(format string) (string, error) {
	if !e.ready {
		return "", nil
	}
	switch format {
	case "grid":
		return e.renderGrid(), nil
	case "coord":
		return e.renderCoord(), nil
	case "grid_coord":
		return "Coordinates: \n" + e.renderCoord() + "\nGrid Map: \n" + e.renderGrid(), nil
	}
	return "", fmt.Errorf("frozenlake: invalid observation format %q", format)
}

// Render codes of the player's cell.
const (
	codePlayer       = 0
	codePlayerInHole = 4
	codePlayerOnGoal = 5
)

// renderGrid is upstream's grid render: S shown as F, each tile mapped
// through map_lookup, then the player's cell set to 4 on a hole, 5 on the
// goal, else 0; codes are printed through grid_lookup ("?" if missing).
func (e *Env) renderGrid() string {
	var b strings.Builder
	for r := range e.rows {
		if r > 0 {
			b.WriteByte('\n')
		}
		for c := range e.cols {
			pos := r*e.cols + c
			t := e.desc[r][c]
			var code int
			switch {
			case pos == e.pos && t == 'H':
				code = codePlayerInHole
			case pos == e.pos && t == 'G':
				code = codePlayerOnGoal
			case pos == e.pos:
				code = codePlayer
			case t == 'S':
				code = e.cfg.MapLookup["F"]
			default:
				code = e.cfg.MapLookup[string(t)]
			}
			s, ok := e.cfg.GridLookup[code]
			if !ok {
				s = "?"
			}
			b.WriteString(s)
		}
	}
	return b.String()
}

func (e *Env) renderCoord() string {
	var start, goal, holes []string
	for r := range e.rows {
		for c := range e.cols {
			p := fmt.Sprintf("(%d, %d)", r, c)
			switch e.desc[r][c] {
			case 'S':
				start = append(start, p)
			case 'G':
				goal = append(goal, p)
			case 'H':
				holes = append(holes, p)
			}
		}
	}
	pr, pc := e.pos/e.cols, e.pos%e.cols
	player := []string{fmt.Sprintf("(%d, %d)", pr, pc)}
	playerLabel := "Player"
	switch e.tile(e.pos) {
	case 'G':
		playerLabel = "Player on goal"
	case 'H':
		playerLabel = "Player in hole"
	}
	lines := []string{fmt.Sprintf("Board size: %d rows x %d cols (zero-indexed).", e.rows, e.cols)}
	for _, l := range []struct {
		label string
		cells []string
	}{{"Start", start}, {"Goal", goal}, {playerLabel, player}, {"Holes", holes}} {
		if len(l.cells) > 0 {
			lines = append(lines, l.label+": "+strings.Join(l.cells, ", "))
		}
	}
	return strings.Join(lines, "\n")
}

// ActionLookup returns the id -> name map (1 Left, 2 Down, 3 Right, 4 Up).
func (e *Env) ActionLookup() map[int]string { return e.cfg.ActionLookupMap }

// Close does nothing.
func (e *Env) Close() error { return nil }

// Map returns the current map rows ('S', 'F', 'H', 'G').
func (e *Env) Map() []string {
	out := make([]string, len(e.desc))
	for i, r := range e.desc {
		out[i] = string(r)
	}
	return out
}

// Player returns the player's (row, col).
func (e *Env) Player() (int, int) { return e.pos / e.cols, e.pos % e.cols }

// PromptFacts reports the prompt facts of the env's own config
// (observation_format, grid_vocab in grid_lookup order, action names in id
// order), for ragen_prompt_from_env_config.
func (e *Env) PromptFacts() env.PromptDefaults {
	return env.PromptDefaults{ObservationFormat: e.cfg.ObservationFormat,
		GridVocab: env.VocabInLookupOrder(e.cfg.GridLookup, e.cfg.GridVocab), ActionNames: env.NamesInIDOrder(e.cfg.ActionLookupMap)}
}
