package all

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"ragen/env"
	"ragen/env/game2048"
	"ragen/env/rubikscube"
	"ragen/env/sudoku"
)

// Every tag of Countdown, MetaMathQA, Sudoku, 2048 and Rubik's cube in
// config/envs.yaml builds through the registry and resets, except
// Countdown, whose default data file (data/countdown/train.parquet) is not
// shipped: it must fail with an error that names the file and the way out.
func TestE2TagsBuild(t *testing.T) {
	tags, err := env.DefaultTags()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, name := range tags.Names() {
		tag := tags[name]
		switch tag.EnvType {
		case "countdown", "metamathqa", "sudoku", "game_2048", "rubikscube":
		default:
			continue
		}
		n++
		e, err := tag.Build()
		if tag.EnvType == "countdown" {
			if err == nil || !strings.Contains(err.Error(), "data/countdown/train.parquet") || !strings.Contains(err.Error(), "generate: true") {
				t.Errorf("%s: err = %v, want a missing-file error with a hint", name, err)
			}
			tag.EnvConfig = map[string]any{"generate": true}
			if e, err = tag.Build(); err != nil {
				t.Errorf("%s with generate: %v", name, err)
				continue
			}
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		obs, err := e.Reset(context.Background(), 10000, env.ModeTrain)
		if err != nil || obs == "" || obs != e.Render() {
			t.Errorf("%s: reset: %q, %v", name, obs, err)
		}
		if _, ok := env.PromptDefaultsFor(tag.EnvType); !ok {
			t.Errorf("%s: no prompt defaults for %s", name, tag.EnvType)
		}
		_ = e.Close()
	}
	// Countdown, MetamathQA, SimpleSudoku, MediumSudoku, game_2048, rubikscube.
	if n != 6 {
		t.Errorf("%d tags, want 6", n)
	}
}

// 2048 and Rubik's cube list their actions in the system prompt in
// upstream's dict order (context-and-rollout.md §3.1).
func TestE2PromptDefaults(t *testing.T) {
	g, _ := env.PromptDefaultsFor("game_2048")
	r, _ := env.PromptDefaultsFor("rubikscube")
	if got := strings.Join(g.ActionNames, ", "); got != "Up, Right, Down, Left" {
		t.Errorf("game_2048: %q", got)
	}
	if got := strings.Join(r.ActionNames, ", "); got != "U, U', D, D', L, L', R, R', F, F', B, B'" {
		t.Errorf("rubikscube: %q", got)
	}
	for _, typ := range []string{"countdown", "metamathqa", "sudoku"} {
		d, ok := env.PromptDefaultsFor(typ)
		if !ok || d.ActionNames != nil || d.GridVocab != nil {
			t.Errorf("%s: %+v, %v", typ, d, ok)
		}
	}
}

// The tags' env_config reach the config structs (envs.md §0.4): SimpleSudoku
// {9, easy, with_feedback, conflicts and valid numbers on, max_steps 81},
// MediumSudoku the same with medium, game_2048 and MetamathQA all defaults,
// rubikscube {scramble_depth 1, max_steps 20}; and the manager-side caps.
func TestE2TagConfigs(t *testing.T) {
	tags, err := env.DefaultTags()
	if err != nil {
		t.Fatal(err)
	}
	caps := map[string]int{"Countdown": 1, "MetamathQA": 1, "SimpleSudoku": 20, "MediumSudoku": 30, "game_2048": 700, "rubikscube": 20}
	tokens := map[string]int{"Countdown": 100, "MetamathQA": 100, "SimpleSudoku": 150, "MediumSudoku": 150, "game_2048": 8192, "rubikscube": 96}
	for name, want := range caps {
		tag, ok := tags[name]
		if !ok {
			t.Errorf("tag %s missing", name)
			continue
		}
		if tag.MaxActionsPerTraj != want {
			t.Errorf("%s: max_actions_per_traj %d, want %d", name, tag.MaxActionsPerTraj, want)
		}
		if tag.MaxTokens == nil || *tag.MaxTokens != tokens[name] {
			t.Errorf("%s: max_tokens %v, want %d", name, tag.MaxTokens, tokens[name])
		}
	}
	build := func(name string) env.BaseEnv {
		t.Helper()
		e, err := tags[name].Build()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return e
	}
	for name, diff := range map[string]string{"SimpleSudoku": "easy", "MediumSudoku": "medium"} {
		c := build(name).(*sudoku.Env).Config()
		want := sudoku.DefaultConfig()
		want.GridSize, want.Difficulty, want.RenderFormat, want.MaxSteps = 9, diff, "with_feedback", 81
		if !reflect.DeepEqual(c, want) {
			t.Errorf("%s: %+v, want %+v", name, c, want)
		}
	}
	if c := build("rubikscube").(*rubikscube.Env).Config(); c.ScrambleDepth != 1 || c.MaxSteps != 20 || c.LegacyBMove {
		t.Errorf("rubikscube: %+v", c)
	}
	g := build("game_2048").(*game2048.Env).Config()
	if g.Size != 4 || g.TwoProb != 0.9 || !g.UseLogReward || len(g.ActionLookup) != 4 {
		t.Errorf("game_2048: %+v", g)
	}
}
