package algo_test

import (
	"fmt"
	"math"

	"ragen/starpo/algo"
)

func ExampleEstimator() {
	// Two groups of two rollouts; one scalar reward on each row's last token.
	rewards, _ := algo.MatFromRows([][]float64{{0, 1}, {0, 0}, {0, 2}, {0, 2}})
	mask, _ := algo.MatFromRows([][]float64{{1, 1}, {1, 1}, {1, 0}, {1, 1}})
	grpo, err := algo.Estimator("grpo")
	if err != nil {
		panic(err)
	}
	out, _, err := grpo(algo.AdvantageInput{Rewards: rewards, Mask: mask, UIDs: []int{0, 0, 1, 1}}, algo.DefaultAdvantageConfig())
	if err != nil {
		panic(err)
	}
	for i := 0; i < out.Advantages.B; i++ {
		fmt.Printf("%.4f\n", out.Advantages.Row(i))
	}
	_, err = algo.Estimator("opo")
	fmt.Println(err)
	// Output:
	// [0.7071 0.7071]
	// [-0.7071 -0.7071]
	// [0.0000 0.0000]
	// [0.0000 0.0000]
	// algo: unknown advantage estimator "opo" (valid: gae, grpo, reinforce_plus_plus, reinforce_plus_plus_baseline, remax, rloo)
}

func ExampleGAE() {
	// γ = λ = 1: before whitening A_t = R − V_t on masked tokens; returns are
	// A + V everywhere. Row 1's last token is masked: its A stays 0.
	rewards, _ := algo.MatFromRows([][]float64{{0, 0, 1}, {0, 0, 0}})
	values, _ := algo.MatFromRows([][]float64{{0.2, 0.5, 0.8}, {0.1, 0.1, 0.1}})
	mask, _ := algo.MatFromRows([][]float64{{1, 1, 1}, {1, 1, 0}})
	adv, ret, err := algo.GAE(rewards, values, mask, 1, 1)
	if err != nil {
		panic(err)
	}
	fmt.Printf("returns %.2f %.2f\n", ret.Row(0), ret.Row(1))
	fmt.Printf("whitened %.3f %.3f\n", adv.Row(0), adv.Row(1))
	// Output:
	// returns [1.00 1.00 1.00] [0.00 0.00 0.10]
	// whitened [1.381 0.614 -0.153] [-0.920 -0.920 -0.665]
}

func ExamplePolicyLoss() {
	old, _ := algo.MatFromRows([][]float64{{-1, -1}})
	logp, _ := algo.MatFromRows([][]float64{{-1 + math.Log(1.5), -1}})
	adv, _ := algo.MatFromRows([][]float64{{1, -1}})
	mask, _ := algo.MatFromRows([][]float64{{1, 1}})
	loss, grad, metrics, err := algo.PolicyLoss(logp, old, adv, mask, algo.DefaultPolicyLossConfig())
	if err != nil {
		panic(err)
	}
	fmt.Printf("pg_loss %.3f grad %.3f\n", loss, grad.Row(0))
	fmt.Printf("clipfrac %.2f\n", metrics[algo.MetricPGClipFrac])
	// Output:
	// pg_loss -0.140 grad [0.000 0.500]
	// clipfrac 0.50
}

func ExampleAggLoss() {
	x, _ := algo.MatFromRows([][]float64{{1, 2, 3}, {4, 5, 6}})
	m, _ := algo.MatFromRows([][]float64{{1, 1, 1}, {1, 0, 0}})
	for _, mode := range algo.LossAggModes() {
		v, _ := algo.AggLoss(x, m, mode)
		fmt.Printf("%-24s %.4f\n", mode, v)
	}
	// Output:
	// token-mean               2.5000
	// seq-mean-token-sum       5.0000
	// seq-mean-token-mean      3.0000
	// seq-mean-token-sum-norm  3.3333
}

func ExampleValueLoss() {
	vpred, _ := algo.MatFromRows([][]float64{{2.0, 2.0}})
	vold, _ := algo.MatFromRows([][]float64{{1.0, 1.0}})
	ret, _ := algo.MatFromRows([][]float64{{1.2, 2.5}})
	mask, _ := algo.MatFromRows([][]float64{{1, 1}})
	loss, grad, metrics, _ := algo.ValueLoss(vpred, vold, ret, mask, algo.DefaultValueLossConfig())
	fmt.Printf("vf_loss %.3f grad %.3f clipfrac %.2f\n", loss, grad.Row(0), metrics[algo.MetricVFClipFrac])
	// Output:
	// vf_loss 0.410 grad [0.400 0.000] clipfrac 0.50
}

func ExamplePostProcess() {
	adv, _ := algo.MatFromRows([][]float64{{1, 1}, {-1, -1}})
	mask, _ := algo.MatFromRows([][]float64{{1, 1}, {1, 1}})
	cfg := algo.DefaultPostConfig("grpo")
	cfg.FilterLossScaling = "sqrt"
	cfg.FilterKeptRatio = 0.25
	out, _, _ := algo.PostProcess(adv, mask, nil, nil, cfg)
	fmt.Println(out.Rows())
	// Output:
	// [[0.5 0.5] [-0.5 -0.5]]
}

func ExampleKLPenalty() {
	lp, _ := algo.MatFromRows([][]float64{{-1}})
	ref, _ := algo.MatFromRows([][]float64{{-1.5}})
	for _, name := range []string{"kl", "abs", "mse", "low_var_kl"} {
		v, g, _ := algo.KLPenalty(lp, ref, name)
		fmt.Printf("%-10s %.4f grad %.4f\n", name, v.Data[0], g.Data[0])
	}
	// Output:
	// kl         0.5000 grad 1.0000
	// abs        0.5000 grad 1.0000
	// mse        0.1250 grad 0.5000
	// low_var_kl 0.1065 grad 0.3935
}
