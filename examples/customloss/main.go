// Customloss: a custom policy objective plugged into the starpo.Trainer.
//
// The loss is a sequence-level clipped objective in the style of GSPO: one
// importance ratio per trajectory, the exponential of the mean per-token
// log-ratio, clipped like PPO's, times the trajectory's mean advantage:
//
//	r_i = exp(mean_t(log π_θ − log π_old))      over the response tokens of i
//	L   = mean_i max(−A_i·r_i, −A_i·clip(r_i, 1−ε, 1+ε))
//
// It is written with the public tensor API (ragen/torch): the per-token
// inputs arrive in a starpo.ActorLossInput, the loss is a scalar tensor that
// carries the autograd graph, and the metrics are scalar tensors under
// stable keys. Deps.ActorLoss hands it to the trainer.
//
//	go run . [-steps 2]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"ragen/env"
	_ "ragen/env/all"
	"ragen/filter"
	"ragen/llm"
	"ragen/llm/tokenizer"
	"ragen/ragen"
	"ragen/starpo"
	"ragen/starpo/algo"
	"ragen/torch"
)

// SequenceClipLoss is the objective above; ε is the config's clip_ratio.
func SequenceClipLoss(s *torch.Scope, in starpo.ActorLossInput, cfg algo.ActorLossConfig) (*torch.Tensor, starpo.MetricTensors) {
	m := in.Mask                                                                     // (B,T)
	n := s.AddS(s.Sum(m, false, -1), 1e-8)                                           // (B) tokens per row
	logr := s.Div(s.Sum(s.Mul(s.Sub(in.LogProbs, in.OldLogProbs), m), false, -1), n) // (B)
	ratio := s.Exp(s.Clamp(logr, -20, 20))                                           // (B)
	adv := s.Div(s.Sum(s.Mul(in.Advantages, m), false, -1), n)                       // (B)
	eps := cfg.Policy.ClipRatio
	l1 := s.Mul(s.Neg(adv), ratio)
	l2 := s.Mul(s.Neg(adv), s.Clamp(ratio, 1-eps, 1+eps))
	rows := s.Cast(s.GtS(s.Sum(m, false, -1), 0), m.DType()) // rows with response tokens
	loss := starpo.MaskedMean(s, s.Maximum(l1, l2), rows)
	return loss, starpo.MetricTensors{
		"actor/seq_loss":     s.Detach(loss),
		"actor/seq_ratio":    starpo.MaskedMean(s, s.Detach(ratio), rows),
		"actor/seq_clipfrac": starpo.MaskedMean(s, s.Cast(s.Gt(s.Detach(l2), s.Detach(l1)), m.DType()), rows),
	}
}

func main() {
	steps := flag.Int("steps", 2, "training steps")
	flag.Parse()
	if err := run(context.Background(), *steps, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "customloss:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, steps int, w io.Writer) error {
	tok := tokenizer.NewByte()
	model, err := llm.New(llm.TinyConfig(tok.VocabSize()), llm.Options{Seed: 3})
	if err != nil {
		return err
	}
	defer model.Close()
	rc, err := ragen.ConfigFor("Bandit", 2, 4) // upstream's tag table, one tag in both env sets
	if err != nil {
		return err
	}
	rc.AgentProxy.MaxTurn, rc.AgentProxy.MaxActionsPerTurn = 1, 1
	rc.Rollout.ResponseLength = 16
	// The rollout samples from a demonstrator that pulls a random arm, so
	// every group has reward variance from the first step (a tiny random
	// model would answer garbage and every group would score the same).
	// The actor's objective is computed on those trajectories all the same.
	var proxy *ragen.AgentProxy
	demo, err := ragen.NewDemonstrator(ragen.DemonstratorConfig{Noise: 1, MaxActions: 1, Sep: rc.AgentProxy.ActionSep,
		EnableThink: rc.AgentProxy.EnableThink, Seed: 3}, func(id int) env.BaseEnv { return proxy.EnvManager(env.ModeTrain).Env(id) })
	if err != nil {
		return err
	}
	proxy, err = ragen.NewAgentProxy(rc, tok, ragen.DefaultProvider(), demo)
	if err != nil {
		return err
	}
	defer proxy.Close()

	cfg := starpo.DefaultConfig()
	cfg.ESManager.Train = starpo.EnvSetConfig{EnvGroups: 2, GroupSize: 4}
	cfg.Algorithm.AdvEstimator = algo.EstGRPO
	cfg.ActorRolloutRef.Actor.PPOMiniBatchSize = 8
	cfg.Trainer.TotalTrainingSteps = steps
	cfg.Trainer.TestFreq, cfg.Trainer.SaveFreq, cfg.Trainer.ValBeforeTrain = 0, 0, false
	cfg.Trainer.ResumeMode = starpo.ResumeDisable
	cfg.Trainer.DefaultLocalDir = os.TempDir()
	log := &printer{w: w}
	tr, err := starpo.NewTrainer(cfg, starpo.Deps{Actor: model, Rollout: proxy.RolloutWith,
		Filter: filter.DefaultConfig(), Logger: log, ActorLoss: SequenceClipLoss})
	if err != nil {
		return err
	}
	defer tr.Close()
	_, err = tr.Fit(ctx)
	return err
}

type printer struct{ w io.Writer }

func (p *printer) Log(step int, m map[string]float64) error {
	fmt.Fprintf(p.w, "step %d  seq_loss %+.5f  seq_ratio %.4f  seq_clipfrac %.3f  grad_norm %.4f\n",
		step, m["actor/seq_loss"], m["actor/seq_ratio"], m["actor/seq_clipfrac"], m["actor/grad_norm"])
	return nil
}
func (p *printer) Close() error { return nil }
