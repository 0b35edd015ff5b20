package ragen

import (
	"fmt"
	"math"
)

// Pieces of the rollout core that research code calls on their own,
// without building a ContextManager or an EnvStateManager.

// ParseOptions are the agent_proxy settings the response parser reads.
type ParseOptions struct {
	// EnableThink expects "<think>…</think><answer>…</answer>"; false
	// expects "<answer>…</answer>" alone (agent_proxy.enable_think).
	EnableThink bool
	// ActionSep splits the answer into actions (agent_proxy.action_sep,
	// upstream "||"); "" gives no actions.
	ActionSep string
	// MaxActions keeps at most this many actions (max_actions_per_turn);
	// negative keeps all.
	MaxActions int
}

// ParseResponse is upstream's response parser (context-and-rollout.md
// §3.4) over the full text of an answer, the forced prefix included (the
// prompt's trailing "<think>" or "<answer>" is not added here; see
// ContextManager.ParseResponse for that). It returns the normalised
// response ("<think>z</think><answer>a</answer>", special tokens removed)
// and the parsed actions; text that does not match gives itself back and no
// actions (the format penalty applies upstream).
func ParseResponse(text string, opt ParseOptions) (response string, actions []string) {
	return parseResponse(text, opt.EnableThink, opt.ActionSep, opt.MaxActions)
}

// NormalizeRewards applies agent_proxy.reward_normalization (spec §3.8) to
// per-episode scores: groupIDs (grouping "state") or tags (grouping
// "inductive") say which episodes are normalised together; "batch" uses
// them all. Either slice may be nil when its grouping is not used. Like
// upstream it works in float32, and a group of one member or of near-equal
// scores (std ≤ 1e-6) becomes zeros under mean_std and asym_clip.
func NormalizeRewards(scores []float64, groupIDs []int, tags []string, cfg RewardNormalizationConfig) ([]float64, error) {
	outs := make([]*EnvOutput, len(scores))
	x := make([]float32, len(scores))
	for i, s := range scores {
		if math.IsNaN(s) || math.IsInf(s, 0) {
			return nil, fmt.Errorf("ragen: NormalizeRewards: score %d is %v", i, s)
		}
		o := &EnvOutput{}
		switch {
		case cfg.Grouping == "state" && len(groupIDs) != len(scores):
			return nil, fmt.Errorf("ragen: NormalizeRewards: grouping state needs %d group ids, got %d", len(scores), len(groupIDs))
		case cfg.Grouping == "inductive" && len(tags) != len(scores):
			return nil, fmt.Errorf("ragen: NormalizeRewards: grouping inductive needs %d tags, got %d", len(scores), len(tags))
		}
		if groupIDs != nil && i < len(groupIDs) {
			o.GroupID = groupIDs[i]
		}
		if tags != nil && i < len(tags) {
			o.Tag = tags[i]
		}
		outs[i], x[i] = o, float32(s)
	}
	y, err := normalizeScores(x, outs, cfg)
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(y))
	for i, v := range y {
		out[i] = float64(v)
	}
	return out, nil
}

// EnvStatus is the manager's bookkeeping of one env (spec §2).
type EnvStatus struct {
	Seed       int64    // the seed of the last reset
	NumActions int      // primitive actions executed this episode
	Rewards    []Reward // per-turn rewards so far
	Terminated bool     // the episode ended (done, or the action cap)
	Truncated  bool     // ended without success (the cap, or done with success false)
	Done       bool     // the manager will not step this env again this rollout
}

// Status returns env envID's bookkeeping.
func (m *EnvStateManager) Status(envID int) (EnvStatus, error) {
	if envID < 0 || envID >= len(m.envs) {
		return EnvStatus{}, fmt.Errorf("ragen: env id %d out of range [0, %d)", envID, len(m.envs))
	}
	e := m.envs[envID]
	return EnvStatus{Seed: e.status.seed, NumActions: e.status.numActions, Rewards: append([]Reward(nil), e.status.rewards...),
		Terminated: e.status.terminated, Truncated: e.status.truncated, Done: e.done}, nil
}
