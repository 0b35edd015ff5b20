package sokoban

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"ragen/env"
	"ragen/internal/pyrand"
)

func init() {
	env.Register("sokoban", func(m map[string]any) (env.BaseEnv, error) { return FromEnvConfig(m) })
	env.RegisterPromptDefaults("sokoban", env.PromptDefaults{
		ObservationFormat: "grid",
		GridVocab: [][2]string{{"#", "wall"}, {"_", "empty"}, {"O", "target"}, {"√", "box on target"},
			{"X", "box"}, {"P", "player"}, {"S", "player on target"}},
		ActionNames: []string{"Up", "Down", "Left", "Right"},
	})
}

// Config is upstream's SokobanEnvConfig.
type Config struct {
	DimRoom           [2]int            `yaml:"dim_room"` // (rows, cols)
	MaxSteps          int               `yaml:"max_steps"`
	NumBoxes          int               `yaml:"num_boxes"`
	SearchDepth       int               `yaml:"search_depth"`
	GridLookup        map[int]string    `yaml:"grid_lookup"`
	GridVocab         map[string]string `yaml:"grid_vocab"`
	ActionLookupMap   map[int]string    `yaml:"action_lookup"`
	DimX              *int              `yaml:"dim_x"` // with dim_y, replaces dim_room = (dim_x, dim_y)
	DimY              *int              `yaml:"dim_y"`
	RenderMode        string            `yaml:"render_mode"`
	ObservationFormat string            `yaml:"observation_format"` // grid | coord | grid_coord
	// MaxRetries bounds the re-generation attempts after a failed
	// generation (not upstream, which recurses without bound).
	MaxRetries int `yaml:"max_retries"`
	// LevelFile (not upstream): a Boxoban level file; when set, Reset(seed)
	// loads level seed mod len(levels) instead of generating a room, and
	// dim_room / num_boxes are taken from the level.
	LevelFile string `yaml:"level_file"`
}

// Upper bounds of Validate (not upstream, which has none): generation time
// and memory grow steeply with the room (a 60x60 room took 6.6 s and
// 1.4 GB per reset), and an env server must not be run out of memory by a
// client's config.
const (
	MaxRoomDim      = 20
	MaxNumBoxes     = 10
	MaxSearchDepth  = 10000
	MaxRetriesLimit = 10000
)

// DefaultConfig returns upstream's defaults.
func DefaultConfig() Config {
	return Config{
		DimRoom: [2]int{6, 6}, MaxSteps: 100, NumBoxes: 3, SearchDepth: 300,
		GridLookup: map[int]string{0: "#", 1: "_", 2: "O", 3: "√", 4: "X", 5: "P", 6: "S"},
		GridVocab: map[string]string{"#": "wall", "_": "empty", "O": "target", "√": "box on target",
			"X": "box", "P": "player", "S": "player on target"},
		ActionLookupMap:   map[int]string{1: "Up", 2: "Down", 3: "Left", 4: "Right"},
		RenderMode:        "text",
		ObservationFormat: "grid",
		MaxRetries:        1000,
	}
}

// Dims returns (rows, cols): (dim_x, dim_y) when both are set, else dim_room.
func (c Config) Dims() (int, int) {
	if c.DimX != nil && c.DimY != nil {
		return *c.DimX, *c.DimY
	}
	return c.DimRoom[0], c.DimRoom[1]
}

