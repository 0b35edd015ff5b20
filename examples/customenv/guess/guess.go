// Package guess is a multi-turn "guess the number" environment, registered
// as env_type guess_number.
package guess

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"ragen/env"
)

// GuessConfig is the env_config of a guess_number env.
type GuessConfig struct {
	Max int `yaml:"max"` // the number is drawn from 1..Max
}

// Validate names every value the env cannot use.
func (c GuessConfig) Validate() error {
	if c.Max < 2 || c.Max > 1_000_000 {
		return fmt.Errorf("guess_number: max=%d must be in [2, 1000000]", c.Max)
	}
	return nil
}

// Guess is a multi-turn env: the agent guesses a hidden number and is told
// "higher" or "lower" after each wrong guess. A right guess pays 1 and ends
// the episode; a guess that is not a number is an invalid action (no
// reward, the episode goes on).
type Guess struct {
	cfg    GuessConfig
	target int
	lo, hi int // the interval the feedback so far leaves
	obs    string
}

// NewGuess is the env's registry factory: it decodes env_config (unknown
// keys are errors) over the defaults.
func NewGuess(m map[string]any) (env.BaseEnv, error) {
	cfg := GuessConfig{Max: 100}
	if err := env.DecodeConfig(m, &cfg); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Guess{cfg: cfg}, nil
}

// Reset draws the number from the seed alone, so a seed is an initial state.
func (g *Guess) Reset(_ context.Context, seed int64, _ env.Mode) (string, error) {
	r := rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))
	g.target = 1 + r.IntN(g.cfg.Max)
	g.lo, g.hi = 1, g.cfg.Max
	g.obs = fmt.Sprintf("I am thinking of a whole number from 1 to %d. Guess it.", g.cfg.Max)
	return g.obs, nil
}

// Step scores one guess.
func (g *Guess) Step(_ context.Context, a env.Action) (env.StepResult, error) {
	if g.target == 0 {
		return env.StepResult{}, errors.New("guess_number: Step before Reset")
	}
	n, err := strconv.Atoi(strings.TrimSpace(a.Text))
	if err != nil {
		g.obs = fmt.Sprintf("%q is not a whole number. Guess a number from 1 to %d.", a.Text, g.cfg.Max)
		return env.StepResult{Observation: g.obs, RewardIsInt: true,
			Info: env.Info{"action_is_valid": false, "success": false}}, nil
	}
	switch {
	case n < g.target:
		g.obs = fmt.Sprintf("%d is too low. Guess higher.", n)
		g.lo = max(g.lo, n+1)
	case n > g.target:
		g.obs = fmt.Sprintf("%d is too high. Guess lower.", n)
		g.hi = min(g.hi, n-1)
	default:
		g.obs = fmt.Sprintf("%d is right!", n)
		return env.StepResult{Observation: g.obs, Reward: 1, RewardIsInt: true, Done: true,
			Info: env.Info{"action_is_valid": true, "success": true}}, nil
	}
	return env.StepResult{Observation: g.obs, RewardIsInt: true, Info: env.Info{"action_is_valid": true, "success": false}}, nil
}

// OracleActions is the env's solver (the env.Oracle capability): the
// middle of the interval left, which binary search guesses next. It makes
// `ragen eval --policy oracle` and `ragen sft` demonstrations work.
func (g *Guess) OracleActions(max int) ([]string, bool, error) {
	if g.target == 0 {
		return nil, false, errors.New("guess_number: OracleActions before Reset")
	}
	if max < 1 {
		return nil, true, nil
	}
	return []string{strconv.Itoa((g.lo + g.hi) / 2)}, true, nil
}

// Render is the current observation.
func (g *Guess) Render() string { return g.obs }

// Close has nothing to release.
func (g *Guess) Close() error { return nil }

func init() {
	env.Register("guess_number", NewGuess)
	env.RegisterPromptDefaults("guess_number", env.PromptDefaults{})
}
