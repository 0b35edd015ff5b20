package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
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
	requestTimeout, maxRetries, truncation            string
}

const evalHelp = `
  --policy P             model (default), api (when model_config.model_name is set), oracle, random
  --out FILE             the JSONL written (default output.dir/<time>.jsonl)
  --base-url URL         an OpenAI-compatible server (vLLM, SGLang, a proxy) for --policy api
  --api-model NAME       model name sent to it
  --api-key-env VAR      environment variable holding its key
  --request-timeout D    per API attempt (default 60s; config: +model_config.request_timeout=60)
  --max-retries N        API retries after the first try (default 3; config: +model_config.max_retries)
  --truncation MODE      a reply cut by max tokens: fail (the episode, default) or keep
                         (config: +model_config.allow_truncated=true); also a reply
                         text over 64 bytes per max token (+model_config.max_reply_text_bytes),
                         which keep cuts there. A reply body over 8 MiB fails the episode
                         (+model_config.max_reply_bytes)
  --max-failures N       failed episodes tolerated before the run stops
                         (default 10% of the episodes; config: +eval.max_failures)
  --chunk-groups N       env groups per rollout; results stream to disk after each
                         (default 64; config: +eval.chunk_groups)
  --close-timeout D      closing a chunk's envs, in parallel (default 10s)
Episodes are written as they finish to FILE.partial, renamed to FILE at the end,
also when the run is interrupted (SIGINT/SIGTERM) or runs out of failure budget.
`

func cmdEval(ctx context.Context, args []string) error {
	fl, rest, err := splitFlags(args, "policy", "base-url", "api-model", "api-key-env", "out", "device",
		"request-timeout", "max-retries", "truncation", "max-failures", "chunk-groups", "close-timeout")
	if err != nil {
		return err
	}
	f := evalFlags{policy: fl["policy"], baseURL: fl["base-url"], apiModel: fl["api-model"], apiKeyEnv: fl["api-key-env"], out: fl["out"], device: fl["device"],
		requestTimeout: fl["request-timeout"], maxRetries: fl["max-retries"], truncation: fl["truncation"]}
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
	// The envs' data, servers, bridges and sandboxes are checked before a
	// model loads, so a misconfigured env fails in a second, not after it.
	if err := config.CheckEnvs(t, "val"); err != nil {
		return err
	}
	opt, err := evalOptions(t, fl, cfg)
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
	var newPolicy func(lookup func(int) env.BaseEnv) (ragen.Policy, error)
	switch f.policy {
	case "oracle", "random":
		noise := 0.0
		if f.policy == "random" {
			noise = 1
		}
		newPolicy = func(lookup func(int) env.BaseEnv) (ragen.Policy, error) {
			return ragen.NewDemonstrator(ragen.DemonstratorConfig{
				Noise: noise, MaxActions: cfg.AgentProxy.MaxActionsPerTurn, Sep: cfg.AgentProxy.ActionSep,
				EnableThink: cfg.AgentProxy.EnableThink, Seed: 1}, lookup)
		}
	case "api":
		p, err := apiPolicy(t, f)
		if err != nil {
			return err
		}
		newPolicy = func(func(int) env.BaseEnv) (ragen.Policy, error) { return p, nil }
	case "model":
		p, mtok, closeFn, err := modelPolicy(t, f.device)
		if err != nil {
			return err
		}
		defer closeFn()
		tok = mtok
		newPolicy = func(func(int) env.BaseEnv) (ragen.Policy, error) { return p, nil }
	default:
		return fmt.Errorf("--policy %q: valid policies are model, api, oracle, random", f.policy)
	}
	out, err := evalOutputPath(t, f.out)
	if err != nil {
		return err
	}
	return runEval(ctx, cfg, tok, newPolicy, out, opt)
}