// Validate reports every unusable config value at once.
func (c Config) Validate() error {
	var errs []string
	rows, cols := c.Dims()
	if rows < 3 || cols < 3 {
		errs = append(errs, fmt.Sprintf("room %dx%d: both dimensions must be at least 3", rows, cols))
	}
	if rows > MaxRoomDim || cols > MaxRoomDim {
		errs = append(errs, fmt.Sprintf("room %dx%d: both dimensions must be at most %d", rows, cols, MaxRoomDim))
	}
	if c.NumBoxes < 1 {
		errs = append(errs, fmt.Sprintf("num_boxes %d: must be at least 1", c.NumBoxes))
	}
	if c.NumBoxes > MaxNumBoxes {
		errs = append(errs, fmt.Sprintf("num_boxes %d: must be at most %d", c.NumBoxes, MaxNumBoxes))
	}
	if c.SearchDepth > MaxSearchDepth {
		errs = append(errs, fmt.Sprintf("search_depth %d: must be at most %d", c.SearchDepth, MaxSearchDepth))
	}
	if c.MaxRetries > MaxRetriesLimit {
		errs = append(errs, fmt.Sprintf("max_retries %d: must be at most %d", c.MaxRetries, MaxRetriesLimit))
	}
	// max_steps <= 0 is accepted as upstream does: done compares
	// num_env_steps == max_steps, so such an episode never ends on steps.
	if c.SearchDepth < 0 {
		errs = append(errs, fmt.Sprintf("search_depth %d: must not be negative", c.SearchDepth))
	}
	switch c.ObservationFormat {
	case "grid", "coord", "grid_coord":
	default:
		errs = append(errs, fmt.Sprintf("observation_format %q: want grid, coord or grid_coord", c.ObservationFormat))
	}
	if c.RenderMode != "text" {
		errs = append(errs, fmt.Sprintf("render_mode %q: only \"text\" is supported (rgb_array is multimodal and out of scope)", c.RenderMode))
	}
	if c.MaxRetries < 0 {
		errs = append(errs, fmt.Sprintf("max_retries %d: must not be negative", c.MaxRetries))
	}
	if len(errs) > 0 {
		return fmt.Errorf("sokoban: %s", strings.Join(errs, "; "))
	}
	return nil
}

// Env is the Sokoban env.
type Env struct {
	cfg          Config
	room         Room
	player       int
	targets      []int
	numEnvSteps  int
	boxesOnTgt   int
	numBoxes     int // boxes the reward and success count against
	lookup       [7]string
	levels       []Level
	ready        bool
	scratch      Scratch
	lastSeedUsed int64
}

// FromEnvConfig builds an env from env_config overrides (the registry's
// factory: unknown keys are errors).
func FromEnvConfig(envConfig map[string]any) (*Env, error) {
	return env.FromConfig("sokoban", DefaultConfig(), envConfig, New)
}

// New builds an env from a config.
func New(cfg Config) (*Env, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	e := &Env{cfg: cfg}
	if cfg.LevelFile != "" {
		ls, err := LoadLevels(cfg.LevelFile)
		if err != nil {
			return nil, err
		}
		e.levels = ls
	}
	for code := range e.lookup {
		s, ok := cfg.GridLookup[code]
		if !ok {
			s = "?"
		}
		e.lookup[code] = s
	}
	return e, nil
}

// NewFromRoom builds an env in an explicit position (e.g. a Boxoban level).
// The reward counts against the room's number of boxes.
func NewFromRoom(cfg Config, room Room) (*Env, error) {
	e, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if err := e.SetRoom(room); err != nil {
		return nil, err
	}
	return e, nil
}

// SetRoom puts the env into an explicit position and restarts the episode
// counters: num_env_steps = 0 and boxes_on_target = the boxes already on
// targets.
func (e *Env) SetRoom(room Room) error {
	if err := room.Validate(); err != nil {
		return err
	}
	e.room = room.Clone()
	e.targets = e.targets[:0]
	boxes := 0
	for i, f := range e.room.Fixed {
		if f == Target {
			e.targets = append(e.targets, i)
		}
		if s := e.room.State[i]; s == Player {
			e.player = i
		} else if s == Box || s == BoxOnTarget {
			boxes++
		}
	}
	e.numBoxes = boxes
	e.numEnvSteps = 0
	// Upstream's reset sets boxes_on_target = 0, which equals this count
	// for every generated room (reverse play leaves all targets free); for
	// an explicit room counting avoids a spurious +1 on the first step.
	e.boxesOnTgt = boxes - e.emptyTargets()
	e.ready = true
	return nil
}

