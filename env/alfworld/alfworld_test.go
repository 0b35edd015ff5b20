package alfworld_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"ragen/env"
	"ragen/env/webshop/bridgetest"
)

func build(t testing.TB, tag string) env.BaseEnv {
	t.Helper()
	url := bridgetest.Start(t, true)
	tags, err := env.DefaultTags()
	if err != nil {
		t.Fatal(err)
	}
	tg := tags[tag]
	cfg := map[string]any{}
	for k, v := range tg.EnvConfig {
		cfg[k] = v
	}
	cfg["bridge_url"] = url
	cfg["config_file"] = filepath.Join(bridgetest.Root(), "scripts", "testdata", "fakesim", "alfworld_config.yaml")
	tg.EnvConfig = cfg
	e, err := tg.Build()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func TestEpisodeThroughBridge(t *testing.T) {
	e := build(t, "Alfworld")
	ctx := context.Background()
	obs, err := e.Reset(ctx, 4, env.ModeTrain) // sorted train files [game0, game1, game2]; 4 mod 3 = 1
	if err != nil {
		t.Fatal(err)
	}
	want := "-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room (/fake/train/game1/game.tw-pddl).\n\n" +
		"Your task is to: put a apple in fridge.\n\nAdmissible actions: [look, go to fridge 1, take apple 1 from countertop 1]"
	if obs != want || e.Render() != want {
		t.Fatalf("reset:\n%q\nwant\n%q", obs, want)
	}
	r, err := e.Step(ctx, env.Action{Text: "open the fridge"})
	if err != nil || r.Info["action_is_valid"] != false || r.Reward != 0 || r.Done || r.Info["success"] != false {
		t.Errorf("inadmissible: %+v %v", r, err)
	}
	r, _ = e.Step(ctx, env.Action{Text: "take apple 1 from countertop 1"})
	if r.Info["action_is_valid"] != true || !strings.HasSuffix(e.Render(), "Admissible actions: [look, go to fridge 1, put apple 1 in/on fridge 1]") {
		t.Errorf("take: %+v %q", r, e.Render())
	}
	r, _ = e.Step(ctx, env.Action{Text: "put apple 1 in/on fridge 1"})
	if !r.Done || r.Reward != 10 || r.Info["success"] != true || r.Info["action_is_effective"] != true {
		t.Errorf("win: %+v", r)
	}
	e.Reset(ctx, 0, env.ModeVal)
	if !strings.Contains(e.Render(), "/fake/eval_in_distribution/game0/") {
		t.Errorf("val: %q", e.Render())
	}
}

func TestOOD(t *testing.T) {
	e := build(t, "AlfworldOOD")
	e.Reset(context.Background(), 5, env.ModeVal)
	if !strings.Contains(e.Render(), "/fake/eval_out_of_distribution/game2/") {
		t.Errorf("%q", e.Render())
	}
}

func TestConfigErrors(t *testing.T) {
	if _, err := env.New("alfworld", map[string]any{"eval_dataset": "eval"}); err == nil || !strings.Contains(err.Error(), "eval_out_of_distribution") {
		t.Errorf("%v", err)
	}
	url := bridgetest.Start(t, true)
	_, err := env.New("alfworld", map[string]any{"bridge_url": url, "config_file": "nope.yaml"})
	if err == nil || !strings.Contains(err.Error(), "config_file nope.yaml not found") {
		t.Errorf("%v", err)
	}
}

// BenchmarkResetStep: a reset and one step through the bridge (fake
// simulator): the protocol's overhead, not ALFWorld's own speed.
func BenchmarkResetStep(b *testing.B) {
	e := build(b, "Alfworld")
	ctx := context.Background()
	var seed int64
	for b.Loop() {
		if _, err := e.Reset(ctx, seed, env.ModeTrain); err != nil {
			b.Fatal(err)
		}
		if _, err := e.Step(ctx, env.Action{Text: "look"}); err != nil {
			b.Fatal(err)
		}
		seed++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "resets+steps/s")
}
