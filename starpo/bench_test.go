package starpo

import (
	"context"
	"testing"

	"ragen/env"
	"ragen/env/bandit"
	"ragen/filter"
	"ragen/llm"
	"ragen/llm/tokenizer"
	"ragen/llmpolicy"
	"ragen/ragen"
	"ragen/torch"
)

// BenchmarkStep runs full StarPO steps (GAE, critic, reference, KL loss) of
// a tiny Qwen2 model that samples Bandit answers, 2 groups × 4 envs, and
// reports the mean time of every stage (ms/<stage>) and go_share: the part
// of a step spent outside the model's libtorch stages (generation,
// log-probs, values, updates), i.e. env stepping, prompt building,
// filtering, advantages and metrics in Go.
func BenchmarkStep(b *testing.B) {
	m, err := llm.New(llm.TinyConfig(tinyVocab), llm.Options{DType: torch.Float32, Device: torch.CPU, Seed: 3})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	ref, err := m.Clone()
	if err != nil {
		b.Fatal(err)
	}
	defer ref.Close()
	critic, err := llm.NewCritic(m)
	if err != nil {
		b.Fatal(err)
	}
	defer critic.Close()
	tags, err := env.DefaultTags()
	if err != nil {
		b.Fatal(err)
	}
	rc := ragen.DefaultConfig()
	rc.CustomEnvs = ragen.SpecsFromTags(tags)
	set := ragen.EnvSetConfig{EnvGroups: 2, GroupSize: 4, EnvConfigs: ragen.EnvConfigs{Tags: []string{"Bandit"}, NGroups: []int{2}}}
	rc.ESManager.Train, rc.ESManager.Val = set, set
	rc.AgentProxy.MaxTurn, rc.AgentProxy.MaxActionsPerTurn = 1, 1
	rc.Rollout.ResponseLength = 32
	var next int64
	prov := ragen.ProviderFuncs{New: func(string, ragen.EnvSpec) (env.BaseEnv, error) {
		next++
		return bandit.NewWithInternalSeed(bandit.DefaultConfig(), next-1)
	}}
	proxy, err := ragen.NewAgentProxy(rc, tokenizer.NewByte(), prov, llmpolicy.New(m, tokenizer.NewByte(), llmpolicy.Options{Seed: 1}))
	if err != nil {
		b.Fatal(err)
	}
	defer proxy.Close()
	cfg := DefaultConfig()
	cfg.ESManager.Train = EnvSetConfig{EnvGroups: 2, GroupSize: 4}
	cfg.ActorRolloutRef.Actor.PPOMiniBatchSize = 8
	cfg.ActorRolloutRef.Actor.PPOMicroBatchSizePerGPU = 4
	cfg.ActorRolloutRef.Actor.UseKLLoss, cfg.ActorRolloutRef.Actor.KLLossCoef = true, 0.01
	cfg.ActorRolloutRef.Rollout.LogProbMicroBatchSizePerGPU = 8
	cfg.Critic.PPOMiniBatchSize, cfg.Critic.PPOMicroBatchSizePerGPU = 8, 4
	cfg.Trainer.TotalTrainingSteps = 1 << 30
	cfg.Trainer.TestFreq, cfg.Trainer.SaveFreq = 0, 0
	tr, err := NewTrainer(cfg, Deps{Actor: m, Critic: critic, Ref: ref, Rollout: proxy.RolloutWith, Filter: filter.DefaultConfig()})
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Close()
	stages := []string{"gen", "filter", "old_log_prob", "ref", "values", "adv", "update_critic", "update_actor", "step"}
	sum := map[string]float64{}
	tokens := 0.0
	n := 0
	for b.Loop() {
		met, _, err := tr.trainStep(context.Background(), tr.st.Step+1)
		if err != nil {
			b.Fatal(err)
		}
		for _, s := range stages {
			sum[s] += met["timing_s/"+s]
		}
		tokens += met[MetricTotalTokens]
		n++
	}
	for _, s := range stages {
		b.ReportMetric(1000*sum[s]/float64(n), "ms/"+s)
	}
	torchStages := sum["gen"] + sum["old_log_prob"] + sum["ref"] + sum["values"] + sum["update_critic"] + sum["update_actor"]
	b.ReportMetric(1-torchStages/sum["step"], "go_share")
	b.ReportMetric(tokens/sum["step"], "tokens/s")
}

// BenchmarkTensorActorLoss is the actor objective (policy loss, entropy,
// low-var KL) forward and backward on a 128×512 float32 micro-batch.
func BenchmarkTensorActorLoss(b *testing.B) {
	const B, T = 128, 512
	g, err := torch.NewGenerator(1, torch.CPU)
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	s := torch.NewScope()
	defer s.Close()
	shape := []int64{B, T}
	lp0 := s.Escape(s.MulS(s.Rand(g, shape, torch.Float32, torch.CPU), -3))
	defer lp0.Free()
	old := s.Add(lp0, s.MulS(s.Randn(g, shape, torch.Float32, torch.CPU), 0.1))
	ref := s.Add(lp0, s.MulS(s.Randn(g, shape, torch.Float32, torch.CPU), 0.1))
	adv := s.Randn(g, shape, torch.Float32, torch.CPU)
	ent := s.Rand(g, shape, torch.Float32, torch.CPU)
	mask := s.Cast(s.GtS(s.Rand(g, shape, torch.Float32, torch.CPU), 0.3), torch.Float32)
	if err := lp0.SetRequiresGrad(true); err != nil {
		b.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.ActorRolloutRef.Actor.UseKLLoss, cfg.ActorRolloutRef.Actor.KLLossType, cfg.ActorRolloutRef.Actor.KLLossCoef = true, "low_var_kl", 0.01
	acfg := cfg.ActorLossConfig()
	for b.Loop() {
		if err := withScope(func(ls *torch.Scope) error {
			loss, met := ActorLoss(ls, lp0, ent, old, ref, adv, mask, acfg)
			if err := loss.Backward(nil); err != nil {
				return err
			}
			met.Read(ls)
			return ls.Err()
		}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(B*T)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}
