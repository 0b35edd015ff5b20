package rubikscube

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"ragen/env"
	"ragen/internal/pyrand"
)

// Config is the env_config of a rubikscube tag. Field names and defaults
// follow upstream's RubiksCube2x2EnvConfig.
type Config struct {
	RenderMode    string         `yaml:"render_mode"`
	ScrambleDepth int            `yaml:"scramble_depth"`
	MaxSteps      int            `yaml:"max_steps"`
	ActionLookup  map[int]string `yaml:"action_lookup"`
	// LegacyBMove turns B with upstream's permutation, which reverses one
	// sticker pair and so mixes stickers of two corners (no legal cube
	// move). Off by default: B turns like a real cube's (issue #3; see
	// doc/divergences/env-extra.md). Set it to reproduce upstream's
	// scrambles and steps exactly.
	LegacyBMove bool `yaml:"legacy_b_move"`
}

// DefaultConfig returns upstream's defaults.
func DefaultConfig() Config {
	return Config{
		RenderMode:    "text",
		ScrambleDepth: 5,
		MaxSteps:      20,
		ActionLookup:  defaultLookup(),
	}
}

func defaultLookup() map[int]string {
	m := make(map[int]string, 12)
	for i := 1; i <= 12; i++ {
		m[i] = moveNames[i]
	}
	return m
}

// MaxScrambleDepth bounds scramble_depth (not upstream).
const MaxScrambleDepth = 10000

// Validate reports every problem of c at once.
func (c Config) Validate() error {
	var errs []error
	if c.RenderMode != "text" {
		errs = append(errs, fmt.Errorf("rubikscube: render_mode %q not supported (want \"text\")", c.RenderMode))
	}
	if c.ScrambleDepth < 0 || c.ScrambleDepth > MaxScrambleDepth {
		errs = append(errs, fmt.Errorf("rubikscube: scramble_depth %d outside [0, %d]", c.ScrambleDepth, MaxScrambleDepth))
	}
	if c.MaxSteps < 0 {
		errs = append(errs, fmt.Errorf("rubikscube: max_steps %d is negative", c.MaxSteps))
	}
	for id := range c.ActionLookup {
		if !Move(id).Valid() {
			errs = append(errs, fmt.Errorf("rubikscube: action_lookup id %d is not a move (want 1..12)", id))
		}
	}
	return errors.Join(errs...)
}

// RandFunc builds the generator a reset draws its scramble from. Upstream
// uses np.random.default_rng(seed) and draws integers(1, 13) per move; with
// env.Rand that draw is 1+Intn(12).
type RandFunc func(seed int64) (env.Rand, error)

func defaultRand(seed int64) (env.Rand, error) { return pyrand.NewGenerator(seed) }

// Env is the 2×2 Rubik's cube environment.
type Env struct {
	cfg     Config
	newRand RandFunc
	cube    Cube
	step    int
}

var _ env.BaseEnv = (*Env)(nil)
var _ env.ActionLookup = (*Env)(nil)

// New builds an env whose resets scramble with a NumPy PCG64 Generator
// seeded like upstream (np.random.default_rng(seed)).
func New(cfg Config) (*Env, error) { return NewWithRand(cfg, defaultRand) }

