package deepcoder

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"ragen/env"
	"ragen/env/deepcoder/sandbox"
	"ragen/internal/pyrand"
	"ragen/internal/pystr"
)

// Config is the env_config of a deepcoder tag: upstream's fields and
// defaults, plus the sandbox settings (ours).
type Config struct {
	RenderMode         string  `yaml:"render_mode"` // unused, as upstream
	MaxSteps           int     `yaml:"max_steps"`
	InvalidActionScore float64 `yaml:"invalid_action_score"` // unused, as upstream
	DatasetPath        *string `yaml:"dataset_path"`         // nil: built-in add(a, b) prompt
	CacheDir           *string `yaml:"cache_dir"`
	Split              *string `yaml:"split"` // "" or nil: the first split (train, validation, test)

	PythonPath      string  `yaml:"python_path"`       // Debian's /usr/bin/python3
	SandboxMode     string  `yaml:"sandbox_mode"`      // "namespaces" or "unsafe_rlimits_only"
	SandboxTimeout  float64 `yaml:"sandbox_timeout"`   // seconds for all tests of one answer (upstream: 3)
	SandboxMemoryMB int     `yaml:"sandbox_memory_mb"` // address-space limit per test process
}

// DefaultConfig returns upstream's defaults and the sandbox's.
func DefaultConfig() Config {
	sc := sandbox.DefaultConfig()
	return Config{
		RenderMode: "text", MaxSteps: 1, Split: strp("test"),
		PythonPath: sc.Python, SandboxMode: sc.Mode, SandboxTimeout: sc.Timeout.Seconds(),
		SandboxMemoryMB: int(sc.MemoryBytes >> 20),
	}
}

// Validate reports every problem of c at once.
func (c Config) Validate() error {
	// Upstream never reads render_mode, and max_steps < 1 makes every
	// non-blank step the last: both are accepted.
	var errs []error
	if err := c.sandbox().Validate(); err != nil {
		errs = append(errs, fmt.Errorf("deepcoder: %w", err))
	}
	return errors.Join(errs...)
}

func (c Config) sandbox() sandbox.Config {
	sc := sandbox.DefaultConfig()
	sc.Python = c.PythonPath
	sc.Mode = c.SandboxMode
	sc.Timeout = time.Duration(c.SandboxTimeout * float64(time.Second))
	sc.MemoryBytes = int64(c.SandboxMemoryMB) << 20
	return sc
}

func strp(s string) *string { return &s }

// FallbackPrompt is upstream's prompt when no data can be loaded.
const FallbackPrompt = "Write a function add(a, b) that returns a + b."

var (
	sandboxesMu sync.Mutex
	sandboxes   = map[sandbox.Config]*sandbox.Sandbox{}
)

// sharedSandbox returns one probed sandbox per configuration, so that
// many envs of a tag share the probe.
func sharedSandbox(ctx context.Context, sc sandbox.Config) (*sandbox.Sandbox, error) {
	sandboxesMu.Lock()
	sb, ok := sandboxes[sc]
	if !ok {
		var err error
		if sb, err = sandbox.New(sc); err != nil {
			sandboxesMu.Unlock()
			return nil, err
		}
		sandboxes[sc] = sb
	}
	sandboxesMu.Unlock()
	if err := sb.Probe(ctx); err != nil {
		return nil, err
	}
	return sb, nil
}

// Env is the DeepCoder code-generation environment.
type Env struct {
	cfg      Config
	problems []Problem
	sb       *sandbox.Sandbox
	cur      Problem
	steps    int
	render   string
}

var _ env.BaseEnv = (*Env)(nil)

func init() {
	env.RegisterPromptDefaults("deepcoder", env.PromptDefaults{})
	env.Register("deepcoder", func(m map[string]any) (env.BaseEnv, error) { return FromEnvConfig(m) })
}

// FromEnvConfig builds an env from env_config overrides (the registry's
// factory: unknown keys are errors).
func FromEnvConfig(envConfig map[string]any) (*Env, error) {
	return env.FromConfig("deepcoder", DefaultConfig(), envConfig, New)
}

