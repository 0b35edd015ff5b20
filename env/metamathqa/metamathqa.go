package metamathqa

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"ragen/env"
	"ragen/internal/pyrand"

	"ragen/internal/pystr"
)

// Config is the env_config of a metamathqa tag, with upstream's field
// names and defaults. Upstream passes them to Hugging Face load_dataset;
// here they locate a local copy (see Resolve).
type Config struct {
	DatasetPath string `yaml:"dataset_path"`
	CacheDir    string `yaml:"cache_dir"`
	Split       string `yaml:"split"`
}

// DefaultConfig returns upstream's defaults.
func DefaultConfig() Config {
	return Config{DatasetPath: DefaultDatasetPath, CacheDir: "./data", Split: "train"}
}

// Validate reports every problem of c at once.
func (c Config) Validate() error {
	var errs []error
	if c.DatasetPath == "" {
		errs = append(errs, errors.New("metamathqa: dataset_path is empty"))
	}
	if c.Split == "" {
		errs = append(errs, errors.New("metamathqa: split is empty"))
	}
	return errors.Join(errs...)
}

const answerMarker = "The answer is: "

// ExtractAnswer returns the text after the first "The answer is: " in a
// response, trimmed, and whether the marker was found.
func ExtractAnswer(response string) (string, bool) {
	_, after, ok := strings.Cut(response, answerMarker)
	if !ok {
		return "", false
	}
	return strings.TrimFunc(after, pystr.IsSpace), true
}

// Normalize lowercases s and deletes all whitespace.
func Normalize(s string) string {
	return strings.Map(func(r rune) rune {
		if pystr.IsSpace(r) {
			return -1
		}
		return r
	}, pystr.Lower(s))
}

// CheckAnswer compares an answer with the reference the way upstream does:
// equal after Normalize, and only when the reference is truthy in Python
// (present and non-empty); valid means the normalised answer is non-empty.
func CheckAnswer(answer, reference string, hasReference bool) (correct, valid bool) {
	a := Normalize(answer)
	return hasReference && reference != "" && a == Normalize(reference), a != ""
}

// RandFunc builds the generator a reset draws its question from; upstream
// seeds Python's random with the seed and draws randint(0, N−1), which is
// Intn(N).
type RandFunc func(seed int64) (env.Rand, error)

func defaultRand(seed int64) (env.Rand, error) { return pyrand.NewRandom(seed), nil }

// Env is the MetaMathQA question-answering environment.
type Env struct {
	cfg       Config
	items     []Item
	newRand   RandFunc
	idx       int
	answer    string
	hasAnswer bool
	steps     int
	render    string
}

var _ env.BaseEnv = (*Env)(nil)

func init() {
	env.RegisterPromptDefaults("metamathqa", env.PromptDefaults{}) // no grid_vocab, no action_lookup
	env.Register("metamathqa", func(m map[string]any) (env.BaseEnv, error) { return FromEnvConfig(m) })
}

// FromEnvConfig builds an env from env_config overrides (the registry's
// factory: unknown keys are errors).
func FromEnvConfig(envConfig map[string]any) (*Env, error) {
	return env.FromConfig("metamathqa", DefaultConfig(), envConfig, New)
}

// New builds the env over the dataset cfg resolves to.
func New(cfg Config) (*Env, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	items, err := Resolve(cfg)
	if err != nil {
		return nil, err
	}
	return NewFromItems(cfg, items, defaultRand)
}

// NewFromItems builds the env over explicit items; newRand (nil: upstream's
// Python random) picks the question at reset.
func NewFromItems(cfg Config, items []Item, newRand RandFunc) (*Env, error) {
	if len(items) == 0 {
		return nil, errors.New("metamathqa: dataset is empty")
	}
	if newRand == nil {
		newRand = defaultRand
	}
	e := &Env{cfg: cfg, items: items, newRand: newRand}
	e.setQuestion(0)
	return e, nil
}

func (e *Env) setQuestion(i int) {
	e.idx = i
	e.answer, e.hasAnswer = ExtractAnswer(e.items[i].Response)
	e.steps = 0
	e.render = e.items[i].Query
}

// Len is the number of questions.
func (e *Env) Len() int { return len(e.items) }

// Item returns the current question's record.
func (e *Env) Item() Item { return e.items[e.idx] }

// CorrectAnswer is the reference answer of the current question ("" when
// its response has no "The answer is: "); the rollout manager copies it
// into the rollout cache for the MetamathQA tag (ragen.CorrectAnswerer).
func (e *Env) CorrectAnswer() string { return e.answer }

// ReferenceAnswer is CorrectAnswer together with whether the response had
// the marker at all (upstream's None when it did not).
func (e *Env) ReferenceAnswer() (string, bool) { return e.answer, e.hasAnswer }

// SetIndex puts the env on question i, as a reset would.
func (e *Env) SetIndex(i int) error {
	if i < 0 || i >= len(e.items) {
		return fmt.Errorf("metamathqa: index %d outside 0..%d", i, len(e.items)-1)
	}
	e.setQuestion(i)
	return nil
}

// Reset picks question randint(0, N−1) under Python's random seeded with
// seed.
func (e *Env) Reset(ctx context.Context, seed int64, _ env.Mode) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	rng, err := e.newRand(seed)
	if err != nil {
		return "", fmt.Errorf("metamathqa: reset: %w", err)
	}
	e.setQuestion(rng.Intn(len(e.items)))
	return e.render, nil
}

// Step checks an answer. A correct answer after k earlier attempts earns
// 1/2^k and ends the episode; a wrong one earns 0.0 and does not.
func (e *Env) Step(ctx context.Context, a env.Action) (env.StepResult, error) {
	if err := ctx.Err(); err != nil {
		return env.StepResult{}, err
	}
	correct, valid := CheckAnswer(a.Text, e.answer, e.hasAnswer)
	res := env.StepResult{Info: env.Info{"action_is_valid": valid, "success": correct}}
	if correct {
		res.Reward = math.Ldexp(1, -e.steps)
		res.Done = true
		e.render = "Correct!"
	} else {
		e.render = "Incorrect. Please think again."
	}
	e.steps++
	res.Observation = e.render
	return res, nil
}

// Render returns the question after a reset and the last feedback after a
// step.
func (e *Env) Render() string { return e.render }

// Close does nothing.
func (e *Env) Close() error { return nil }
