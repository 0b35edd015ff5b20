package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"ragen/cli"
	"ragen/collapse"
	"ragen/llm"
	"ragen/llm/llmbench"
	"ragen/llmpolicy"
	"ragen/torch"
	"ragen/track"
)

// The StarPO step at the 0.5B shape: one `ragen train` step on Sokoban
// (upstream's CoordSokoban, its 5 turns of up to 400 response tokens each)
// with a randomly initialised model of Qwen2.5-0.5B's shape (the byte
// tokenizer, the vocabulary widened to 151,936 rows so the head costs what
// Qwen's does), small groups, collapse diagnostics at upstream's defaults,
// timed by the trainer's own timing_s/* stages. A random model never emits
// EOS, so every turn generates the full response length: the slowest case.
// RAGEN_BENCH_STARPO sets "layers,env_groups,group_size" (default "2,2,2";
// "off" skips it). The step runs again with prefix caching off
// (rollout.enable_prefix_caching=False) for the gen stage's comparison;
// RAGEN_BENCH_STARPO_REUSE=off skips that.

func init() {
	Register(Comparison{Name: "starpo step at the 0.5B shape (by stage)", Run: RunStarPOStep})
}

// StarPOStages are the trainer's timing_s/* stages, in step order.
var StarPOStages = []string{"gen", "filter", "collapse_metrics", "old_log_prob", "ref", "values", "adv", "update_critic", "update_actor"}

// RunStarPOStep runs the step and prints its stages.
func RunStarPOStep(cfg RunConfig, w io.Writer) error {
	spec := os.Getenv("RAGEN_BENCH_STARPO")
	if spec == "off" {
		fmt.Fprintln(w, "skipped (RAGEN_BENCH_STARPO=off)")
		return nil
	}
	if spec == "" {
		spec = "2,2,2"
	}
	var L, G, N int
	if _, err := fmt.Sscanf(spec, "%d,%d,%d", &L, &G, &N); err != nil {
		return fmt.Errorf("RAGEN_BENCH_STARPO %q: want layers,env_groups,group_size", spec)
	}
	c := llmbench.Qwen05B(L)
	// the step with prefix caching off first (when compared), then on: the
	// stage table is the default's (on)
	compare := os.Getenv("RAGEN_BENCH_STARPO_REUSE") != "off"
	var off map[string]float64
	if compare {
		var err error
		if off, _, err = starpoStep(c, L, G, N, false); err != nil {
			return err
		}
	}
	met, wall, err := starpoStep(c, L, G, N, true)
	if err != nil {
		return err
	}
	step := met["timing_s/step"]
	algo := ""
	if grpoStep(L) {
		algo = ", GRPO (no critic)"
	}
	fmt.Fprintf(w, "%d layers (%.0fM parameters), %d groups x %d%s, Sokoban, response length 400 x 5 turns; %.0f response tokens in the batch; process wall %.1f s\n",
		L, float64(c.ParamCount())/1e6, G, N, algo, met["response_length/mean"]*float64(G*N), wall)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "stage\tseconds\tshare of step\t\n")
	sum := 0.0
	for _, st := range StarPOStages {
		v, ok := met["timing_s/"+st]
		if !ok {
			continue
		}
		sum += v
		fmt.Fprintf(tw, "%s\t%.2f\t%.1f%%\t\n", st, v, 100*v/step)
	}
	fmt.Fprintf(tw, "other (logging, batching)\t%.2f\t%.1f%%\t\n", step-sum, 100*(step-sum)/step)
	fmt.Fprintf(tw, "step\t%.2f\t100%%\t\n", step)
	if err := tw.Flush(); err != nil {
		return err
	}
	// the gen stage with prefix caching on and off, and the share of
	// prefill in it. Both steps run in this process: on a 2-core machine
	// the second one decoded 7-10% slower in either order, which moves the
	// gen column as much as prefix caching does at 2 layers; the prefill
	// column is the comparison to read there.
	if compare {
		fmt.Fprintf(w, "generation with rollout.enable_prefix_caching on and off (the same step and seeds, off run first; RAGEN_BENCH_STARPO_REUSE=off skips it):\n")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "prefix caching\tgen s\tprefill s\tdecode s\tprefill share of gen\tprefilled / prompt tokens\treused\tshared\t\n")
		for _, r := range []struct {
			name string
			m    map[string]float64
		}{{"on", met}, {"off", off}} {
			gen, pre := r.m["timing_s/gen"], r.m[llmpolicy.MetricPrefillTime]
			fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t%.1f%%\t%.0f / %.0f\t%.0f\t%.0f\t\n", r.name, gen, pre, r.m[llmpolicy.MetricDecodeTime], 100*pre/gen,
				r.m[llmpolicy.MetricPrefillTokens], r.m[llmpolicy.MetricPromptTokens], r.m[llmpolicy.MetricReusedTokens], r.m[llmpolicy.MetricSharedTokens])
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(w, "gen stage: %.2fx faster with prefix caching; prefill %.2fx\n", off["timing_s/gen"]/met["timing_s/gen"],
			off[llmpolicy.MetricPrefillTime]/met[llmpolicy.MetricPrefillTime])
	}
	// a random model writes no <think> block, so the step's collapse stage
	// had nothing to score: score what it would have, apart
	cs, cdt, err := collapseCost(c, G*N)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "collapse diagnostics at upstream's defaults, had every reply been a 400-token reasoning (both families: two %dx%d matrices, 600-token prompts, micro batch 128, compute dtype %s): %.2f s = %.1f%% of the step\n",
		G*N, G*N, cdt, cs, 100*cs/step)
	return nil
}