// New loads the dataset and checks that the sandbox works here (the
// interpreter exists and the kernel grants the namespaces).
func New(cfg Config) (*Env, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ps, err := Resolve(cfg)
	if err != nil {
		return nil, err
	}
	return NewFromProblems(cfg, ps)
}

// NewFromProblems builds the env over explicit problems (none: the
// fallback prompt).
func NewFromProblems(cfg Config, ps []Problem) (*Env, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	sb, err := sharedSandbox(context.Background(), cfg.sandbox())
	if err != nil {
		return nil, err // "sandbox: ..."; the registry adds "env: deepcoder:"
	}
	e := &Env{cfg: cfg, problems: ps, sb: sb}
	e.set(0)
	return e, nil
}

func (e *Env) set(i int) {
	if len(e.problems) == 0 {
		e.cur = Problem{Question: FallbackPrompt}
	} else {
		e.cur = e.problems[i]
	}
	e.steps = 0
	e.render = e.cur.Question
}

// Len is the number of problems (0 with the fallback prompt).
func (e *Env) Len() int { return len(e.problems) }

// Problem returns the current problem.
func (e *Env) Problem() Problem { return e.cur }

// Reset picks problem randint(0, N−1) under Python's random seeded with
// seed.
func (e *Env) Reset(ctx context.Context, seed int64, _ env.Mode) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	i := 0
	if len(e.problems) > 0 {
		i = pyrand.NewRandom(seed).Intn(len(e.problems))
	}
	e.set(i)
	return e.render, nil
}

// Step runs the code against the current problem's tests in the sandbox
// (service-envs.md §2 "Step"). Info: action_is_effective (= correct),
// action_is_valid, success, detail, passed_tests, total_tests, runnable,
// pass_reward; a blank action instead gives action_is_effective,
// action_is_valid and success all false and error "Empty action", and
// does not count as a step.
func (e *Env) Step(ctx context.Context, a env.Action) (env.StepResult, error) {
	if err := ctx.Err(); err != nil {
		return env.StepResult{}, err
	}
	if strings.TrimFunc(a.Text, pystr.IsSpace) == "" {
		e.render = "Invalid action."
		if e.cur.hasPrompt() {
			e.render = e.cur.Question + "\n\nFeedback: Empty action"
		}
		return env.StepResult{Observation: "Invalid action.", Info: env.Info{
			"action_is_effective": false, "action_is_valid": false, "success": false, "error": "Empty action"}}, nil
	}
	ev, err := Evaluate(ctx, e.sb, e.cur, a.Text)
	if err != nil {
		return env.StepResult{}, fmt.Errorf("deepcoder: %w", err)
	}
	reward := 0.0
	if ev.Total > 0 {
		reward = float64(ev.Passed) / float64(ev.Total)
	}
	success := ev.Correct()
	done := success || e.steps+1 >= e.cfg.MaxSteps
	e.steps++
	obs := "Incorrect."
	if success {
		obs = "Correct!"
	}
	e.render = obs
	if !done && e.cur.hasPrompt() {
		e.render = e.cur.Question + "\n\nFeedback: " + ev.Detail
	}
	return env.StepResult{Observation: obs, Reward: reward, Done: done, Info: env.Info{
		"action_is_effective": success, "action_is_valid": true, "success": success, "detail": ev.Detail,
		"passed_tests": ev.Passed, "total_tests": ev.Total, "runnable": ev.Runnable, "pass_reward": reward,
	}}, nil
}

// OracleActions returns the problem's reference solution when the data
// has one (env.Oracle), for demonstrations and `ragen eval --policy
// oracle`.
func (e *Env) OracleActions(max int) ([]string, bool, error) {
	if max < 1 || e.cur.Solution == "" {
		return nil, false, nil
	}
	return []string{e.cur.Solution}, true, nil
}

// Render returns the question, then the feedback.
func (e *Env) Render() string { return e.render }

// Close does nothing (sandboxes are per run).
func (e *Env) Close() error { return nil }

// hasPrompt is upstream's truthiness test of the prompt in the render.
func (p Problem) hasPrompt() bool { return p.Question != "" && !p.falsyPrompt }
