// Customactor: train a model that is not an llm.Model. The actor here is a
// bigram table (bigram.go) that implements ragen.Policy for the rollout and
// starpo.Actor for the update; the trainer, the filter and GRPO work on it
// unchanged. The bandit (arms Zu and Ky; Ky pays more) rewards the better
// arm, so the table learns which name to spell after "<answer>".
//
//	go run . [-steps 20]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	_ "ragen/env/all"
	"ragen/filter"
	"ragen/llm/tokenizer"
	"ragen/ragen"
	"ragen/starpo"
	"ragen/starpo/algo"
)

func main() {
	steps := flag.Int("steps", 20, "training steps")
	flag.Parse()
	if err := run(context.Background(), *steps, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "customactor:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, steps int, w io.Writer) error {
	tok := tokenizer.NewByte()
	actor, err := NewBigram(tok, 7)
	if err != nil {
		return err
	}
	defer actor.Close()

	rc, err := ragen.ConfigFor("Bandit", 8, 8) // upstream's tag table, one tag in both env sets
	if err != nil {
		return err
	}
	rc.CustomEnvs["Bandit"] = withConfig(rc.CustomEnvs["Bandit"], map[string]any{
		"arm_pairs": [][]string{{"Zu", "Ky"}}, "lo_arm_score": 0.2, "hi_arm_loscore": 0.0, "hi_arm_hiscore": 1.0, "hi_arm_hiscore_prob": 0.8})
	rc.AgentProxy.MaxTurn, rc.AgentProxy.MaxActionsPerTurn = 1, 1
	rc.AgentProxy.EnableThink = false // the prompt ends in the forced "<answer>"
	rc.Rollout.ResponseLength = actor.MaxNew
	proxy, err := ragen.NewAgentProxy(rc, tok, ragen.DefaultProvider(), actor)
	if err != nil {
		return err
	}
	defer proxy.Close()

	cfg := starpo.DefaultConfig()
	cfg.ESManager.Train = starpo.EnvSetConfig{EnvGroups: 8, GroupSize: 8}
	cfg.Algorithm.AdvEstimator = algo.EstGRPO
	cfg.ActorRolloutRef.Actor.PPOMiniBatchSize = 64
	cfg.ActorRolloutRef.Actor.Optim.LR = 0.3
	cfg.ActorRolloutRef.Actor.EntropyCoeff = 0
	cfg.Trainer.TotalTrainingSteps = steps
	cfg.Trainer.TestFreq, cfg.Trainer.SaveFreq, cfg.Trainer.ValBeforeTrain = 0, 0, false
	cfg.Trainer.ResumeMode = starpo.ResumeDisable
	cfg.Trainer.DefaultLocalDir = os.TempDir()
	log := &printer{w: w}
	fc := filter.DefaultConfig()
	fc.Value = 1 // keep every group
	tr, err := starpo.NewTrainer(cfg, starpo.Deps{Actor: actor, Rollout: proxy.RolloutWith, Filter: fc, Logger: log})
	if err != nil {
		return err
	}
	defer tr.Close()
	if _, err := tr.Fit(ctx); err != nil {
		return err
	}
	fmt.Fprintf(w, "success (share of rollouts choosing the better arm): first step %.3f, last step %.3f\n", log.success[0], log.success[len(log.success)-1])
	return nil
}

func withConfig(spec ragen.EnvSpec, extra map[string]any) ragen.EnvSpec {
	cfg := map[string]any{}
	for k, v := range spec.EnvConfig {
		cfg[k] = v
	}
	for k, v := range extra {
		cfg[k] = v
	}
	spec.EnvConfig = cfg
	return spec
}

type printer struct {
	w       io.Writer
	success []float64
}

func (p *printer) Log(step int, m map[string]float64) error {
	p.success = append(p.success, m["train/Bandit/success"])
	fmt.Fprintf(p.w, "step %2d  success %.3f  actor/grad_norm %.4f\n", step, m["train/Bandit/success"], m["actor/grad_norm"])
	return nil
}
func (p *printer) Close() error { return nil }
