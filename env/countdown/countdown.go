package countdown

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"ragen/env"
	"ragen/internal/pyrand"
)

// Config is the env_config of a countdown tag. TrainPath, MaxInstances
// and RenderMode are upstream's; Generate is ours.
type Config struct {
	TrainPath    string `yaml:"train_path"`
	MaxInstances int    `yaml:"max_instances"`
	RenderMode   string `yaml:"render_mode"`
	// Generate makes each reset generate a solvable puzzle from its seed
	// (GenerateTask over Python's random seeded with the seed) instead of
	// indexing the task file; TrainPath is then not read.
	Generate bool `yaml:"generate"`
}

// DefaultConfig returns upstream's defaults.
func DefaultConfig() Config {
	return Config{TrainPath: "data/countdown/train.parquet", MaxInstances: 20000, RenderMode: "text"}
}

// Validate reports every problem of c at once.
func (c Config) Validate() error {
	var errs []error
	if c.RenderMode != "text" {
		errs = append(errs, fmt.Errorf("countdown: render_mode %q not supported (want \"text\")", c.RenderMode))
	}
	if !c.Generate && c.TrainPath == "" {
		errs = append(errs, errors.New("countdown: train_path is empty (set it, or generate: true)"))
	}
	return errors.Join(errs...)
}

// Env is the Countdown environment: one answer per episode.
type Env struct {
	cfg      Config
	tasks    []Task
	task     Task
	feedback string // the last step's observation ("" after a reset)
}

var _ env.BaseEnv = (*Env)(nil)

func init() {
	env.RegisterPromptDefaults("countdown", env.PromptDefaults{}) // no grid_vocab, no action_lookup
	env.Register("countdown", func(m map[string]any) (env.BaseEnv, error) { return FromEnvConfig(m) })
}

// FromEnvConfig builds an env from env_config overrides (the registry's
// factory: unknown keys are errors).
func FromEnvConfig(envConfig map[string]any) (*Env, error) {
	return env.FromConfig("countdown", DefaultConfig(), envConfig, New)
}

// New builds the env, loading and filtering cfg.TrainPath unless
// cfg.Generate is set.
func New(cfg Config) (*Env, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Generate {
		return &Env{cfg: cfg}, nil
	}
	tasks, err := LoadTasks(cfg.TrainPath, cfg.MaxInstances)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w (set train_path to a Countdown-Tasks parquet or JSONL file, or generate: true)", err)
	}
	if err != nil {
		return nil, err
	}
	return NewFromTasks(cfg, tasks)
}

// NewFromTasks builds the env over tasks (already read; they are filtered
// like upstream's file data). It is an error when none survives.
func NewFromTasks(cfg Config, tasks []Task) (*Env, error) {
	cfg.Generate = false
	if cfg.TrainPath == "" {
		cfg.TrainPath = "(tasks)"
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	kept := FilterSolvable(tasks)
	if len(kept) == 0 {
		return nil, fmt.Errorf("countdown: none of %d tasks is solvable with ± signs", len(tasks))
	}
	e := &Env{cfg: cfg, tasks: kept}
	e.task = kept[0]
	return e, nil
}

// Config returns the env's configuration.
func (e *Env) Config() Config { return e.cfg }

// Tasks returns the number of tasks kept after filtering (0 when
// generating).
func (e *Env) Tasks() int { return len(e.tasks) }

// Task returns the current puzzle.
func (e *Env) Task() Task {
	return Task{Target: e.task.Target, Nums: append([]int(nil), e.task.Nums...)}
}

// SetTask puts the env on an explicit puzzle, as a reset would.
func (e *Env) SetTask(t Task) {
	e.task = Task{Target: t.Target, Nums: append([]int(nil), t.Nums...)}
}

// Reset picks task seed mod N (Python's modulo, never negative), or
// generates one from the seed when cfg.Generate is set.
func (e *Env) Reset(ctx context.Context, seed int64, _ env.Mode) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	e.feedback = ""
	if e.cfg.Generate {
		t, err := GenerateTask(pyrand.NewRandom(seed))
		if err != nil {
			return "", err
		}
		e.task = t
		return e.Render(), nil
	}
	n := int64(len(e.tasks))
	i := seed % n
	if i < 0 {
		i += n
	}
	e.task = e.tasks[i]
	return e.Render(), nil
}

// Step scores the answer expression; every step ends the episode.
func (e *Env) Step(ctx context.Context, a env.Action) (env.StepResult, error) {
	if err := ctx.Err(); err != nil {
		return env.StepResult{}, err
	}
	r, isInt := Score(a.Text, e.task)
	e.feedback = "Your answer get " + pyNumber(r, isInt) + " points."
	return env.StepResult{
		Observation: e.feedback,
		Reward:      r,
		RewardIsInt: isInt,
		Done:        true,
		Info: env.Info{
			"action_is_effective": r > 0,
			"action_is_valid":     true,
			"success":             r == CorrectScore,
		},
	}, nil
}

func pyNumber(r float64, isInt bool) string {
	if isInt {
		return strconv.FormatInt(int64(r), 10)
	}
	return env.PyFloatRepr(r)
}

// Render is "Target: {target}, nums: [a, b, c]" after a reset and the
// step's feedback ("Your answer get 1 points.") after a step, as upstream's
// render returns the last observation.
func (e *Env) Render() string {
	if e.feedback != "" {
		return e.feedback
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Target: %d, nums: [", e.task.Target)
	for i, n := range e.task.Nums {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(n))
	}
	b.WriteByte(']')
	return b.String()
}

// Close does nothing.
func (e *Env) Close() error { return nil }
