package ragen_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ragen/env"
	_ "ragen/env/all"
	"ragen/llm/tokenizer"
	"ragen/ragen"
)

func demoConfig(t *testing.T, tag string, groups, size int) ragen.Config {
	t.Helper()
	cfg := ragen.DefaultConfig()
	tags, err := env.DefaultTags()
	require.NoError(t, err)
	cfg.CustomEnvs = ragen.SpecsFromTags(tags)
	set := ragen.EnvSetConfig{EnvGroups: groups, GroupSize: size, EnvConfigs: ragen.EnvConfigs{Tags: []string{tag}, NGroups: []int{groups}}}
	cfg.ESManager.Train, cfg.ESManager.Val = set, set
	return cfg
}

func TestDemonstratorSolvesWithOracleAndTrainsOnResponses(t *testing.T) {
	cfg := demoConfig(t, "SimpleSokoban", 4, 1)
	tok := tokenizer.NewByte()
	var proxy *ragen.AgentProxy
	demo, err := ragen.NewDemonstrator(ragen.DemonstratorConfig{MaxActions: 2, Sep: "||", EnableThink: true, Seed: 1},
		func(id int) env.BaseEnv { return proxy.EnvManager(env.ModeTrain).Env(id) })
	require.NoError(t, err)
	proxy, err = ragen.NewAgentProxy(cfg, tok, ragen.DefaultProvider(), demo)
	require.NoError(t, err)
	defer proxy.Close()
	b, err := proxy.Rollout(context.Background(), env.ModeTrain)
	require.NoError(t, err)
	// the shortest plans of 6x6 one-box rooms fit in 5 turns x 2 actions for these seeds
	require.Equal(t, 1.0, b.Metrics["SimpleSokoban/success"], "metrics: %v", b.Metrics)
	require.Len(t, b.InputIDs, 4)
	for i := range b.InputIDs {
		// the loss mask covers the demonstrated responses, which decode to the answer format
		var resp []int
		for j, m := range b.LossMask[i] {
			if m == 1 {
				resp = append(resp, b.InputIDs[i][j])
			}
		}
		text := tok.Decode(resp)
		require.Contains(t, text, "<answer>")
		require.Contains(t, text, "</think>")
		require.NotContains(t, text, "<|im_start|>user")
		require.Equal(t, 0, strings.Count(text, "<think><think>"), text)
	}
}

func TestDemonstratorNoiseAndBandit(t *testing.T) {
	cfg := demoConfig(t, "Bandit", 8, 2)
	var proxy *ragen.AgentProxy
	demo, err := ragen.NewDemonstrator(ragen.DemonstratorConfig{MaxActions: 2, EnableThink: true, Seed: 3},
		func(id int) env.BaseEnv { return proxy.EnvManager(env.ModeTrain).Env(id) })
	require.NoError(t, err)
	proxy, err = ragen.NewAgentProxy(cfg, tokenizer.NewByte(), ragen.DefaultProvider(), demo)
	require.NoError(t, err)
	defer proxy.Close()
	b, err := proxy.Rollout(context.Background(), env.ModeTrain)
	require.NoError(t, err)
	// a bandit has no oracle: one uniformly random arm per turn, always valid
	require.Equal(t, 1.0, b.Metrics["Bandit/action_is_valid"], "metrics: %v", b.Metrics)
	s := b.Metrics["Bandit/success"]
	require.True(t, s > 0 && s < 1, "16 random pulls should pick both arms, success=%v", s)
	for _, m := range b.Messages {
		last := m[len(m)-1]
		require.Equal(t, "assistant", last.Role)
		require.Equal(t, 1, strings.Count(last.Content, "<answer>"))
	}

	_, err = ragen.NewDemonstrator(ragen.DemonstratorConfig{Noise: 2}, func(int) env.BaseEnv { return nil })
	require.ErrorContains(t, err, "noise=2")
}

// The thought styles: "choices" names the state's arms in the order the
// prompt shows them, then the pick; "templates" says one of a fixed set of
// sentences that never names an arm; a style not in the list is an error.
func TestDemonstratorThoughtStyles(t *testing.T) {
	think := regexp.MustCompile(`<think>(.*?)</think><answer>(.*?)</answer>`)
	arms := regexp.MustCompile(`named (\w+) and (\w+)`)
	for _, style := range []string{ragen.ThoughtChoices, ragen.ThoughtTemplates} {
		cfg := demoConfig(t, "Bandit", 8, 2)
		var proxy *ragen.AgentProxy
		demo, err := ragen.NewDemonstrator(ragen.DemonstratorConfig{Noise: 1, MaxActions: 1, EnableThink: true, Seed: 3, Thought: style},
			func(id int) env.BaseEnv { return proxy.EnvManager(env.ModeTrain).Env(id) })
		require.NoError(t, err)
		proxy, err = ragen.NewAgentProxy(cfg, tokenizer.NewByte(), ragen.DefaultProvider(), demo)
		require.NoError(t, err)
		b, err := proxy.Rollout(context.Background(), env.ModeTrain)
		proxy.Close()
		require.NoError(t, err)
		thoughts := map[string]bool{}
		for _, m := range b.Messages {
			a := arms.FindStringSubmatch(m[len(m)-2].Content)
			require.NotNil(t, a, "prompt names no arms: %q", m[len(m)-2].Content)
			r := think.FindStringSubmatch("<think>" + strings.TrimPrefix(m[len(m)-1].Content, "<think>"))
			require.NotNil(t, r, m[len(m)-1].Content)
			thoughts[r[1]] = true
			switch style {
			case ragen.ThoughtChoices:
				require.Equal(t, a[1]+" or "+a[2]+"? "+r[2], r[1])
			case ragen.ThoughtTemplates:
				require.NotContains(t, r[1], a[1])
				require.NotContains(t, r[1], a[2])
			}
		}
		require.Greater(t, len(thoughts), 2, "%s: 16 turns should not all think alike: %v", style, thoughts)
	}
	_, err := ragen.NewDemonstrator(ragen.DemonstratorConfig{Thought: "verbose"}, func(int) env.BaseEnv { return nil })
	require.ErrorContains(t, err, `thought "verbose": want one of fixed, choices, templates`)
}

func TestDefaultProviderPromptFactsOfRemoteEnvs(t *testing.T) {
	p := ragen.DefaultProvider()
	local, err := p.PromptInfo("SimpleSokoban", ragen.EnvSpec{EnvType: "sokoban"})
	require.NoError(t, err)
	require.NotEmpty(t, local.ActionNames)
	remote, err := p.PromptInfo("RemoteSokoban", ragen.EnvSpec{EnvType: "http",
		EnvConfig: map[string]any{"url": "http://127.0.0.1:1", "env_type": "sokoban"}})
	require.NoError(t, err)
	require.Equal(t, local, remote)
}
