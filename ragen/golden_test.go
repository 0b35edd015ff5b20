package ragen

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ragen/env"
	"ragen/llm/tokenizer"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to create %s", path)
	require.Equal(t, string(want), got)
}

// goldenHistory plays one Line env (seed 0: player at 0) for three turns:
// two rights, a malformed answer (→ warning next turn), one right.
func goldenHistory(t *testing.T, cfg Config) (*EnvStateManager, []*EnvOutput) {
	t.Helper()
	cfg.Seed.Train = i64(0)
	m, err := NewEnvStateManager(cfg, env.ModeTrain, &testProvider{})
	require.NoError(t, err)
	ctx := context.Background()
	outs, err := m.Reset(ctx, nil)
	require.NoError(t, err)
	cm := &ContextManager{cfg: cfg}
	for _, g := range []string{" go right </think><answer>Right || Right</answer>", "I refuse", "<think> once more </think><answer>right</answer>"} {
		in := cm.ParseResponse(g)
		in.EnvID = 0
		outs, err = m.Step(ctx, []EnvInput{in})
		require.NoError(t, err)
	}
	return m, outs
}

func renderMessages(msgs []tokenizer.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&b, "--- %s ---\n%s\n", m.Role, m.Content)
	}
	return b.String()
}

func TestGoldenPrompts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mode  string
		k     int
		think bool
	}{
		{"full", ModeFull, -1, true},
		{"full_nothink", ModeFull, -1, false},
		{"limited_k2", ModeLimitedMultiTurn, 2, true},
		{"single_turn_k2", ModeSingleTurn, 2, true},
		{"single_turn_unlimited", ModeSingleTurn, -1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(1, []string{"Line"}, []int{1})
			cfg.AgentProxy.ContextWindowMode = tc.mode
			cfg.AgentProxy.MaxContextWindow = tc.k
			cfg.AgentProxy.EnableThink = tc.think
			m, outs := goldenHistory(t, cfg)
			tok := tokenizer.NewByte()
			cm, err := NewContextManager(cfg, env.ModeTrain, tok, &testProvider{})
			require.NoError(t, err)
			ps, err := cm.Prompts(outs)
			require.NoError(t, err)
			var b strings.Builder
			b.WriteString("=== inference prompt (turn 4) ===\n")
			b.WriteString(ps[0].Text)
			b.WriteString("\n=== training samples ===\n")
			batch, err := cm.BuildBatch(m.GetRolloutStates())
			require.NoError(t, err)
			for i, msgs := range batch.Messages {
				fmt.Fprintf(&b, "### sample %d (episode %d)\n", i, batch.EpisodeIDs[i])
				b.WriteString(renderMessages(msgs))
			}
			checkGolden(t, "prompt_"+tc.name, b.String())
		})
	}
}

func TestSystemPrompt(t *testing.T) {
	spec := EnvSpec{EnvInstruction: "Solve it.", MaxActionsPerTraj: 10}
	info := PromptInfo{GridVocab: []VocabEntry{{"#", "wall"}, {"_", "empty"}}, ActionNames: []string{"Up", "Down"}}
	require.Equal(t, "You're a helpful assistant. Solve it.\nThe meaning of each symbol in the state is:\n#: wall, _: empty\nYour available actions are:\nUp, Down\nYou can make up to 10 actions, separated by the action separator \" || \"\n",
		SystemPrompt(spec, info, "||"))
	info.ObservationFormat = "coord"
	require.Equal(t, "You're a helpful assistant. Solve it."+coordStatesText+"\nYour available actions are:\nUp, Down\nYou can make up to 10 actions, separated by the action separator \" || \"\n",
		SystemPrompt(spec, info, "||"))
	info.ObservationFormat = "grid_coord" // neither grid vocab nor coord text
	require.Equal(t, "You're a helpful assistant. Solve it.\nYour available actions are:\nUp, Down\nYou can make up to 10 actions, separated by the action separator \" || \"\n",
		SystemPrompt(spec, info, "||"))
	require.Equal(t, "You're a helpful assistant. ", SystemPrompt(EnvSpec{}, PromptInfo{}, "||"))
}
