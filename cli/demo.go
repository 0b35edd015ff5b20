package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"ragen/config"
	"ragen/llm"
	"ragen/llm/tokenizer"
	"ragen/track"
)

// demoFlags splits the demos' own flags (--quick, --out DIR) from the
// overrides that follow.
func demoFlags(args []string) (quick bool, out string, rest []string, err error) {
	var kept []string
	for _, a := range args {
		if a == "--quick" {
			quick = true
			continue
		}
		kept = append(kept, a)
	}
	fl, rest, err := splitFlags(kept, "out")
	if err != nil {
		return false, "", nil, err
	}
	return quick, fl["out"], rest, nil
}

// demoArgs turns demo's flags (--out DIR, --quick) into overrides of
// config/demo.yaml, followed by the user's own.
func demoArgs(args []string) ([]string, error) {
	quick, out, rest, err := demoFlags(args)
	if err != nil {
		return nil, err
	}
	if quick {
		// A short smoke run: fewer warm-up and training steps and a
		// smaller validation set; the user's overrides still win.
		rest = append([]string{"sft.steps=30", "trainer.total_training_steps=3", "trainer.test_freq=3",
			"es_manager.val.env_groups=32", "es_manager.val.env_configs.n_groups=[32]"}, rest...)
	}
	if out != "" {
		rest = append(rest, "trainer.default_local_dir="+out)
	}
	return rest, nil
}

// cmdDemo runs the CPU demo: a tiny model, SFT warm-up on random-arm
// demonstrations, then StarPO, with validation success before and after and
// plots of the run. Extra arguments are overrides of config/demo.yaml;
// --quick makes it a short smoke run.
func cmdDemo(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "ragen2" {
		return cmdDemoRagen2(ctx, args[1:])
	}
	rest, err := demoArgs(args)
	if err != nil {
		return err
	}
	t, a, err := loadTree(append([]string{"--config-name", "demo"}, rest...), "demo")
	if err != nil {
		return err
	}
	if a.Cfg != "" { // --cfg job: print the composed config, train nothing
		fmt.Print(a.Print(t))
		return nil
	}
	start := time.Now()
	initTorch(t)
	tok, m, err := demoModel(ctx, t, "ragen demo")
	if err != nil {
		return err
	}
	fmt.Println("stage 1: supervised warm-up on demonstrations that pick an arm at random")
	if _, err := runSFT(ctx, t, m, tok); err != nil {
		m.Close()
		return err
	}
	sftTime := time.Since(start)
	est, _ := t.String("algorithm.adv_estimator")
	fmt.Printf("stage 2: StarPO (%s) on the bandit; validation success = share of sampled answers choosing the better arm\n", est)
	j, err := buildJob(t, "", true, m, tok)
	if err != nil {
		m.Close()
		return err
	}
	defer j.close()
	reason, err := j.trainer.Fit(ctx)
	if err != nil {
		return err
	}
	if err := j.finish(); err != nil {
		return err
	}
	return demoSummary(j.jsonl, reason, sftTime, time.Since(start))
}

func tokName(tok tokenizer.Tokenizer) string {
	if _, ok := tok.(*tokenizer.Byte); ok {
		return "byte-level"
	}
	return "BPE"
}

// demoTokenizer returns the byte tokenizer, or a BPE tokenizer trained on the
// demo's own prompts when demo.tokenizer.vocab_size > 0.
func demoTokenizer(ctx context.Context, t *config.Tree) (tokenizer.Tokenizer, error) {
	size := 0
	if t.Has("demo.tokenizer.vocab_size") {
		var err error
		if size, err = t.Int("demo.tokenizer.vocab_size"); err != nil {
			return nil, err
		}
	}
	if size <= 0 {
		return tokenizer.NewByte(), nil
	}
	return trainDemoTokenizer(ctx, t, size)
}

// demoSummary prints validation success before and after training.
func demoSummary(jsonl string, reason any, sftTime, total time.Duration) error {
	recs, err := track.ReadJSONL(jsonl)
	if err != nil {
		return err
	}
	var keys []string
	seen := map[string]bool{}
	for _, r := range recs {
		for k := range r.Data {
			if strings.HasPrefix(k, "val-env/") && strings.HasSuffix(k, "/success") && strings.Count(k, "/") == 2 && !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	fmt.Printf("\n== ragen demo: %s; SFT %s, total %s ==\n", reason, sftTime.Round(time.Second), total.Round(time.Second))
	for _, k := range keys {
		var vals []string
		first, last := -1.0, -1.0
		for _, r := range recs {
			if v, ok := r.Data[k]; ok {
				if first < 0 {
					first = v
				}
				last = v
				vals = append(vals, fmt.Sprintf("step %d: %.3f", r.Step, v))
			}
		}
		fmt.Printf("%s: before RL %.3f -> after RL %.3f  (%s)\n", k, first, last, strings.Join(vals, ", "))
	}
	if len(keys) == 0 {
		fmt.Fprintln(os.Stderr, "ragen: no validation metrics were logged (trainer.test_freq?)")
	}
	fmt.Printf("metrics: %s\nplots:   %s\n", jsonl, filepath.Join(filepath.Dir(jsonl), "plots"))
	return nil
}

// demoModel trains the demo's tokenizer and builds its tiny model from the
// demo.* keys of t (a fresh model, seeded by demo.model.seed), and says
// what it built, prefixed by who.
func demoModel(ctx context.Context, t *config.Tree, who string) (tokenizer.Tokenizer, *llm.Model, error) {
	tok, err := demoTokenizer(ctx, t)
	if err != nil {
		return nil, nil, err
	}
	mc, err := tinyModelConfig(t, tok.VocabSize())
	if err != nil {
		return nil, nil, err
	}
	opt, err := modelOptions(t, "")
	if err != nil {
		return nil, nil, err
	}
	if t.Has("demo.model.seed") {
		s, _ := t.Int("demo.model.seed")
		opt.Seed = uint64(s)
	}
	m, err := llm.New(mc, opt)
	if err != nil {
		return nil, nil, err
	}
	fmt.Printf("%s: tiny Qwen2-shaped model (%d layers, hidden %d, %.2fM parameters), %s tokenizer (%d ids)\n",
		who, mc.NumHiddenLayers, mc.HiddenSize, float64(mc.ParamCount())/1e6, tokName(tok), tok.VocabSize())
	return tok, m, nil
}