// evalOptions reads the eval.* keys (added with +) and their flags; flags win.
func evalOptions(t *config.Tree, fl map[string]string, cfg ragen.Config) (ragen.EvalOptions, error) {
	opt := ragen.EvalOptions{MaxFailures: -2, Export: ragen.ExportOptions{UpstreamSuccess: cfg.Compat.JSONLSuccess}}
	r := &reader{t: t}
	r.int("eval.chunk_groups", &opt.ChunkGroups)
	r.int("eval.max_failures", &opt.MaxFailures)
	r.duration("eval.close_timeout", &opt.CloseTimeout)
	if err := r.err(); err != nil {
		return opt, err
	}
	for _, c := range []struct {
		flag string
		dst  *int
		min  int
	}{{"chunk-groups", &opt.ChunkGroups, 1}, {"max-failures", &opt.MaxFailures, 0}} {
		if v, ok := fl[c.flag]; ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < c.min {
				return opt, fmt.Errorf("--%s %q: want an integer >= %d", c.flag, v, c.min)
			}
			*c.dst = n
		}
	}
	if v, ok := fl["close-timeout"]; ok {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return opt, fmt.Errorf("--close-timeout %q: want a positive duration such as 10s", v)
		}
		opt.CloseTimeout = d
	}
	if opt.ChunkGroups < 0 {
		return opt, fmt.Errorf("eval.chunk_groups=%d must be >= 1", opt.ChunkGroups)
	}
	if opt.MaxFailures == -2 { // default: a tenth of the episodes
		opt.MaxFailures = cfg.ESManager.Val.EnvGroups * cfg.ESManager.Val.GroupSize / 10
	} else if opt.MaxFailures < 0 {
		return opt, fmt.Errorf("eval.max_failures=%d must be >= 0", opt.MaxFailures)
	}
	return opt, nil
}

// evalOutputPath is --out, or upstream's output.*: output.dir (default
// results/eval), output.filename's stem (default val_rollouts) with
// "_YYYYmmdd_HHMMSS" when output.append_timestamp (default true), and the
// extension .jsonl (pkl is Python-only).
func evalOutputPath(t *config.Tree, out string) (string, error) {
	return evalOutputPathAt(t, out, time.Now())
}

func evalOutputPathAt(t *config.Tree, out string, now time.Time) (string, error) {
	if out == "" {
		str := func(key, def string) string {
			if t.Has(key) {
				if v, err := t.String(key); err == nil && v != "" {
					return v
				}
			}
			return def
		}
		dir := str("output.dir", "results/eval")
		if str("output.format", "jsonl") == "pkl" {
			fmt.Fprintln(os.Stderr, "ragen: output.format=pkl is Python-only; writing JSONL with upstream's field names instead")
		}
		name := filepath.Base(str("output.filename", "val_rollouts"))
		name = strings.TrimSuffix(name, filepath.Ext(name))
		stamp := true
		if t.Has("output.append_timestamp") {
			b, err := t.Bool("output.append_timestamp")
			if err != nil {
				return "", fmt.Errorf("output.append_timestamp: %w", err)
			}
			stamp = b
		}
		out = filepath.Join(dir, ragen.EvalOutputName(name, stamp, now, "jsonl"))
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", err
	}
	return out, nil
}

// runEval streams the episodes to out+".partial" and renames it to out at
// the end, whatever the outcome, so an interrupted or failing run keeps its
// finished episodes.
func runEval(ctx context.Context, cfg ragen.Config, tok tokenizer.Tokenizer, newPolicy func(func(int) env.BaseEnv) (ragen.Policy, error), out string, opt ragen.EvalOptions) error {
	tmp := out + ".partial"
	fh, err := os.Create(tmp)
	if err != nil {
		return err
	}
	start := time.Now()
	last := time.Now()
	then := opt.Progress
	opt.Progress = func(done, total, failed int) {
		if then != nil {
			then(done, total, failed)
		}
		if time.Since(last) > 2*time.Second || done == total {
			fmt.Fprintf(os.Stderr, "\reval: %d/%d episodes (%d failed)", done, total, failed)
			last = time.Now()
		}
	}
	sum, runErr := ragen.EvaluateStream(ctx, cfg, tok, ragen.DefaultProvider(), newPolicy, fh, opt)
	fmt.Fprintln(os.Stderr)
	if err := errors.Join(fh.Sync(), fh.Close()); err != nil {
		return errors.Join(runErr, err)
	}
	if err := os.Rename(tmp, out); err != nil {
		return errors.Join(runErr, err)
	}
	printEval(sum, time.Since(start))
	if runErr != nil {
		return fmt.Errorf("%w (the %d episodes written so far are in %s)", runErr, sum.Episodes, out)
	}
	fmt.Printf("wrote %d trajectories to %s (read them with: ragen view %s)\n", sum.Episodes, out, out)
	return nil
}