// Reset generates the level for seed (envs.md §2.1), or loads level
// seed mod N when level_file is set. If generation fails
// (not enough space, or zero score after four tries) it retries with
// RetrySeed(seed), up to max_retries times.
func (e *Env) Reset(ctx context.Context, seed int64, _ env.Mode) (string, error) {
	if e.levels != nil {
		idx := seed % int64(len(e.levels))
		if idx < 0 {
			idx += int64(len(e.levels))
		}
		room, err := e.levels[idx].Room()
		if err != nil {
			return "", err
		}
		if err := e.SetRoom(room); err != nil {
			return "", err
		}
		e.lastSeedUsed = seed
		return e.Render(), nil
	}
	rows, cols := e.cfg.Dims()
	p := GenParams{Rows: rows, Cols: cols, NumBoxes: e.cfg.NumBoxes, SearchDepth: e.cfg.SearchDepth}
	s := seed
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return "", fmt.Errorf("sokoban: reset: %w", err)
		}
		np, err := pyrand.NewLegacy(s)
		if err != nil {
			return "", fmt.Errorf("sokoban: reset(seed %d): %w", seed, err)
		}
		g, err := generateWith(p, pyrand.NewRandom(s), np, &e.scratch)
		if err == nil {
			e.room = g.Room
			e.targets = e.targets[:0]
			for i, f := range e.room.Fixed {
				if f == Target {
					e.targets = append(e.targets, i)
				}
				if e.room.State[i] == Player {
					e.player = i
				}
			}
			e.numBoxes = e.cfg.NumBoxes
			e.numEnvSteps, e.boxesOnTgt = 0, 0
			e.ready = true
			e.lastSeedUsed = s
			return e.Render(), nil
		}
		if !errors.Is(err, ErrNotEnoughSpace) && !errors.Is(err, ErrZeroScore) {
			return "", fmt.Errorf("sokoban: reset(seed %d): %w", seed, err)
		}
		if attempt >= e.cfg.MaxRetries {
			return "", fmt.Errorf("sokoban: reset(seed %d): no level after %d retries: %w", seed, attempt, err)
		}
		s = RetrySeed(s)
	}
}

// GeneratedFromSeed reports the seed whose generation produced the current
// level (the reset seed unless retries happened).
func (e *Env) GeneratedFromSeed() int64 { return e.lastSeedUsed }

// Step executes action a.ID with gym-sokoban semantics (envs.md §2.2):
// 1..4 push up/down/left/right (a push that finds no box moves the player
// if the next cell is free), 5..8 move only, 0 no operation. Every call
// counts toward max_steps. Any other id is an invalid action: nothing
// changes and nothing is counted.
func (e *Env) Step(_ context.Context, a env.Action) (env.StepResult, error) {
	if !e.ready {
		return env.StepResult{}, errors.New("sokoban: Step before Reset")
	}
	if a.ID < 0 || a.ID > 8 {
		return env.StepResult{Observation: e.Render(), Info: env.Info{
			"action_is_effective": false, "action_is_valid": false, "success": e.boxesOnTgt == e.numBoxes}}, nil
	}
	prev := e.player
	e.numEnvSteps++
	switch {
	case a.ID == 0:
	case a.ID <= 4:
		e.push(a.ID)
	default:
		e.move(a.ID)
	}
	reward := e.calcReward()
	allOn := e.emptyTargets() == 0
	done := allOn || e.numEnvSteps == e.cfg.MaxSteps
	obs := e.Render()
	return env.StepResult{Observation: obs, Reward: reward, Done: done, Info: env.Info{
		"action_is_effective": prev != e.player, "action_is_valid": true, "success": e.boxesOnTgt == e.numBoxes}}, nil
}

// offset returns the cell delta of action id, or ok=false when the
// destination leaves the grid.
func (e *Env) target(pos, id, times int) (int, bool) {
	ch := changes[(id-1)%4]
	r := pos/e.room.Cols + ch[0]*times
	c := pos%e.room.Cols + ch[1]*times
	if r < 0 || c < 0 || r >= e.room.Rows || c >= e.room.Cols {
		return 0, false
	}
	return r*e.room.Cols + c, true
}

// push is gym-sokoban's _push: if the box destination (two cells away)
// leaves the grid nothing happens; a box with a free cell (1/2) behind it
// is pushed; otherwise the player tries a plain move.
func (e *Env) push(id int) {
	boxDst, ok := e.target(e.player, id, 2)
	if !ok {
		return
	}
	next, _ := e.target(e.player, id, 1)
	st := e.room.State
	if (st[next] == BoxOnTarget || st[next] == Box) && (st[boxDst] == Floor || st[boxDst] == Target) {
		st[e.player] = e.room.Fixed[e.player]
		st[next] = Player
		e.player = next
		if e.room.Fixed[boxDst] == Target {
			st[boxDst] = BoxOnTarget
		} else {
			st[boxDst] = Box
		}
		return
	}
	e.move(id)
}

