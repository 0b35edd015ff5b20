package all

import (
	"context"
	"strings"
	"testing"

	"ragen/env"
)

// Every tag of Bandit, Sokoban and FrozenLake in config/envs.yaml builds
// through the registry and resets, except VisualSimpleSokoban, whose
// rgb_array render mode is out of scope and must fail with a clear error.
func TestCoreTagsBuild(t *testing.T) {
	tags, err := env.DefaultTags()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, name := range tags.Names() {
		tag := tags[name]
		switch tag.EnvType {
		case "bandit", "sokoban", "frozen_lake":
		default:
			continue
		}
		n++
		e, err := tag.Build()
		if name == "VisualSimpleSokoban" {
			if err == nil || !strings.Contains(err.Error(), "rgb_array") {
				t.Errorf("%s: err = %v, want an rgb_array error", name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		obs, err := e.Reset(context.Background(), 10000, env.ModeTrain)
		if err != nil || obs == "" || obs != e.Render() {
			t.Errorf("%s: reset: %q, %v", name, obs, err)
		}
		if l, ok := e.(env.ActionLookup); !ok || len(l.ActionLookup()) == 0 {
			t.Errorf("%s: no action lookup", name)
		}
		_ = e.Close()
	}
	if n != 9 {
		t.Errorf("%d core tags, want 9", n)
	}
}

// Prompt facts of the default configs, in upstream's dict order
// (SokobanEnvConfig / FrozenLakeEnvConfig field defaults, envs.md §2-3).
func TestCorePromptDefaults(t *testing.T) {
	sk, ok := env.PromptDefaultsFor("sokoban")
	if !ok || sk.ObservationFormat != "grid" || len(sk.GridVocab) != 7 || sk.GridVocab[3] != [2]string{"√", "box on target"} ||
		strings.Join(sk.ActionNames, ", ") != "Up, Down, Left, Right" {
		t.Errorf("sokoban: %+v", sk)
	}
	fl, ok := env.PromptDefaultsFor("frozen_lake")
	if !ok || fl.GridVocab[0] != [2]string{"P", "player"} || fl.GridVocab[5] != [2]string{"√", "player on goal"} ||
		strings.Join(fl.ActionNames, ", ") != "Left, Down, Right, Up" {
		t.Errorf("frozen_lake: %+v", fl)
	}
	bd, ok := env.PromptDefaultsFor("bandit")
	if !ok || bd.GridVocab != nil || bd.ActionNames != nil {
		t.Errorf("bandit: %+v", bd)
	}
	if _, ok := env.PromptDefaultsFor("no_such_env"); ok {
		t.Error("unknown type reported prompt defaults")
	}
}
