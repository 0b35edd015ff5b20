// Evalapi: evaluate a model served behind an OpenAI-compatible chat API
// (vLLM, SGLang, llama.cpp's server, a hosted API) on ragen's environments,
// with upstream's prompts and parsing. Start a server first, e.g.
//
//	vllm serve Qwen/Qwen2.5-0.5B-Instruct --port 8000
//	go run . -base-url http://127.0.0.1:8000/v1 -model Qwen/Qwen2.5-0.5B-Instruct -tag CoordSokoban -n 16
//
// The key, if the server needs one, is read from the variable named by
// -api-key-env. Results: success per tag, the batch metrics, and every
// trajectory as JSONL (-out).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"ragen/env"
	_ "ragen/env/all"
	"ragen/llm/tokenizer"
	"ragen/ragen"
)

// Options are the example's flags.
type Options struct {
	BaseURL, Model, APIKeyEnv, Tag, Out string
	N, MaxTurns                         int
	Timeout                             time.Duration
}

func main() {
	var o Options
	flag.StringVar(&o.BaseURL, "base-url", "http://127.0.0.1:8000/v1", "OpenAI-compatible API root")
	flag.StringVar(&o.Model, "model", "Qwen/Qwen2.5-0.5B-Instruct", "model name the server knows")
	flag.StringVar(&o.APIKeyEnv, "api-key-env", "", "environment variable holding the API key (empty: none)")
	flag.StringVar(&o.Tag, "tag", "Bandit", "env tag of config/envs.yaml")
	flag.IntVar(&o.N, "n", 8, "episodes (one seed each)")
	flag.IntVar(&o.MaxTurns, "max-turns", 5, "turns per episode")
	flag.StringVar(&o.Out, "out", "", "write the trajectories here as JSONL")
	flag.DurationVar(&o.Timeout, "timeout", 60*time.Second, "per-request timeout")
	flag.Parse()
	if err := run(context.Background(), o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "evalapi:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o Options, w io.Writer) error {
	oc := ragen.DefaultOpenAIConfig()
	oc.BaseURL, oc.Model, oc.APIKeyEnv, oc.RequestTimeout = o.BaseURL, o.Model, o.APIKeyEnv, o.Timeout
	policy, err := ragen.NewOpenAIPolicy(oc)
	if err != nil {
		return err
	}
	tags, err := env.DefaultTags()
	if err != nil {
		return err
	}
	if _, ok := tags[o.Tag]; !ok {
		return fmt.Errorf("unknown tag %q", o.Tag)
	}
	cfg := ragen.DefaultConfig()
	cfg.CustomEnvs = ragen.SpecsFromTags(tags)
	cfg.ESManager.Val = ragen.EnvSetConfig{EnvGroups: o.N, GroupSize: 1, EnvConfigs: ragen.EnvConfigs{Tags: []string{o.Tag}, NGroups: []int{o.N}}}
	cfg.AgentProxy.MaxTurn = o.MaxTurns
	if err := cfg.Validate(); err != nil {
		return err
	}
	// API models get chat messages; the tokenizer only measures lengths.
	res, err := ragen.Evaluate(ctx, cfg, policy, tokenizer.NewByte(), ragen.DefaultProvider())
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s: success %.3f over %d episodes (%s at %s)\n", o.Tag, res.Success[o.Tag], len(res.Batch.Episodes), o.Model, o.BaseURL)
	for _, k := range ragen.SortedKeys(res.Metrics) {
		fmt.Fprintf(w, "  %-40s %.4f\n", k, res.Metrics[k])
	}
	if o.Out != "" {
		f, err := os.Create(o.Out)
		if err != nil {
			return err
		}
		if err := ragen.WriteJSONL(f, ragen.TrajectoryRecords(res.Batch, ragen.ExportOptions{})); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		fmt.Fprintf(w, "trajectories: %s\n", o.Out)
	}
	return nil
}
