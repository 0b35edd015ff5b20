// Customenv: a new multi-turn environment ("guess the number", package
// guess) registered under its own env_type and configured from YAML,
// evaluated with two policies that need no model: binary search and a
// fixed guess. ragen-guess/ is the full ragen command line with the env
// registered: `ragen train`/`eval` on an upstream-style experiment config
// (conf/guess_number.yaml).
//
//	go run . [-config config.yaml]
//	go run ./ragen-guess train --config-path conf --config-name guess_number
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"

	"gopkg.in/yaml.v3"

	_ "example.com/ragen-examples/customenv/guess" // registers env_type guess_number
	"ragen/llm/tokenizer"
	"ragen/ragen"
)

func main() {
	path := flag.String("config", "config.yaml", "rollout config (YAML)")
	flag.Parse()
	if err := run(context.Background(), *path, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "customenv:", err)
		os.Exit(1)
	}
}

// loadConfig decodes a YAML file over ragen's defaults and validates it.
func loadConfig(path string) (ragen.Config, error) {
	cfg := ragen.DefaultConfig()
	data, err := os.ReadFile(path)
	if err != nil {
		return cfg, err
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return cfg, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, cfg.Validate()
}

var lastNumber = regexp.MustCompile(`(\d+) is too (low|high)`)

// bisect answers with the middle of the interval the feedback so far leaves.
func bisect(_, _ int, req ragen.GenRequest) (string, error) {
	lo, hi := 1, 100
	for _, m := range lastNumber.FindAllStringSubmatch(req.Prompt, -1) {
		n, _ := strconv.Atoi(m[1])
		if m[2] == "low" {
			lo = max(lo, n+1)
		} else {
			hi = min(hi, n-1)
		}
	}
	return fmt.Sprintf("<think>between %d and %d</think><answer>%d</answer>", lo, hi, (lo+hi)/2), nil
}

func run(ctx context.Context, path string, w io.Writer) error {
	cfg, err := loadConfig(path)
	if err != nil {
		return err
	}
	tok := tokenizer.NewByte()
	for _, p := range []struct {
		name   string
		policy ragen.Policy
	}{
		{"binary search", &ragen.ScriptedPolicy{Func: bisect}},
		{"always 50", &ragen.ScriptedPolicy{Func: func(int, int, ragen.GenRequest) (string, error) {
			return "<think>guess</think><answer>50</answer>", nil
		}}},
	} {
		res, err := ragen.Evaluate(ctx, cfg, p.policy, tok, ragen.DefaultProvider())
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		fmt.Fprintf(w, "%-14s success %.3f over %d episodes\n", p.name, res.Success["GuessNumber"], len(res.Batch.Episodes))
	}
	return nil
}
