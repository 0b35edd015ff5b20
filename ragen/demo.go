package ragen

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"

	"ragen/env"
)

// Env returns the env with the given id (nil if out of range). The env is
// owned by the manager; callers may read its state (e.g. through
// env.Oracle) between steps but must not step it.
func (m *EnvStateManager) Env(envID int) env.BaseEnv {
	if envID < 0 || envID >= len(m.envs) {
		return nil
	}
	return m.envs[envID].env
}

// DemonstratorConfig tunes a Demonstrator.
type DemonstratorConfig struct {
	// Noise is the probability that a turn's actions are drawn uniformly
	// from the env's action names instead of the oracle's plan. Envs without
	// an oracle (env.Oracle) always act uniformly at random.
	Noise float64
	// MaxActions is the number of actions per turn (agent_proxy.max_actions_per_turn).
	MaxActions int
	// Sep joins actions inside <answer> (agent_proxy.action_sep).
	Sep string
	// EnableThink writes a <think> section (agent_proxy.enable_think).
	EnableThink bool
	// Seed makes the noise reproducible.
	Seed uint64
	// Thought chooses what the <think> section says (ThoughtFixed when
	// empty): see ThoughtFixed, ThoughtChoices and ThoughtTemplates.
	Thought string
}

// Demonstrator thought styles (DemonstratorConfig.Thought, sft.thought).
const (
	// ThoughtFixed writes one fixed sentence per kind of turn ("following
	// the shortest path" for the oracle's moves, "let me try" for random
	// ones): the reasoning carries at most one bit about the turn.
	ThoughtFixed = "fixed"
	// ThoughtChoices names the options as the state presents them, in
	// their order, then the pick ("Teacher or Trader? Trader"): the
	// reasoning depends on the input wherever the env's action names do
	// (the bandit's arm names), which is what the collapse diagnostics'
	// mutual-information estimate measures.
	ThoughtChoices = "choices"
	// ThoughtTemplates strings three words drawn at random from a fixed
	// list, whatever the input: varied reasoning (high entropy) that
	// carries no information about the input, a template-collapsed
	// policy's reasoning in RAGEN-2's sense.
	ThoughtTemplates = "templates"
)

// ThoughtStyles lists the valid DemonstratorConfig.Thought values.
func ThoughtStyles() []string { return []string{ThoughtFixed, ThoughtChoices, ThoughtTemplates} }

// templateWords are ThoughtTemplates' words: none names anything of the
// input.
var templateWords = []string{
	"maybe", "hmm", "fine", "sure", "quick", "trust", "gut", "feel",
	"go", "try", "pick", "luck", "guess", "okay", "ready", "now",
}

// Demonstrator is a Policy that answers from each env's solver (env.Oracle),
// in the <think>…</think><answer>…</answer> format the context manager
// parses. Its rollouts are the supervised warm-up data for `ragen sft`:
// BuildBatch turns them into sequences whose loss mask covers exactly the
// demonstrated responses.
type Demonstrator struct {
	cfg  DemonstratorConfig
	envs func(envID int) env.BaseEnv
	mu   sync.Mutex
	rng  *rand.Rand
}

// NewDemonstrator returns a demonstrator over the envs that lookup returns
// (usually an EnvStateManager's Env method).
func NewDemonstrator(cfg DemonstratorConfig, lookup func(envID int) env.BaseEnv) (*Demonstrator, error) {
	if lookup == nil {
		return nil, fmt.Errorf("ragen: demonstrator: nil env lookup")
	}
	if cfg.Noise < 0 || cfg.Noise > 1 {
		return nil, fmt.Errorf("ragen: demonstrator: noise=%g must be in [0, 1]", cfg.Noise)
	}
	if cfg.MaxActions < 1 {
		cfg.MaxActions = 1
	}
	if cfg.Sep == "" {
		cfg.Sep = "||"
	}
	switch cfg.Thought {
	case "":
		cfg.Thought = ThoughtFixed
	case ThoughtFixed, ThoughtChoices, ThoughtTemplates:
	default:
		return nil, fmt.Errorf("ragen: demonstrator: thought %q: want one of %s", cfg.Thought, strings.Join(ThoughtStyles(), ", "))
	}
	return &Demonstrator{cfg: cfg, envs: lookup, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))}, nil
}

// Generate answers every request from its env's current state.
func (d *Demonstrator) Generate(ctx context.Context, reqs []GenRequest) ([]Generation, error) {
	out := make([]Generation, len(reqs))
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, r := range reqs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		e := d.envs(r.EnvID)
		if e == nil {
			return nil, fmt.Errorf("ragen: demonstrator: no env %d", r.EnvID)
		}
		acts, thought, err := d.actions(e)
		if err != nil {
			return nil, fmt.Errorf("ragen: demonstrator: env %d: %w", r.EnvID, err)
		}
		var b strings.Builder
		if d.cfg.EnableThink {
			// the context manager forces "<think>" at the end of the prompt
			// and prepends it to the response; write only what follows it
			if !strings.HasSuffix(r.Prompt, "<think>") {
				b.WriteString("<think>")
			}
			b.WriteString(thought + "</think>")
		}
		b.WriteString("<answer>" + strings.Join(acts, " "+d.cfg.Sep+" ") + "</answer>")
		out[i] = Generation{Text: b.String(), FinishReason: "stop"}
	}
	return out, nil
}

func (d *Demonstrator) actions(e env.BaseEnv) ([]string, string, error) {
	u := d.rng.Float64() // drawn for every env, so streams do not depend on which envs have oracles
	if o, ok := e.(env.Oracle); ok && u >= d.cfg.Noise {
		acts, ok, err := o.OracleActions(d.cfg.MaxActions)
		if err != nil {
			return nil, "", err
		}
		if ok && len(acts) > 0 {
			return acts, d.thought(e, acts, "following the shortest path"), nil
		}
	}
	names := actionNames(e)
	if len(names) == 0 {
		return nil, "", fmt.Errorf("env has neither an oracle nor an action lookup")
	}
	acts := make([]string, d.cfg.MaxActions)
	for i := range acts {
		acts[i] = names[d.rng.IntN(len(names))]
	}
	return acts, d.thought(e, acts, "let me try"), nil
}

// thought is the <think> text of a turn that plays acts; fixed is
// ThoughtFixed's sentence for this kind of turn.
func (d *Demonstrator) thought(e env.BaseEnv, acts []string, fixed string) string {
	switch d.cfg.Thought {
	case ThoughtChoices:
		names := actionNames(e)
		if len(names) == 0 {
			return strings.Join(acts, " then ")
		}
		return strings.Join(names, " or ") + "? " + strings.Join(acts, " then ")
	case ThoughtTemplates:
		w := make([]string, 3)
		for i := range w {
			w[i] = templateWords[d.rng.IntN(len(templateWords))]
		}
		return strings.Join(w, " ")
	}
	return fixed
}

// actionNames lists an env's action names in id order.
func actionNames(e env.BaseEnv) []string {
	al, ok := e.(env.ActionLookup)
	if !ok {
		return nil
	}
	return env.NamesInIDOrder(al.ActionLookup())
}
