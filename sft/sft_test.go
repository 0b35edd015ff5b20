package sft

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"ragen/env"
	_ "ragen/env/all"
	"ragen/llm"
	"ragen/llm/tokenizer"
	"ragen/ragen"
	"ragen/torch"
)

func banditConfig(t *testing.T) ragen.Config {
	rc := ragen.DefaultConfig()
	tags, err := env.DefaultTags()
	require.NoError(t, err)
	rc.CustomEnvs = ragen.SpecsFromTags(tags)
	set := ragen.EnvSetConfig{EnvGroups: 2, GroupSize: 2, EnvConfigs: ragen.EnvConfigs{Tags: []string{"Bandit"}, NGroups: []int{2}}}
	rc.ESManager.Train, rc.ESManager.Val = set, set
	rc.AgentProxy.MaxTurn = 1
	return rc
}

func TestSFTLossFallsAndEveryParameterMoves(t *testing.T) {
	torch.SetNumThreads(2)
	start := torch.Live()
	tok := tokenizer.NewByte()
	m, err := llm.New(llm.TinyConfig(tok.VocabSize()), llm.Options{DType: torch.Float32, Device: torch.CPU, Seed: 7})
	require.NoError(t, err)
	before := map[string][]float32{}
	for _, p := range m.Params() {
		v, err := torch.Data[float32](p.T)
		require.NoError(t, err)
		before[p.Name] = v
	}
	cfg := DefaultConfig()
	cfg.Steps, cfg.LR, cfg.WarmupRatio = 25, 3e-3, 0
	tr, err := New(cfg, m, tok, banditConfig(t), ragen.DefaultProvider())
	require.NoError(t, err)
	var losses []float64
	require.NoError(t, tr.Run(context.Background(), func(step int, mt map[string]float64) error {
		losses = append(losses, mt[MetricLoss])
		require.Positive(t, mt[MetricTokens])
		s := mt[MetricSuccess] // random arms: some but not all pulls hit the better arm
		require.True(t, s >= 0 && s <= 1, "success %v", s)
		return nil
	}))
	require.Len(t, losses, 25)
	require.Less(t, losses[24], losses[0]*0.5, "loss should halve: %v", losses)
	for _, p := range m.Params() {
		v, err := torch.Data[float32](p.T)
		require.NoError(t, err)
		moved := false
		for i := range v {
			if v[i] != before[p.Name][i] {
				moved = true
				break
			}
		}
		require.True(t, moved, "parameter %s did not move", p.Name)
	}
	require.NoError(t, tr.Close())
	m.Close()
	require.Equal(t, start, torch.Live())
}

func TestLRSchedule(t *testing.T) {
	c := Config{Steps: 10, LR: 1, WarmupRatio: 0.2, MinLRRatio: 0.1}
	// warm-up over round(0.2*10)=2 steps: 0.5, 1; then cosine from 1 to 0.1 over steps 2..9
	require.InDelta(t, 0.5, c.LRAt(0), 1e-12)
	require.InDelta(t, 1.0, c.LRAt(1), 1e-12)
	require.InDelta(t, 1.0, c.LRAt(2), 1e-12)
	require.InDelta(t, 0.1, c.LRAt(9), 1e-12)
	require.InDelta(t, 0.1+0.9*0.5*(1+math.Cos(math.Pi*3.0/7)), c.LRAt(5), 1e-12)
}

func TestConfigErrors(t *testing.T) {
	err := Config{Steps: 0, LR: -1, WarmupRatio: 2, MinLRRatio: -1, Noise: 3, Thought: "loud"}.Validate()
	for _, want := range []string{"steps=0", "lr=-1", "warmup_ratio=2", "min_lr_ratio=-1", "noise=3", "micro_batch_tokens=0",
		`thought="loud": want one of fixed, choices, templates`} {
		require.ErrorContains(t, err, want)
	}
}