func printEval(sum ragen.EvalSummary, elapsed time.Duration) {
	tags := map[string]bool{}
	for k := range sum.Metrics {
		if tag, ok := strings.CutSuffix(k, "/success"); ok && !strings.Contains(tag, "/") {
			tags[tag] = true
		}
	}
	names := make([]string, 0, len(tags))
	for tg := range tags {
		names = append(names, tg)
	}
	sort.Strings(names)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "tag\tsuccess\tnum_actions\taction_is_valid\n")
	for _, tg := range names {
		m := sum.Metrics
		fmt.Fprintf(tw, "%s\t%.4f\t%.2f\t%.4f\n", tg, m[tg+"/success"], m[tg+"/num_actions"], m[tg+"/action_is_valid"])
	}
	tw.Flush()
	fmt.Println()
	for _, k := range ragen.SortedKeys(sum.Metrics) {
		fmt.Printf("%s: %.6g\n", k, sum.Metrics[k])
	}
	if sum.Failed > 0 {
		fmt.Printf("\n%d episodes failed:\n", sum.Failed)
		reasons := make([]string, 0, len(sum.Failures))
		for r := range sum.Failures {
			reasons = append(reasons, r)
		}
		sort.Slice(reasons, func(i, j int) bool { return sum.Failures[reasons[i]] > sum.Failures[reasons[j]] })
		for i, r := range reasons {
			if i == 5 {
				fmt.Printf("  ... %d more reasons\n", len(reasons)-5)
				break
			}
			fmt.Printf("  %d x %s\n", sum.Failures[r], r)
		}
	}
	n := sum.Episodes
	fmt.Printf("\n%d trajectories in %.1fs (%.1f trajectories/s)\n", n, elapsed.Seconds(), float64(n)/elapsed.Seconds())
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
			if t.Has(info + ".generation_kwargs") {
				kw, err := t.Get(info + ".generation_kwargs")
				if err != nil {
					return nil, err
				}
				m, ok := kw.(map[string]any)
				if kw != nil && !ok {
					return nil, fmt.Errorf("%s.generation_kwargs: want a mapping of sampling parameters, got %T", info, kw)
				}
				c.GenerationKwargs = m
			}
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
	r.duration("model_config.request_timeout", &c.RequestTimeout)
	r.int("model_config.max_retries", &c.MaxRetries)
	r.bool("model_config.allow_truncated", &c.AllowTruncated)
	r.int("model_config.max_reply_bytes", &c.MaxReplyBytes)
	r.int("model_config.max_reply_text_bytes", &c.MaxReplyTextBytes)
	if err := r.err(); err != nil {
		return nil, err
	}
	if f.requestTimeout != "" {
		d, err := time.ParseDuration(f.requestTimeout)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("--request-timeout %q: want a positive duration such as 30s", f.requestTimeout)
		}
		c.RequestTimeout = d
	}
	if f.maxRetries != "" {
		n, err := strconv.Atoi(f.maxRetries)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("--max-retries %q: want an integer >= 0", f.maxRetries)
		}
		c.MaxRetries = n
	}
	switch f.truncation {
	case "":
	case "fail":
		c.AllowTruncated = false
	case "keep":
		c.AllowTruncated = true
	default:
		return nil, fmt.Errorf("--truncation %q: want fail (the episode fails) or keep", f.truncation)
	}
	return ragen.NewOpenAIPolicy(c)
}
