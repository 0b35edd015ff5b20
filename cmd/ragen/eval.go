package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"ragen/config"
	"ragen/env"
	_ "ragen/env/all" // registers every environment
	"ragen/llm/tokenizer"
	"ragen/ragen"
)

// splitFlags pulls ragen's own --name value / --name=value flags out of args
// and leaves the rest (config flags and overrides) for config.ParseArgs.
func splitFlags(args []string, names ...string) (map[string]string, []string, error) {
	known := map[string]bool{}
	for _, n := range names {
		known[n] = true
	}
	vals := map[string]string{}
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "--") {
			rest = append(rest, a)
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !known[name] {
			rest = append(rest, a)
			continue
		}
		if !hasVal {
			if i+1 >= len(args) {
				return nil, nil, fmt.Errorf("flag --%s needs a value", name)
			}
			i++
			val = args[i]
		}
		vals[name] = val
	}
	return vals, rest, nil
}

// loadTree parses config flags and overrides, loads and validates the tree.
func loadTree(args []string, defaultName string) (*config.Tree, config.Args, error) {
	a, err := config.ParseArgs(args)
	if err != nil {
		return nil, a, err
	}
	if a.ConfigName == "" {
		a.ConfigName = defaultName
	}
	t, err := a.Load()
	if err != nil {
		return nil, a, err
	}
	return t, a, nil
}

type evalFlags struct {
	policy, baseURL, apiModel, apiKeyEnv, out, device string
}

func cmdEval(ctx context.Context, args []string) error {
	fl, rest, err := splitFlags(args, "policy", "base-url", "api-model", "api-key-env", "out", "device")
	if err != nil {
		return err
	}
	f := evalFlags{policy: fl["policy"], baseURL: fl["base-url"], apiModel: fl["api-model"], apiKeyEnv: fl["api-key-env"], out: fl["out"], device: fl["device"]}
	t, a, err := loadTree(rest, "eval")
	if err != nil {
		return err
	}
	if a.Cfg != "" {
		fmt.Print(a.Print(t))
		return nil
	}
	cfg, err := rolloutConfig(t)
	if err != nil {
		return err
	}
	if f.policy == "" {
		f.policy = "model"
		if t.Has("model_config.model_name") {
			f.policy = "api"
		}
	}
	var tok tokenizer.Tokenizer = tokenizer.NewByte()
	var policy ragen.Policy
	var closeFn func()
	var proxy *ragen.AgentProxy
	lookup := func(id int) env.BaseEnv { return proxy.EnvManager(env.ModeVal).Env(id) }
	switch f.policy {
	case "oracle", "random":
		noise := 0.0
		if f.policy == "random" {
			noise = 1
		}
		policy, err = ragen.NewDemonstrator(ragen.DemonstratorConfig{
			Noise: noise, MaxActions: cfg.AgentProxy.MaxActionsPerTurn, Sep: cfg.AgentProxy.ActionSep,
			EnableThink: cfg.AgentProxy.EnableThink, Seed: 1}, lookup)
	case "api":
		policy, err = apiPolicy(t, f)
	case "model":
		policy, tok, closeFn, err = modelPolicy(t, f.device)
	default:
		err = fmt.Errorf("--policy %q: valid policies are model, api, oracle, random", f.policy)
	}
	if err != nil {
		return err
	}
	if closeFn != nil {
		defer closeFn()
	}
	// Evaluate builds its own proxy; build one here so the demonstrator can see the envs.
	proxy, err = ragen.NewAgentProxy(cfg, tok, ragen.DefaultProvider(), policy)
	if err != nil {
		return err
	}
	defer proxy.Close()
	start := time.Now()
	b, err := proxy.Rollout(ctx, env.ModeVal)
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	printEval(b, elapsed)
	return writeTrajectories(t, f.out, b, cfg)
}

