// Customestimator: a custom reward and a custom advantage estimator.
//
//   - Reward: every bandit env is wrapped in an env.Shaper that adds a
//     penalty of 0.5 to answers the env cannot read (action_is_valid false),
//     on top of upstream's format penalty.
//
//   - Estimator: "group_median" is registered with algo.RegisterEstimator:
//     A_i = s_i − median of s over the rollout's group (a baseline that
//     ignores outliers), broadcast over the response tokens. The trainer then
//     selects it by name (algorithm.adv_estimator), as `ragen train
//     algorithm.adv_estimator=group_median` would in a binary that
//     registers it.
//
//     go run . [-steps 2]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"

	"ragen/env"
	_ "ragen/env/all"
	"ragen/filter"
	"ragen/llm"
	"ragen/llm/tokenizer"
	"ragen/llmpolicy"
	"ragen/ragen"
	"ragen/starpo"
	"ragen/starpo/algo"
)

// calls counts the estimator's calls (the test checks the trainer used it).
var calls int

// groupMedian is the estimator.
func groupMedian(in algo.AdvantageInput, _ algo.AdvantageConfig) (algo.AdvantageOutput, map[string]float64, error) {
	calls++
	if len(in.UIDs) != in.Rewards.B {
		return algo.AdvantageOutput{}, nil, fmt.Errorf("group_median: %d uids for %d rows", len(in.UIDs), in.Rewards.B)
	}
	score := make([]float64, in.Rewards.B) // s_i = Σ_t r_{i,t}
	groups := map[int][]float64{}
	for i := range score {
		for _, r := range in.Rewards.Row(i) {
			score[i] += r
		}
		groups[in.UIDs[i]] = append(groups[in.UIDs[i]], score[i])
	}
	adv := algo.NewMat(in.Rewards.B, in.Rewards.T)
	spread := 0.0
	for i, s := range score {
		a := s - median(groups[in.UIDs[i]])
		spread += a * a
		for t, m := range in.Mask.Row(i) {
			adv.Set(i, t, a*m)
		}
	}
	met := map[string]float64{"critic/group_median/adv_rms": spread / float64(len(score))}
	return algo.AdvantageOutput{Advantages: adv, Returns: adv.Clone()}, met, nil
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// shaped builds envs through the registry and wraps each in the penalty.
func shaped() ragen.EnvProvider {
	def := ragen.DefaultProvider()
	return ragen.ProviderFuncs{
		New: func(tag string, spec ragen.EnvSpec) (env.BaseEnv, error) {
			inner, err := def.NewEnv(tag, spec)
			if err != nil {
				return nil, err
			}
			return env.Expose(env.NewShaper(inner, func(a env.Action, r env.StepResult) env.StepResult {
				if valid, ok := r.Info["action_is_valid"].(bool); ok && !valid {
					r.Reward -= 0.5
				}
				return r
			})), nil
		},
		Prompt: def.PromptInfo,
	}
}

func main() {
	steps := flag.Int("steps", 2, "training steps")
	flag.Parse()
	if err := run(context.Background(), *steps, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "customestimator:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, steps int, w io.Writer) error {
	if err := algo.RegisterEstimator("group_median", groupMedian); err != nil {
		return err
	}
	calls = 0
	tok := tokenizer.NewByte()
	model, err := llm.New(llm.TinyConfig(tok.VocabSize()), llm.Options{Seed: 2})
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
	proxy, err := ragen.NewAgentProxy(rc, tok, shaped(), llmpolicy.New(model, tok, llmpolicy.Options{Seed: 2}))
	if err != nil {
		return err
	}
	defer proxy.Close()

	cfg := starpo.DefaultConfig()
	cfg.ESManager.Train = starpo.EnvSetConfig{EnvGroups: 2, GroupSize: 4}
	cfg.Algorithm.AdvEstimator = "group_median" // chosen by name, like a built-in
	cfg.ActorRolloutRef.Actor.PPOMiniBatchSize = 8
	cfg.Trainer.TotalTrainingSteps = steps
	cfg.Trainer.TestFreq, cfg.Trainer.SaveFreq, cfg.Trainer.ValBeforeTrain = 0, 0, false
	cfg.Trainer.ResumeMode = starpo.ResumeDisable
	cfg.Trainer.DefaultLocalDir = os.TempDir()
	log := &lastMetrics{}
	tr, err := starpo.NewTrainer(cfg, starpo.Deps{Actor: model, Rollout: proxy.RolloutWith, Filter: filter.DefaultConfig(), Logger: log})
	if err != nil {
		return err
	}
	defer tr.Close()
	if _, err := tr.Fit(ctx); err != nil {
		return err
	}
	fmt.Fprintf(w, "group_median called %d times; last step: score mean %.3f, adv rms %.3f\n",
		calls, log.m["critic/score/mean"], log.m["critic/group_median/adv_rms"])
	return nil
}

type lastMetrics struct{ m map[string]float64 }

func (l *lastMetrics) Log(_ int, m map[string]float64) error { l.m = m; return nil }
func (l *lastMetrics) Close() error                          { return nil }