// move is gym-sokoban's _move: the player moves iff the next cell is 1 or
// 2. A destination off the grid (only possible in rooms without a wall
// border) is treated as a wall.
func (e *Env) move(id int) {
	next, ok := e.target(e.player, id, 1)
	if !ok {
		return
	}
	st := e.room.State
	if st[next] == Floor || st[next] == Target {
		st[e.player] = e.room.Fixed[e.player]
		st[next] = Player
		e.player = next
	}
}

// emptyTargets counts targets that show code 2 or hold the player.
func (e *Env) emptyTargets() int {
	n := 0
	for _, t := range e.targets {
		if s := e.room.State[t]; s == Target || s == Player {
			n++
		}
	}
	return n
}

// calcReward is gym-sokoban's _calc_reward: -0.1, +1 / -1 when the number
// of boxes on targets rises / falls, +10 when no target is empty.
func (e *Env) calcReward() float64 {
	r := -0.1
	empty := e.emptyTargets()
	cur := e.numBoxes - empty
	if cur > e.boxesOnTgt {
		r += 1
	} else if cur < e.boxesOnTgt {
		r += -1
	}
	if empty == 0 {
		r += 10
	}
	e.boxesOnTgt = cur
	return r
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
	return "", fmt.Errorf("sokoban: invalid observation format %q", format)
}

func (e *Env) renderGrid() string {
	var b strings.Builder
	b.Grow(len(e.room.State)*3 + e.room.Rows)
	for i, s := range e.room.State {
		if i > 0 && i%e.room.Cols == 0 {
			b.WriteByte('\n')
		}
		code := int(s)
		if s == Player && e.room.Fixed[i] == Target {
			code = PlayerOnTarget
		}
		if code >= 0 && code < len(e.lookup) {
			b.WriteString(e.lookup[code])
		} else {
			b.WriteByte('?')
		}
	}
	return b.String()
}

func (e *Env) renderCoord() string {
	rows, cols := e.room.Rows, e.room.Cols
	var b strings.Builder
	fmt.Fprintf(&b, "Board size: %d rows x %d cols (zero-indexed).", rows, cols)
	line := func(label string, pick func(i int) bool) {
		first := true
		for i := range e.room.State {
			if !pick(i) {
				continue
			}
			if first {
				b.WriteString("\n" + label + ": ")
				first = false
			} else {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "(%d, %d)", i/cols, i%cols)
		}
	}
	st, fx := e.room.State, e.room.Fixed
	line("Targets", func(i int) bool { return fx[i] == Target })
	line("Boxes", func(i int) bool { return st[i] == Box })
	line("Boxes on target", func(i int) bool { return st[i] == BoxOnTarget })
	line("Player", func(i int) bool { return st[i] == Player && fx[i] != Target })
	line("Player on target", func(i int) bool { return st[i] == Player && fx[i] == Target })
	return b.String()
}

// ActionLookup returns the id -> name map (1 Up, 2 Down, 3 Left, 4 Right).
func (e *Env) ActionLookup() map[int]string { return e.cfg.ActionLookupMap }

// Close does nothing.
func (e *Env) Close() error { return nil }

// Room returns a copy of the current position.
func (e *Env) Room() Room { return e.room.Clone() }

// Config returns the env's config.
func (e *Env) Config() Config { return e.cfg }

// PromptFacts reports the prompt facts of the env's own config
// (observation_format, grid_vocab in grid_lookup order, action names in id
// order), for ragen_prompt_from_env_config.
func (e *Env) PromptFacts() env.PromptDefaults {
	return env.PromptDefaults{ObservationFormat: e.cfg.ObservationFormat,
		GridVocab: env.VocabInLookupOrder(e.cfg.GridLookup, e.cfg.GridVocab), ActionNames: env.NamesInIDOrder(e.cfg.ActionLookupMap)}
}
