package ragen

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ragen/env"
	"ragen/llm/tokenizer"
)

func TestCollapseData(t *testing.T) {
	// Golden history: turn 0 "go right" (think), turn 1 malformed (raw text
	// kept, it has "<think>I refuse" but no closing tag → no reasoning),
	// turn 2 "once more".
	cfg := testConfig(1, []string{"Line"}, []int{1})
	m, _ := goldenHistory(t, cfg)
	cm := newCM(t, cfg)
	d, err := cm.Collapse(m.GetRolloutStates())
	require.NoError(t, err)
	tok := tokenizer.NewByte()
	assert.Equal(t, []int{2}, d.TurnCounts)
	assert.Equal(t, []int{3}, d.TurnCountsTotal)
	assert.Equal(t, "go right", tok.Decode(d.FirstTurnReasoningIDs[0]))
	assert.Equal(t, "once more", tok.Decode(d.AllTurnsReasoningIDs[0][1]))
	// The first-turn prompt is system + turn-1 block + generation prompt + <think>.
	x := tok.Decode(d.FirstTurnPromptIDs[0])
	assert.True(t, strings.HasSuffix(x, "Max response length: 100 words (tokens).\n<|im_end|>\n<|im_start|>assistant\n<think>"), "%q", x)
	assert.NotContains(t, x, "Turn 2:")
	// Turn 2's prompt rebuilds turns 0..2 without the invalid-action warning.
	x2 := tok.Decode(d.AllTurnsPromptIDs[0][1])
	assert.Contains(t, x2, "Reward:\n0\n\nTurn 3:")
	assert.NotContains(t, x2, "No valid action")
	assert.Equal(t, d.FirstTurnPromptIDs[0], d.AllTurnsPromptIDs[0][0])

	cfg.AgentProxy.ContextWindowMode = ModeSingleTurn
	_, err = newCM(t, cfg).Collapse(m.GetRolloutStates())
	assert.ErrorContains(t, err, "context_window_mode full")
}

func TestRolloutWithCollapse(t *testing.T) {
	cfg := testConfig(1, []string{"Line"}, []int{2})
	a, err := NewAgentProxy(cfg, tokenizer.NewByte(), &testProvider{}, &ScriptedPolicy{Func: walkScript})
	require.NoError(t, err)
	b, err := a.RolloutWith(context.Background(), env.ModeTrain, RolloutOptions{Collapse: true})
	require.NoError(t, err)
	require.NotNil(t, b.Collapse)
	assert.Len(t, b.Collapse.TurnCounts, 2)
	b, err = a.Rollout(context.Background(), env.ModeTrain)
	require.NoError(t, err)
	assert.Nil(t, b.Collapse)
}