// NewWithRand builds an env whose resets draw from newRand(seed); tests
// use it to script the scramble.
func NewWithRand(cfg Config, newRand RandFunc) (*Env, error) {
	if cfg.ActionLookup == nil {
		cfg.ActionLookup = defaultLookup()
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if newRand == nil {
		return nil, errors.New("rubikscube: nil RandFunc")
	}
	return &Env{cfg: cfg, newRand: newRand, cube: SolvedCube()}, nil
}

// NewFromState builds an env already in state cube at step 0, as if reset
// had produced it.
func NewFromState(cfg Config, cube Cube) (*Env, error) {
	e, err := New(cfg)
	if err != nil {
		return nil, err
	}
	e.cube = cube
	return e, nil
}

func init() {
	// Upstream's default action_lookup in dict order (ids 1..12), listed in the system prompt.
	env.RegisterPromptDefaults("rubikscube", env.PromptDefaults{ActionNames: moveNames[1:]})
	env.Register("rubikscube", func(m map[string]any) (env.BaseEnv, error) { return FromEnvConfig(m) })
}

// FromEnvConfig builds an env from env_config overrides (the registry's
// factory: unknown keys are errors).
func FromEnvConfig(envConfig map[string]any) (*Env, error) {
	return env.FromConfig("rubikscube", DefaultConfig(), envConfig, New)
}

// Config returns the env's configuration.
func (e *Env) Config() Config { return e.cfg }

// Cube returns the current cube state.
func (e *Env) Cube() Cube { return e.cube }

// CurrentStep is the number of actions taken since reset.
func (e *Env) CurrentStep() int { return e.step }

// ActionLookup returns a copy of the id→name map.
func (e *Env) ActionLookup() map[int]string {
	m := make(map[int]string, len(e.cfg.ActionLookup))
	for k, v := range e.cfg.ActionLookup {
		m[k] = v
	}
	return m
}

// Reset scrambles a solved cube with scramble_depth moves drawn as
// integers(1, 13) from the seeded generator.
func (e *Env) Reset(ctx context.Context, seed int64, _ env.Mode) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	rng, err := e.newRand(seed)
	if err != nil {
		return "", fmt.Errorf("rubikscube: reset: %w", err)
	}
	e.cube = SolvedCube()
	e.step = 0
	for i := 0; i < e.cfg.ScrambleDepth; i++ {
		m := Move(1 + rng.Intn(12))
		if !e.apply(m) {
			return "", fmt.Errorf("rubikscube: reset: generator gave move %d outside 1..12", int(m))
		}
	}
	return e.Render(), nil
}

// apply turns the cube with a real cube's permutations (Cube.Apply), or
// with upstream's faulty B (Cube.ApplyLegacy) when cfg.LegacyBMove is set.
func (e *Env) apply(m Move) bool {
	if e.cfg.LegacyBMove {
		return e.cube.ApplyLegacy(m)
	}
	return e.cube.Apply(m)
}

// Step applies move a.ID. An id outside 1..12 counts as a step that
// changes nothing and is reported with action_is_valid=false.
func (e *Env) Step(ctx context.Context, a env.Action) (env.StepResult, error) {
	if err := ctx.Err(); err != nil {
		return env.StepResult{}, err
	}
	valid := e.apply(Move(a.ID))
	e.step++
	solved := e.cube.IsSolved()
	done := solved || e.step >= e.cfg.MaxSteps
	reward := 0.0
	if solved {
		reward = 1.0
	}
	// Upstream's info always carries the three keys (each becomes a metric).
	info := env.Info{"action_is_effective": valid, "action_is_valid": valid, "success": solved}
	return env.StepResult{
		Observation: e.render(done, solved),
		Reward:      reward,
		Done:        done,
		Info:        info,
	}, nil
}

// Render is the observation the manager shows: always the in-game text.
func (e *Env) Render() string { return e.render(false, false) }

// Close does nothing.
func (e *Env) Close() error { return nil }

var faceLabels = [6]string{
	"Up (U):    ",
	"Left (L):  ",
	"Front (F): ",
	"Right (R): ",
	"Back (B):  ",
	"Down (D):  ",
}

func (e *Env) render(done, solved bool) string {
	var b strings.Builder
	b.WriteString("=== Rubik's Cube 2x2 State ===\n")
	fmt.Fprintf(&b, "Step: %d/%d\n\n", e.step, e.cfg.MaxSteps)
	letter := func(s uint8) byte {
		if int(s) < len(colourLetters) {
			return colourLetters[s]
		}
		return '?'
	}
	for f := 0; f < 6; f++ {
		o := 4 * f
		fmt.Fprintf(&b, "%s[%c, %c]\n [%c, %c]\n", faceLabels[f],
			letter(e.cube[o]), letter(e.cube[o+1]), letter(e.cube[o+2]), letter(e.cube[o+3]))
	}
	if done {
		if solved {
			b.WriteString("\n=== Game Over: Cube Solved! ===")
		} else {
			b.WriteString("\n=== Game Over: Max steps reached. ===")
		}
		return b.String()
	}
	b.WriteString("\nAvailable Actions:\nU, U', D, D', L, L', R, R', F, F', B, B'\n\nWhat is your next move?")
	return b.String()
}
