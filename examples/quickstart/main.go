// Quickstart: train a tiny agent on the two-armed bandit with StarPO (GRPO)
// from Go. A Qwen2-shaped model with 4 layers is created from a seed, the
// rollout runs the multi-turn loop over the bandit, and the trainer filters
// groups by reward variance, computes GRPO advantages and takes PPO steps.
//
//	go run . [-steps 8] [-out DIR]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	_ "ragen/env/all" // registers bandit, sokoban, frozen_lake, ...
	"ragen/filter"
	"ragen/llm"
	"ragen/llm/tokenizer"
	"ragen/llmpolicy"
	"ragen/ragen"
	"ragen/starpo"
	"ragen/starpo/algo"
)

func main() {
	steps := flag.Int("steps", 8, "training steps")
	out := flag.String("out", "", "export the trained model here (a Hugging Face folder)")
	flag.Parse()
	if err := run(context.Background(), *steps, *out, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, steps int, out string, w io.Writer) error {
	tok := tokenizer.NewByte()
	model, err := llm.New(llm.TinyConfig(tok.VocabSize()), llm.Options{Seed: 1}) // zero Options: float32 on the CPU
	if err != nil {
		return err
	}
	defer model.Close()

	// The rollout: 4 groups of 4 bandit episodes per step, one turn each.
	rc, err := ragen.ConfigFor("Bandit", 4, 4) // upstream's tag table, one tag in both env sets
	if err != nil {
		return err
	}
	rc.AgentProxy.MaxTurn, rc.AgentProxy.MaxActionsPerTurn = 1, 1
	rc.Rollout.ResponseLength = 24
	proxy, err := ragen.NewAgentProxy(rc, tok, ragen.DefaultProvider(), llmpolicy.New(model, tok, llmpolicy.Options{Seed: 1}))
	if err != nil {
		return err
	}
	defer proxy.Close()

	// The trainer: GRPO (no critic), one PPO mini-batch per step.
	cfg := starpo.DefaultConfig()
	cfg.ESManager.Train = starpo.EnvSetConfig{EnvGroups: 4, GroupSize: 4}
	cfg.Algorithm.AdvEstimator = algo.EstGRPO
	cfg.ActorRolloutRef.Actor.PPOMiniBatchSize = 16
	cfg.ActorRolloutRef.Actor.Optim.LR = 1e-3
	cfg.Trainer.TotalTrainingSteps = steps
	cfg.Trainer.TestFreq, cfg.Trainer.SaveFreq = 0, 0
	cfg.Trainer.ValBeforeTrain = false
	cfg.Trainer.ResumeMode = starpo.ResumeDisable
	cfg.Trainer.DefaultLocalDir = os.TempDir()
	log := printer{w}
	tr, err := starpo.NewTrainer(cfg, starpo.Deps{Actor: model, Rollout: proxy.RolloutWith, Filter: filter.DefaultConfig(), Logger: log})
	if err != nil {
		return err
	}
	defer tr.Close()
	stop, err := tr.Fit(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "stopped: %s at step %d\n", stop, tr.Step())
	if out != "" {
		if err := tr.Export(out); err != nil {
			return err
		}
		fmt.Fprintf(w, "model written to %s (load it with llm.Load or `ragen eval model_path=%s`)\n", out, out)
	}
	return nil
}

// printer is a starpo.Logger that prints a few of each step's metrics.
type printer struct{ w io.Writer }

func (p printer) Log(step int, m map[string]float64) error {
	fmt.Fprintf(p.w, "step %2d", step)
	for _, k := range ragen.SortedKeys(m) {
		if strings.HasSuffix(k, "/success") || k == "critic/score/mean" || k == "actor/pg_loss" || k == "rollout/filter_kept_ratio" {
			fmt.Fprintf(p.w, "  %s %.3f", k, m[k])
		}
	}
	fmt.Fprintln(p.w)
	return nil
}

func (printer) Close() error { return nil }
