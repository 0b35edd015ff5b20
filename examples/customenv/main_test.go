package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "example.com/ragen-examples/customenv/guess"

	"ragen/cli"
	"ragen/env"
)

// The env is registered under its own env_type and reachable through the
// registry with its YAML env_config; unknown keys and bad values are errors.
func TestRegistered(t *testing.T) {
	e, err := env.New("guess_number", map[string]any{"max": 10})
	if err != nil {
		t.Fatal(err)
	}
	obs, err := e.Reset(context.Background(), 7, env.ModeTrain)
	if err != nil || !strings.Contains(obs, "from 1 to 10") {
		t.Fatalf("reset: %q %v", obs, err)
	}
	if _, err := env.New("guess_number", map[string]any{"maximum": 10}); err == nil {
		t.Fatal("unknown key accepted")
	}
	if _, err := env.New("guess_number", map[string]any{"max": 1}); err == nil {
		t.Fatal("max=1 accepted")
	}
}

// Binary search over 1..100 always finds the number within 7 guesses (the
// config allows 8 turns); a fixed guess succeeds only when the number is 50.
func TestEvaluateFromYAML(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), "config.yaml", &out); err != nil {
		t.Fatal(err)
	}
	t.Log(out.String())
	if !strings.Contains(out.String(), "binary search  success 1.000 over 8 episodes") {
		t.Fatalf("binary search did not always succeed:\n%s", out.String())
	}
	if strings.Contains(out.String(), "always 50      success 1.000") {
		t.Fatalf("a fixed guess always succeeded:\n%s", out.String())
	}
}

// A config that names an env type nobody registered fails with the name.
func TestUnknownEnvType(t *testing.T) {
	data, err := os.ReadFile("config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, bytes.ReplaceAll(data, []byte("env_type: guess_number"), []byte("env_type: guess_numbr")), 0o644); err != nil {
		t.Fatal(err)
	}
	err = run(context.Background(), bad, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "guess_numbr") {
		t.Fatalf("err = %v", err)
	}
}

// The ragen command line with the env registered (what ragen-guess/ is):
// `ragen eval` with the env's solver as the policy and a one-step `ragen
// train` on the tiny model both read the new env_type from the
// upstream-style config.
func TestRagenCLIWithCustomEnv(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--config-path", "conf", "--config-name", "guess_number", "trainer.default_local_dir=" + dir}
	if err := cli.Run(context.Background(), append([]string{"eval", "--policy", "oracle", "--out", filepath.Join(dir, "eval.jsonl")}, args...)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "eval.jsonl")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "eval.jsonl"))
	if err != nil || strings.Count(string(b), `"success": true`)+strings.Count(string(b), `"success":true`) != 4 {
		t.Fatalf("the solver did not win all 4 episodes (%v):\n%s", err, b)
	}
	// One training step with two turns per episode keeps the byte-level
	// prompts short.
	if err := cli.Run(context.Background(), append([]string{"train", "trainer.total_training_steps=1", "agent_proxy.max_turn=2"}, args...)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "metrics.jsonl")); err != nil {
		entries, _ := os.ReadDir(dir)
		t.Fatalf("%v (run folder holds %v)", err, entries)
	}
}
