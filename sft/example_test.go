package sft_test

import (
	"context"
	"fmt"

	"ragen/env"
	_ "ragen/env/all"
	"ragen/llm"
	"ragen/llm/tokenizer"
	"ragen/ragen"
	"ragen/sft"
	"ragen/torch"
)

// New and Run warm a model up on the bandit env's solver demonstrations,
// rendered exactly as the RL stage renders its prompts; log sees every
// step's metrics (the loss falls from the untrained model's).
func Example() {
	tok := tokenizer.NewByte()
	m, err := llm.New(llm.TinyConfig(tok.VocabSize()), llm.Options{DType: torch.Float32, Device: torch.CPU, Seed: 7})
	if err != nil {
		panic(err)
	}
	defer m.Close()
	rc := ragen.DefaultConfig()
	tags, err := env.DefaultTags()
	if err != nil {
		panic(err)
	}
	rc.CustomEnvs = ragen.SpecsFromTags(tags)
	set := ragen.EnvSetConfig{EnvGroups: 2, GroupSize: 2, EnvConfigs: ragen.EnvConfigs{Tags: []string{"Bandit"}, NGroups: []int{2}}}
	rc.ESManager.Train, rc.ESManager.Val = set, set
	rc.AgentProxy.MaxTurn = 1

	cfg := sft.DefaultConfig()
	cfg.Steps, cfg.LR, cfg.WarmupRatio = 10, 3e-3, 0
	tr, err := sft.New(cfg, m, tok, rc, ragen.DefaultProvider())
	if err != nil {
		panic(err)
	}
	defer tr.Close()
	var losses []float64
	err = tr.Run(context.Background(), func(step int, mt map[string]float64) error {
		losses = append(losses, mt[sft.MetricLoss])
		return nil
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(len(losses), "steps; loss fell:", losses[len(losses)-1] < losses[0])
	// Output: 10 steps; loss fell: true
}
