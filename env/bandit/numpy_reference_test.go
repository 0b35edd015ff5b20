package bandit

import (
	"encoding/json"
	"os"
	"testing"

	"ragen/env"
)

// testdata/numpy_reference.json was produced with NumPy 1.24 (real
// Generator(PCG64(SeedSequence(seed + internal_seed))), as gymnasium's
// reset(seed=...) builds it) by a transliteration of RAGEN's BanditEnv:
// episode i of a set is the env with internal_seed i reset with the listed
// seed, then one pull. It pins the pair/order draws, the reward coin, the
// rules text and the "{arm}: {reward} points" text byte for byte.
func TestMatchesNumPyReference(t *testing.T) {
	data, err := os.ReadFile("testdata/numpy_reference.json")
	if err != nil {
		t.Fatal(err)
	}
	var sets []struct {
		EnvConfig map[string]any `json:"env_config"`
		Episodes  []struct {
			Seed    int64  `json:"seed"`
			Actions []int  `json:"actions"`
			Reset   string `json:"reset"`
			Steps   []struct {
				Obs       string `json:"obs"`
				Reward    string `json:"reward"`
				Done      bool   `json:"done"`
				Effective bool   `json:"effective"`
				Success   bool   `json:"success"`
			} `json:"steps"`
		} `json:"episodes"`
	}
	if err := json.Unmarshal(data, &sets); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, set := range sets {
		cfg := DefaultConfig()
		if err := env.DecodeConfig(set.EnvConfig, &cfg); err != nil {
			t.Fatal(err)
		}
		for i, ep := range set.Episodes {
			n++
			e, err := NewWithInternalSeed(cfg, int64(i))
			if err != nil {
				t.Fatal(err)
			}
			obs, err := e.Reset(ctx, ep.Seed, env.ModeTrain)
			if err != nil || obs != ep.Reset || e.Render() != ep.Reset {
				t.Errorf("%v internal %d seed %d: reset = %q, %v\nwant %q", set.EnvConfig, i, ep.Seed, obs, err, ep.Reset)
				continue
			}
			if len(ep.Actions) != 1 || len(ep.Steps) != 1 {
				t.Fatalf("episode %d: want exactly one pull", i)
			}
			r, err := e.Step(ctx, env.Action{ID: ep.Actions[0]})
			w := ep.Steps[0]
			if err != nil || e.Render() != w.Obs || r.Observation != w.Obs || env.FormatReward(r.Reward, r.RewardIsInt) != w.Reward ||
				r.Done != w.Done || r.Info["action_is_effective"] != w.Effective || r.Info["success"] != w.Success {
				t.Errorf("%v internal %d seed %d pull %d: got %q reward %v done %v info %v (%v)\nwant %q reward %s success %v",
					set.EnvConfig, i, ep.Seed, ep.Actions[0], r.Observation, r.Reward, r.Done, r.Info, err, w.Obs, w.Reward, w.Success)
			}
		}
	}
	if n < 80 {
		t.Errorf("only %d reference episodes", n)
	}
}