// grpoStep reports whether the step at L layers runs GRPO: actor, reference
// and critic beyond 2 layers (24: 26 GiB) exceed a 24 GiB machine's budget,
// and GRPO has no critic; the gen stage does not depend on it.
func grpoStep(L int) bool { return L > 2 }

// starpoStep runs one `ragen train` step at c's shape with L layers and
// G groups of N, prefix caching on or off, and returns the step's logged
// metrics and the process wall time.
func starpoStep(c llm.Config, L, G, N int, reuse bool) (map[string]float64, float64, error) {
	dir, err := os.MkdirTemp("", "ragen-bench-starpo-")
	if err != nil {
		return nil, 0, err
	}
	defer os.RemoveAll(dir)
	args := []string{"train", "model_path=tiny",
		"+demo.model.vocab_size=" + strconv.Itoa(c.VocabSize), "+demo.model.hidden_size=" + strconv.Itoa(c.HiddenSize),
		"+demo.model.intermediate_size=" + strconv.Itoa(c.IntermediateSize), "+demo.model.num_hidden_layers=" + strconv.Itoa(L),
		"+demo.model.num_attention_heads=" + strconv.Itoa(c.NumAttentionHeads), "+demo.model.num_key_value_heads=" + strconv.Itoa(c.NumKeyValueHeads),
		"+demo.model.max_position_embeddings=4096", "+demo.model.tie_word_embeddings=True",
		"es_manager.train.env_groups=" + strconv.Itoa(G), "es_manager.train.group_size=" + strconv.Itoa(N),
		"es_manager.train.env_configs.n_groups=[" + strconv.Itoa(G) + "]", "ppo_mini_batch_size=" + strconv.Itoa(G*N),
		"trainer.total_training_steps=1", "trainer.val_before_train=False", "trainer.test_freq=-1", "trainer.save_freq=-1",
		"trainer.logger=[jsonl]", "trainer.default_local_dir=" + dir, "trainer.experiment_name=starpo_bench",
		"trainer.generations_to_log_to_wandb.val=0",
		"actor_rollout_ref.rollout.enable_prefix_caching=" + map[bool]string{true: "True", false: "False"}[reuse]}
	if grpoStep(L) {
		args = append(args, "algorithm.adv_estimator=grpo")
	}
	t0 := time.Now()
	if err := cli.Run(context.Background(), args); err != nil {
		return nil, 0, fmt.Errorf("ragen train %s: %w", strings.Join(args[1:], " "), err)
	}
	wall := time.Since(t0).Seconds()
	var met map[string]float64
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".jsonl") || met != nil {
			return err
		}
		recs, rerr := track.ReadJSONL(p)
		if rerr == nil && len(recs) > 0 {
			if _, ok := recs[len(recs)-1].Data["timing_s/step"]; ok {
				met = recs[len(recs)-1].Data
			}
		}
		return nil
	})
	if err != nil || met == nil {
		return nil, 0, fmt.Errorf("no metrics with timing_s/step under %s (%v)", dir, err)
	}
	return met, wall, nil
}

// collapseCost times the collapse scoring of n trajectories whose replies
// are all reasoning: the first-turn and multi-turn families, each an n x n
// cross-scoring of (prompt, reasoning) pairs by the prefix scorer the
// trainer uses, on a float32 model of c's shape computing in the dtype
// `ragen train` picks (compute_dtype auto: bf16 where this CPU multiplies
// bf16 natively at this size), as the scorer does.
func collapseCost(c llm.Config, n int) (float64, torch.DType, error) {
	m, err := llm.New(c, llm.Options{DType: torch.Float32, Device: torch.CPU, Seed: 1, AutoCompute: true})
	if err != nil {
		return 0, 0, err
	}
	defer m.Close()
	prompts := llmbench.Prompts(n, 600, c.VocabSize, 1)
	reasoning := llmbench.Prompts(n, 400, c.VocabSize, 2)
	sc := llm.NewPrefixScorer(m, 128, 1)
	t0 := time.Now()
	for range 2 { // first-turn and multi-turn families
		if _, _, err := collapse.CrossScores(context.Background(), sc, prompts, reasoning, 128, 1); err != nil {
			return 0, 0, err
		}
	}
	return time.Since(t0).Seconds(), m.ComputeDType(), nil
}
