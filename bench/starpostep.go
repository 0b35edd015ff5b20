package bench

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"ragen/cli"
	"ragen/collapse"
	"ragen/llm"
	"ragen/llm/llmbench"
	"ragen/llm/tokenizer"
	"ragen/llmpolicy"
	"ragen/torch"
	"ragen/track"
)

// The StarPO step at the 0.5B shape: one `ragen train` step on Sokoban
// (upstream's CoordSokoban, its 5 turns of up to 400 response tokens each)
// with a randomly initialised model of Qwen2.5-0.5B's shape over Qwen2.5's
// own tokenizer and chat template (demo.model.tokenizer; 151,936 rows, so
// prompts are as long in tokens as the real model's and the head costs what
// Qwen's does), small groups, collapse diagnostics at upstream's defaults,
// timed by the trainer's own timing_s/* stages. The rollout samples only
// Qwen's word tokens (rollout.allowed_token_ids; qwenTokenizer), so a reply
// is text that the next turn's prompt carries back token for token, as a
// trained policy's is (unrestricted, a random model's replies would not
// re-tokenize to their own ids); it never emits EOS, so every turn
// generates the full response length.
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
	tokDir, err := os.MkdirTemp("", "ragen-bench-qwen-tokenizer-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tokDir)
	words, err := qwenTokenizer(cfg.Dir, tokDir)
	if err != nil {
		return err
	}
	extra := []string{"+demo.model.tokenizer=" + tokDir, "+actor_rollout_ref.rollout.allowed_token_ids=" + words}
	// the step with prefix caching off first (when compared), then on: the
	// stage table is the default's (on)
	compare := os.Getenv("RAGEN_BENCH_STARPO_REUSE") != "off"
	var off map[string]float64
	if compare {
		if off, _, err = starpoStep(cfg, c, L, G, N, false, extra); err != nil {
			return err
		}
		fmt.Fprintf(w, "prefix caching off: gen %.2f s (prefill %.2f s, decode %.2f s)\n", off["timing_s/gen"], off[llmpolicy.MetricPrefillTime], off[llmpolicy.MetricDecodeTime])
	}
	met, wall, err := starpoStep(cfg, c, L, G, N, true, extra)
	if err != nil {
		return err
	}
	step := met["timing_s/step"]
	algo := ""
	if grpoStep(L) {
		algo = ", GRPO (no critic)"
	}
	fmt.Fprintf(w, "%d layers (%.0fM parameters), %d groups x %d%s, Sokoban, Qwen2.5's tokenizer, replies of its word tokens, response length 400 x 5 turns; %.0f response tokens in the batch; process wall %.1f s\n",
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
	// prefill in it. Each step runs in a process of its own: run one after
	// the other in one process, the second decoded 7-17% slower in either
	// order on a 2-core machine.
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

// qwenTokenizer unpacks the vendored Qwen2.5 tokenizer (the repository's
// llm/tokenizer/testdata/qwen25, found from the bench's peer-script
// folder) into dir, and returns its word tokens as a config list: the ids
// whose text is a space and two or more lowercase letters and encodes back
// to that one id. Qwen's pre-tokenizer splits text before each space, so
// replies made of such tokens re-tokenize to the very ids generated, as a
// trained policy's replies mostly do.
func qwenTokenizer(benchDir, dir string) (string, error) {
	src := filepath.Join(benchDir, "..", "llm", "tokenizer", "testdata", "qwen25")
	gz, err := os.Open(filepath.Join(src, "tokenizer.json.gz"))
	if err != nil {
		return "", fmt.Errorf("the Qwen2.5 tokenizer the StarPO step uses: %w", err)
	}
	defer gz.Close()
	zr, err := gzip.NewReader(gz)
	if err != nil {
		return "", fmt.Errorf("%s: %w", gz.Name(), err)
	}
	tj, err := io.ReadAll(zr)
	if err != nil {
		return "", fmt.Errorf("%s: %w", gz.Name(), err)
	}
	tc, err := os.ReadFile(filepath.Join(src, tokenizer.TokenizerConfigFile))
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, tokenizer.TokenizerFile), tj, 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, tokenizer.TokenizerConfigFile), tc, 0o644); err != nil {
		return "", err
	}
	tok, err := llm.LoadTokenizer(dir)
	if err != nil {
		return "", err
	}
	var ids []string
	for id := range tok.VocabSize() {
		w := tok.Decode([]int{id})
		if len(w) < 3 || w[0] != ' ' || strings.Trim(w[1:], "abcdefghijklmnopqrstuvwxyz") != "" {
			continue
		}
		if e := tok.Encode(w); len(e) == 1 && e[0] == id {
			ids = append(ids, strconv.Itoa(id))
		}
	}
	if len(ids) < 1000 {
		return "", fmt.Errorf("the Qwen2.5 tokenizer in %s has %d word tokens; want thousands", src, len(ids))
	}
	return "[" + strings.Join(ids, ",") + "]", nil
}

// grpoStep reports whether the step at L layers runs GRPO: actor, reference
// and critic beyond 2 layers (24: 26 GiB) exceed a 24 GiB machine's budget,
// and GRPO has no critic; the gen stage does not depend on it.
func grpoStep(L int) bool { return L > 2 }

// starpoChildEnv names the file of a StarPO step's `ragen train` job (JSON;
// its word list is longer than one environment variable may be) for a
// re-executed benchall (StarPOChild).
const starpoChildEnv = "RAGEN_BENCH_STARPO_CHILD"

// StarPOChild runs one `ragen train` when the process was started by
// starpoStep, with the parent's libtorch threads and freed-memory setting,
// and reports true (exiting on failure); otherwise it reports false. Call
// it first in main.
func StarPOChild() bool {
	path := os.Getenv(starpoChildEnv)
	if path == "" {
		return false
	}
	var job struct {
		Threads   int
		KeepFreed bool
		Args      []string
	}
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, &job)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, starpoChildEnv+":", err)
		os.Exit(2)
	}
	torch.SetNumThreads(job.Threads)
	if job.KeepFreed {
		torch.KeepFreedMemory(1 << 30)
	}
	if err := cli.Run(context.Background(), job.Args); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	return true
}

// starpoStep runs one `ragen train` step at c's shape with L layers and
// G groups of N, prefix caching on or off, and the extra overrides, in a
// fresh process of its own (so that the second step neither inherits the
// first's heap, which its memory check counts, nor decodes on a warmed or
// fragmented one), and returns the step's logged metrics and the child's
// wall time.
func starpoStep(cfg RunConfig, c llm.Config, L, G, N int, reuse bool, extra []string) (map[string]float64, float64, error) {
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
	args = append(args, extra...)
	if grpoStep(L) {
		args = append(args, "algorithm.adv_estimator=grpo")
	}
	self, err := os.Executable()
	if err != nil {
		return nil, 0, err
	}
	job, err := json.Marshal(map[string]any{"Threads": cfg.Threads, "KeepFreed": cfg.KeepFreed, "Args": args})
	if err != nil {
		return nil, 0, err
	}
	jobFile := filepath.Join(dir, "job.json")
	if err := os.WriteFile(jobFile, job, 0o644); err != nil {
		return nil, 0, err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), starpoChildEnv+"="+jobFile)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		return nil, 0, fmt.Errorf("ragen train (%s): %w", strings.Join(args[1:len(args)-len(extra)], " "), err)
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
