package ragen

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"ragen/env"
)

// An env type with a registered memory gets its single-turn user message
// from it, with the window's turns, the answers cut out of the replies and
// the warning flag; other types keep SimpleMemory.
func TestRegisteredMemory(t *testing.T) {
	var got env.MemoryInput
	env.RegisterMemory("memtest_env", func(in env.MemoryInput) string { got = in; return "MEMORY" })
	cfg := DefaultConfig()
	cfg.CustomEnvs = map[string]EnvSpec{"M": {EnvType: "memtest_env", MaxActionsPerTraj: 9}, "S": {EnvType: "bandit", MaxActionsPerTraj: 9}}
	c := &ContextManager{cfg: cfg, system: map[string]string{}, maxTokens: map[string]int{}}
	hist := []HistoryEntry{
		{State: "first", Acted: true, LLMResponse: "<think>a</think><answer>go north</answer>"},
		{State: "second", Acted: true, LLMResponse: "no tags"},
		{State: "third", ActionsLeft: 7, ManagerInvalidAction: true},
	}
	assert.Equal(t, "MEMORY", c.memoryContent("M", hist, 0, 2, 0, true))
	assert.Equal(t, "first", got.FirstState)
	assert.Equal(t, "third", got.State)
	assert.Equal(t, 2, got.Completed)
	assert.Equal(t, 7, got.ActionsLeft)
	assert.True(t, got.Invalid)
	if assert.Len(t, got.History, 2) {
		assert.Equal(t, "go north", got.History[0].Answer)
		assert.Equal(t, "no tags", got.History[1].Answer)
	}
	assert.Contains(t, c.memoryContent("S", hist, 0, 2, 0, true), "Summary: 2 step(s) completed so far.")
}
