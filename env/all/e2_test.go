package all

import (
	"context"
	"strings"
	"testing"

	"ragen/env"
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
