package starpo_test

import (
	"context"
	"fmt"
	"os"

	"ragen/env"
	"ragen/env/bandit"
	"ragen/filter"
	"ragen/llm"
	"ragen/llm/tokenizer"
	"ragen/llmpolicy"
	"ragen/ragen"
	"ragen/starpo"
	"ragen/starpo/algo"
	"ragen/torch"
)

// The learning-rate multiplier of a cosine schedule with warm-up.
func ExampleLRSchedule_Factor() {
	s := starpo.LRSchedule{Warmup: 2, Total: 10, Style: starpo.WarmupCosine, MinLRRatio: 0.1, NumCycles: 0.5}
	for _, n := range []int{0, 1, 2, 6, 10} {
		fmt.Printf("step %d: %.2f\n", n, s.Factor(n))
	}
	// Output:
	// step 0: 0.10
	// step 1: 0.55
	// step 2: 1.00
	// step 6: 0.55
	// step 10: 0.10
}

// agg_loss on tensors: token-mean averages over all masked tokens,
// seq-mean-token-mean averages the per-row means.
func ExampleAggLoss() {
	s := torch.NewScope()
	defer s.Close()
	x, _ := torch.From([]float64{1, 2, 3, 4, 5, 6}, 2, 3)
	m, _ := torch.From([]float64{1, 1, 0, 1, 0, 0}, 2, 3)
	x, m = s.Own(x, nil), s.Own(m, nil)
	fmt.Printf("token-mean %.4f\n", s.Item(starpo.AggLoss(s, x, m, algo.TokenMean)))
	fmt.Printf("seq-mean-token-mean %.4f\n", s.Item(starpo.AggLoss(s, x, m, algo.SeqMeanTokenMean)))
	// Output:
	// token-mean 2.3333
	// seq-mean-token-mean 2.7500
}

// Training a tiny Qwen2 policy on the Bandit env for one step: the policy
// samples through llmpolicy.New, the batch is filtered, advantages come from
// GRPO and the actor takes one PPO update; the trained policy is exported
// as a Hugging Face folder.
func ExampleNewTrainer() {
	m, err := llm.New(llm.TinyConfig(259), llm.Options{DType: torch.Float32, Device: torch.CPU, Seed: 1})
	if err != nil {
		panic(err)
	}
	defer m.Close()
	tags, err := env.DefaultTags()
	if err != nil {
		panic(err)
	}
	rc := ragen.DefaultConfig()
	rc.CustomEnvs = ragen.SpecsFromTags(tags)
	set := ragen.EnvSetConfig{EnvGroups: 2, GroupSize: 2, EnvConfigs: ragen.EnvConfigs{Tags: []string{"Bandit"}, NGroups: []int{2}}}
	rc.ESManager.Train, rc.ESManager.Val = set, set
	rc.AgentProxy.MaxTurn, rc.AgentProxy.MaxActionsPerTurn = 1, 1
	rc.Rollout.ResponseLength = 8
	var next int64
	prov := ragen.ProviderFuncs{New: func(string, ragen.EnvSpec) (env.BaseEnv, error) {
		next++
		return bandit.NewWithInternalSeed(bandit.DefaultConfig(), next-1)
	}}
	proxy, err := ragen.NewAgentProxy(rc, tokenizer.NewByte(), prov, llmpolicy.New(m, tokenizer.NewByte(), llmpolicy.Options{Seed: 1}))
	if err != nil {
		panic(err)
	}
	defer proxy.Close()

	cfg := starpo.DefaultConfig()
	cfg.ESManager.Train = starpo.EnvSetConfig{EnvGroups: 2, GroupSize: 2}
	cfg.Algorithm.AdvEstimator = algo.EstGRPO // no critic
	cfg.ActorRolloutRef.Actor.PPOMiniBatchSize = 4
	cfg.ActorRolloutRef.Actor.Optim.LR = 1e-4
	cfg.Trainer.TotalTrainingSteps = 1
	cfg.Trainer.ValBeforeTrain = false
	cfg.Trainer.TestFreq, cfg.Trainer.SaveFreq = 0, 0
	cfg.Trainer.ResumeMode = starpo.ResumeDisable
	tr, err := starpo.NewTrainer(cfg, starpo.Deps{Actor: m, Rollout: proxy.RolloutWith, Filter: filter.DefaultConfig()})
	if err != nil {
		panic(err)
	}
	defer tr.Close()
	stop, err := tr.Fit(context.Background())
	if err != nil {
		panic(err)
	}
	dir, _ := os.MkdirTemp("", "ragen-export-")
	defer os.RemoveAll(dir)
	fmt.Println(stop, tr.Step(), tr.Export(dir) == nil)
	// Output: finished 1 true
}