func printEval(b *ragen.Batch, elapsed time.Duration) {
	tags := map[string]bool{}
	for _, tg := range b.Tags {
		tags[tg] = true
	}
	names := make([]string, 0, len(tags))
	for tg := range tags {
		names = append(names, tg)
	}
	sort.Strings(names)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "tag\tsuccess\tnum_actions\taction_is_valid\n")
	for _, tg := range names {
		m := b.Metrics
		fmt.Fprintf(tw, "%s\t%.4f\t%.2f\t%.4f\n", tg, m[tg+"/success"], m[tg+"/num_actions"], m[tg+"/action_is_valid"])
	}
	tw.Flush()
	keys := make([]string, 0, len(b.Metrics))
	for k := range b.Metrics {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Println()
	for _, k := range keys {
		fmt.Printf("%s: %.6g\n", k, b.Metrics[k])
	}
	n := len(b.Episodes)
	fmt.Printf("\n%d trajectories in %.1fs (%.1f trajectories/s)\n", n, elapsed.Seconds(), float64(n)/elapsed.Seconds())
}

func writeTrajectories(t *config.Tree, out string, b *ragen.Batch, cfg ragen.Config) error {
	if out == "" {
		dir := "results/eval"
		if t.Has("output.dir") {
			if d, err := t.String("output.dir"); err == nil && d != "" {
				dir = d
			}
		}
		if t.Has("output.format") {
			if f, _ := t.String("output.format"); f == "pkl" {
				fmt.Fprintln(os.Stderr, "ragen: output.format=pkl is Python-only; writing JSONL with upstream's field names instead")
			}
		}
		out = filepath.Join(dir, filepath.Base(ragen.DefaultEvalOutputPath(time.Now(), "jsonl")))
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	recs := ragen.TrajectoryRecords(b, ragen.ExportOptions{UpstreamSuccess: cfg.Compat.JSONLSuccess})
	fh, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := ragen.WriteJSONL(fh, recs); err != nil {
		fh.Close()
		return err
	}
	if err := fh.Close(); err != nil {
		return err
	}
	fmt.Printf("wrote %d trajectories to %s (read them with: ragen view %s)\n", len(recs), out, out)
	return nil
}

// providers maps upstream's evaluate_api_llm provider names to
// OpenAI-compatible endpoints and the env var holding the key.
var providers = map[string][2]string{
	"openai":    {"https://api.openai.com/v1", "OPENAI_API_KEY"},
	"together":  {"https://api.together.xyz/v1", "TOGETHER_API_KEY"},
	"deepseek":  {"https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"},
	"anthropic": {"https://api.anthropic.com/v1", "ANTHROPIC_API_KEY"},
}

func apiPolicy(t *config.Tree, f evalFlags) (ragen.Policy, error) {
	c := ragen.DefaultOpenAIConfig()
	r := &reader{t: t}
	if t.Has("model_config.model_name") {
		var key string
		r.str("model_config.model_name", &key)
		r.int("model_config.max_concurrency", &c.MaxConcurrency)
		info := "model_info." + key
		if !t.Has(info) && f.apiModel == "" {
			return nil, fmt.Errorf("model_config.model_name=%q is not a key of model_info", key)
		}
		if t.Has(info) {
			var prov string
			r.str(info+".provider_name", &prov)
			r.str(info+".model_name", &c.Model)
			p, ok := providers[prov]
			if !ok && f.baseURL == "" {
				return nil, fmt.Errorf("%s.provider_name=%q: known providers are anthropic, deepseek, openai, together (or pass --base-url)", info, prov)
			}
			c.BaseURL, c.APIKeyEnv = p[0], p[1]
		}
	}
	if err := r.err(); err != nil {
		return nil, err
	}
	if f.baseURL != "" {
		// a server of your own (vLLM, a proxy): no key unless --api-key-env names one
		c.BaseURL, c.APIKeyEnv = f.baseURL, ""
	}
	if f.apiModel != "" {
		c.Model = f.apiModel
	}
	if f.apiKeyEnv != "" {
		c.APIKeyEnv = f.apiKeyEnv
	}
	return ragen.NewOpenAIPolicy(c)
}
