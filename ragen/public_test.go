package ragen

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ragen/env"
	"ragen/llm/tokenizer"
)

func TestParseResponsePublic(t *testing.T) {
	resp, acts := ParseResponse("<think> go left </think><answer>Left || Up</answer>", ParseOptions{EnableThink: true, ActionSep: "||", MaxActions: 5})
	assert.Equal(t, "<think>go left</think><answer>Left || Up</answer>", resp)
	assert.Equal(t, []string{"Left", "Up"}, acts)
	// One action allowed: the answer is cut to it.
	resp, acts = ParseResponse("<answer>Left || Up</answer>", ParseOptions{ActionSep: "||", MaxActions: 1})
	assert.Equal(t, "<answer>Left</answer>", resp)
	assert.Equal(t, []string{"Left"}, acts)
	// Thinking expected but missing: no actions, text back.
	resp, acts = ParseResponse("<answer>Left</answer>", ParseOptions{EnableThink: true, ActionSep: "||", MaxActions: 1})
	assert.Equal(t, "<answer>Left</answer>", resp)
	assert.Empty(t, acts)
}

// Hand values: grouping state, mean_std over {1, 3} and {5}: the pair has
// mean 2, sample std √2 → ±1/(1+1e-6·…) ≈ ±0.7071; the singleton → 0.
func TestNormalizeRewardsPublic(t *testing.T) {
	out, err := NormalizeRewards([]float64{1, 3, 5}, []int{0, 0, 1}, nil, RewardNormalizationConfig{Grouping: "state", Method: "mean_std"})
	require.NoError(t, err)
	assert.InDeltaSlice(t, []float64{-0.7071, 0.7071, 0}, out, 1e-4)
	out, err = NormalizeRewards([]float64{1, 3, 5}, nil, nil, RewardNormalizationConfig{Grouping: "batch", Method: "mean"})
	require.NoError(t, err)
	assert.InDeltaSlice(t, []float64{-2, 0, 2}, out, 1e-6)
	_, err = NormalizeRewards([]float64{1, 3}, []int{0}, nil, RewardNormalizationConfig{Grouping: "state", Method: "mean"})
	assert.ErrorContains(t, err, "needs 2 group ids")
	_, err = NormalizeRewards([]float64{1, 3}, nil, nil, RewardNormalizationConfig{Grouping: "batch", Method: "zscore"})
	assert.ErrorContains(t, err, "zscore")
}

// Status follows an episode: after reset nothing is done; a bandit pull
// ends it with one action and its reward.
func TestEnvStateManagerStatus(t *testing.T) {
	tags, err := env.DefaultTags()
	require.NoError(t, err)
	cfg := DefaultConfig()
	cfg.CustomEnvs = SpecsFromTags(tags)
	cfg.ESManager.Val = EnvSetConfig{EnvGroups: 1, GroupSize: 1, EnvConfigs: EnvConfigs{Tags: []string{"Bandit"}, NGroups: []int{1}}}
	m, err := NewEnvStateManager(cfg, env.ModeVal, DefaultProvider())
	require.NoError(t, err)
	defer m.Close()
	seed := int64(11)
	outs, err := m.Reset(context.Background(), &seed)
	require.NoError(t, err)
	st, err := m.Status(0)
	require.NoError(t, err)
	assert.False(t, st.Terminated)
	assert.Zero(t, st.NumActions)
	arm := env.Innermost(m.Env(0)).(env.ActionLookup).ActionLookup()
	var name string
	for _, n := range arm {
		name = n
	}
	_, err = m.Step(context.Background(), []EnvInput{{EnvID: outs[0].EnvID, Actions: []string{name}, LLMResponse: "<answer>" + name + "</answer>"}})
	require.NoError(t, err)
	st, err = m.Status(0)
	require.NoError(t, err)
	assert.True(t, st.Terminated)
	assert.Equal(t, 1, st.NumActions)
	assert.Len(t, st.Rewards, 1)
	_, err = m.Status(1)
	assert.ErrorContains(t, err, "out of range")
}

// Masks of "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n
// <|im_start|>assistant\nA<|im_end|>": the assistant's "A" and its
// <|im_end|> are response tokens; without the response mask every token
// after the system turn is trained.
func TestBuildMasks(t *testing.T) {
	tok := newWordTok()
	text := "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\nA<|im_end|>"
	ids := tok.Encode(text)
	cfg := DefaultConfig()
	cfg.EnableResponseMask = true
	m, err := BuildMasks(tok, ids, cfg)
	require.NoError(t, err)
	require.Len(t, m.Response, len(ids)-1)
	var gen []string
	for j, v := range m.Response {
		if v == 1 {
			gen = append(gen, tok.Decode([]int{ids[j+1]}))
		}
	}
	assert.Equal(t, []string{"A", "<|im_end|>"}, gen)
	assert.Equal(t, m.Response, m.Loss)
	cfg.EnableResponseMask = false
	m, err = BuildMasks(tok, ids, cfg)
	require.NoError(t, err)
	assert.Greater(t, sum(m.Loss), sum(m.Response))
	_, err = BuildMasks(tokenizer.NewByte(), []int{1}, cfg)
	assert.ErrorContains(t, err, "need at least 2")
}

func sum(x []int) int {
	n := 0
	for _, v := range x {
		n += v
	}
	return n
}

func TestConfigFor(t *testing.T) {
	cfg, err := ConfigFor("Bandit", 3, 2)
	require.NoError(t, err)
	assert.Equal(t, 3, cfg.ESManager.Train.EnvGroups)
	assert.Equal(t, []string{"Bandit"}, cfg.ESManager.Val.EnvConfigs.Tags)
	assert.Equal(t, "bandit", cfg.CustomEnvs["Bandit"].EnvType)
	_, err = ConfigFor("Bandt", 3, 2)
	assert.ErrorContains(t, err, `unknown env tag "Bandt"`)
}
