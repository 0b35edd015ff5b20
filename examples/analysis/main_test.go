package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ragen/env"
	_ "ragen/env/all"
	"ragen/llm/tokenizer"
	"ragen/ragen"
)

// writeRollouts runs 3 bandit groups of 2 with a scripted policy and saves
// them as JSONL. Envs 0-3 answer the first arm named, 4 and 5 the second.
func writeRollouts(t *testing.T) string {
	tags, _ := env.DefaultTags()
	cfg := ragen.DefaultConfig()
	cfg.CustomEnvs = ragen.SpecsFromTags(tags)
	cfg.ESManager.Val = ragen.EnvSetConfig{EnvGroups: 3, GroupSize: 2, EnvConfigs: ragen.EnvConfigs{Tags: []string{"Bandit"}, NGroups: []int{3}}}
	cfg.AgentProxy.MaxTurn = 1
	policy := &ragen.ScriptedPolicy{Func: func(envID, _ int, req ragen.GenRequest) (string, error) {
		var a, b string
		if _, err := fmt.Sscanf(req.Prompt[strings.Index(req.Prompt, "named "):], "named %s and %s", &a, &b); err != nil {
			return "", err
		}
		arm := a
		if envID >= 4 {
			arm = b
		}
		return fmt.Sprintf("<think>I pick %s</think><answer>%s</answer>", arm, arm), nil
	}}
	res, err := ragen.Evaluate(context.Background(), cfg, policy, tokenizer.NewByte(), ragen.DefaultProvider())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "rollouts.jsonl")
	var buf bytes.Buffer
	if err := ragen.WriteJSONL(&buf, ragen.TrajectoryRecords(res.Batch, ragen.ExportOptions{})); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestAnalysis(t *testing.T) {
	path := writeRollouts(t)
	var out bytes.Buffer
	if err := run(context.Background(), path, "", 0.9, &out); err != nil {
		t.Fatal(err)
	}
	t.Log(out.String())
	s := out.String()
	for _, want := range []string{"groups kept", "group    0", "group    2", "6 trajectories", "mi_estimate", "retrieval_accuracy"} {
		if !strings.Contains(s, want) {
			t.Fatalf("missing %q in:\n%s", want, s)
		}
	}
}

func TestBadInput(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	os.WriteFile(bad, []byte("{\"custom_id\": 3}\n"), 0o644)
	if err := run(context.Background(), bad, "", 0.9, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "bad.jsonl:1") {
		t.Fatalf("err = %v", err)
	}
	if err := run(context.Background(), "", "", 0.9, &bytes.Buffer{}); err == nil {
		t.Fatal("no -in accepted")
	}
}
