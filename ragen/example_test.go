package ragen_test

import (
	"context"
	"fmt"
	"os"

	"ragen/env"
	"ragen/llm/tokenizer"
	"ragen/ragen"
)

// coin is a one-step language env for the examples: answering "heads"
// succeeds with reward 1.
type coin struct{ obs string }

func (c *coin) Reset(ctx context.Context, seed int64, mode env.Mode) (string, error) {
	c.obs = fmt.Sprintf("Coin #%d. Call it.", seed)
	return c.obs, nil
}

func (c *coin) Step(ctx context.Context, a env.Action) (env.StepResult, error) {
	win := a.Text == "heads"
	r := env.StepResult{Done: true, RewardIsInt: true, Info: env.Info{"success": win}}
	if win {
		r.Reward = 1
	}
	r.Info["raw_reward"] = r.Reward
	c.obs = "You said " + a.Text + "."
	return r, nil
}

func (c *coin) Render() string { return c.obs }
func (c *coin) Close() error   { return nil }

func exampleConfig() ragen.Config {
	cfg := ragen.DefaultConfig()
	cfg.CustomEnvs = map[string]ragen.EnvSpec{"Coin": {EnvType: "coin", MaxActionsPerTraj: 1, EnvInstruction: "Call the coin."}}
	set := ragen.EnvSetConfig{EnvGroups: 2, GroupSize: 2, EnvConfigs: ragen.EnvConfigs{Tags: []string{"Coin"}, NGroups: []int{2}}}
	cfg.ESManager.Train, cfg.ESManager.Val = set, set
	cfg.AgentProxy.MaxTurn = 1
	return cfg
}

var coinProvider = ragen.ProviderFuncs{New: func(tag string, spec ragen.EnvSpec) (env.BaseEnv, error) { return &coin{}, nil }}

// A rollout with a scripted policy: even env ids call heads.
func ExampleAgentProxy_Rollout() {
	policy := &ragen.ScriptedPolicy{Func: func(envID, turn int, req ragen.GenRequest) (string, error) {
		if envID%2 == 0 {
			return "sure </think><answer>heads</answer>", nil
		}
		return "hmm </think><answer>tails</answer>", nil
	}}
	a, err := ragen.NewAgentProxy(exampleConfig(), tokenizer.NewByte(), coinProvider, policy)
	if err != nil {
		panic(err)
	}
	defer a.Close()
	b, err := a.Rollout(context.Background(), env.ModeTrain)
	if err != nil {
		panic(err)
	}
	fmt.Println("rows:", b.Len(), "groups:", b.GroupIDs)
	fmt.Println("episode scores:", b.EpisodeScores)
	fmt.Println("Coin/success:", b.Metrics["Coin/success"], "Coin/pass@2:", b.Metrics["Coin/pass@2"])
	// Output:
	// rows: 4 groups: [0 0 1 1]
	// episode scores: [1 0 1 0]
	// Coin/success: 0.5 Coin/pass@2: 1
}

// Evaluate runs the validation set and reports success per tag; the
// trajectories can be exported as JSONL.
func ExampleEvaluate() {
	policy := &ragen.ScriptedPolicy{Func: func(envID, turn int, req ragen.GenRequest) (string, error) {
		return "x </think><answer>heads</answer>", nil
	}}
	res, err := ragen.Evaluate(context.Background(), exampleConfig(), policy, tokenizer.NewByte(), coinProvider)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Success)
	recs := ragen.TrajectoryRecords(res.Batch, ragen.ExportOptions{})
	if err := ragen.WriteTrajectoryText(os.Stdout, recs[0]); err != nil {
		panic(err)
	}
	// Output:
	// map[Coin:1]
	// === traj_0  env 0  group 0  turns 1  reward 1.0  success true ===
	// --- state 1 ---
	// Coin #123. Call it.
	// --- assistant ---
	// <think>x </think><answer>heads</answer>
	// --- state 2 ---
	// You said heads.
	// --- metrics ---
	// Coin/episodic_return = 1
	// Coin/num_actions = 1
	// Coin/pass@2 = 1
	// Coin/raw_reward = 1
	// Coin/success = 1
}

// ParseResponse restores the forced <think> prefix, cleans the response
// and splits the answer into at most max_actions_per_turn actions.
func ExampleContextManager_ParseResponse() {
	cm, err := ragen.NewContextManager(exampleConfig(), env.ModeTrain, tokenizer.NewByte(), coinProvider)
	if err != nil {
		panic(err)
	}
	in := cm.ParseResponse(" push the box </think> <answer> Up || Left || Down </answer>")
	fmt.Printf("%q\n%q\n", in.LLMResponse, in.Actions)
	// Output:
	// "<think>push the box</think><answer>Up || Left</answer>"
	// ["Up" "Left"]
}

// Rewards print as Python's str() does.
func ExampleReward() {
	r := ragen.Reward{IsInt: true}
	fmt.Println(r, r.Add(1, true), r.Add(0.1, false).Add(0.2, false))
	// Output: 0 1 0.30000000000000004
}
