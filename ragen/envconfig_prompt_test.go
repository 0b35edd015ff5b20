package ragen_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ragen/env"
	"ragen/llm/tokenizer"
	"ragen/ragen"
)

// Overview quirk 3: upstream builds the system prompt from the env type's
// default config, so SokobanDifferentGridVocab's own vocabulary never
// reaches it; ragen_prompt_from_env_config lets it (in grid_lookup order).
func TestPromptFromEnvConfig(t *testing.T) {
	cfg := demoConfig(t, "SokobanDifferentGridVocab", 1, 1)
	prompt := func(cfg ragen.Config) string {
		cm, err := ragen.NewContextManager(cfg, env.ModeTrain, tokenizer.NewByte(), ragen.DefaultProvider())
		require.NoError(t, err)
		return cm.SystemMessage("SokobanDifferentGridVocab")
	}
	def := prompt(cfg)
	assert.Contains(t, def, "#: wall, _: empty, O: target, √: box on target, X: box, P: player, S: player on target")
	cfg.PromptFromEnvConfig = true
	own := prompt(cfg)
	assert.Contains(t, own, "W: wall, .: empty, G: target, C: box on target, B: box, A: player, @: player on target")
	assert.Contains(t, own, "Your available actions are:\nUp, Down, Left, Right")
}

// The default configs report the registered prompt facts, so the option
// changes nothing for a tag without its own vocabulary or actions.
func TestPromptFactsOfDefaultConfigs(t *testing.T) {
	for _, typ := range []string{"sokoban", "frozen_lake", "game_2048"} {
		e, err := env.New(typ, nil)
		require.NoError(t, err)
		f, ok := e.(env.PromptFacter)
		require.True(t, ok, typ)
		want, _ := env.PromptDefaultsFor(typ)
		assert.Equal(t, want, f.PromptFacts(), typ)
		e.Close()
	}
}
