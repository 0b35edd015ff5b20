package envtest

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"ragen/env"
)

// Episode is one recorded episode: reset(seed), then the action ids in
// order until done, with what upstream rendered and returned after each.
type Episode struct {
	Seed    int64  `json:"seed"`
	Actions []int  `json:"actions"`
	Reset   string `json:"reset"`
	Steps   []struct {
		Obs       string `json:"obs"`
		Reward    string `json:"reward"` // Python str() of the reward
		Done      bool   `json:"done"`
		Effective bool   `json:"effective"`
		Success   bool   `json:"success"`
	} `json:"steps"`
}

// Set is the episodes recorded for one env_config.
type Set struct {
	EnvConfig map[string]any `json:"env_config"`
	Episodes  []Episode      `json:"episodes"`
}

// Load reads a reference file (a JSON list of sets).
func Load(t testing.TB, path string) []Set {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var sets []Set
	if err := json.Unmarshal(data, &sets); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return sets
}

// Replay checks every episode of path: newEnv builds the env for episode i
// of a set (it may reuse one env per set), and after the reset and each step
// the rendered text, the reward as Python prints it, done and the info
// flags must equal the recording. At least minEpisodes must be recorded.
func Replay(t *testing.T, path string, minEpisodes int, newEnv func(envConfig map[string]any, episode int) (env.BaseEnv, error)) {
	t.Helper()
	ctx := context.Background()
	n := 0
	for _, set := range Load(t, path) {
		for i, ep := range set.Episodes {
			n++
			e, err := newEnv(set.EnvConfig, i)
			if err != nil {
				t.Fatal(err)
			}
			obs, err := e.Reset(ctx, ep.Seed, env.ModeTrain)
			if err != nil || obs != ep.Reset || e.Render() != ep.Reset {
				t.Errorf("%v episode %d seed %d: reset = %q, %v\nwant %q", set.EnvConfig, i, ep.Seed, obs, err, ep.Reset)
				continue
			}
			for k, id := range ep.Actions {
				r, err := e.Step(ctx, env.Action{ID: id})
				w := ep.Steps[k]
				if err != nil || e.Render() != w.Obs || env.FormatReward(r.Reward, r.RewardIsInt) != w.Reward || r.Done != w.Done ||
					r.Info["action_is_effective"] != w.Effective || r.Info["success"] != w.Success || r.Info["action_is_valid"] != true {
					t.Errorf("%v episode %d seed %d step %d (action %d): got %q reward %s done %v info %v (%v)\nwant %q reward %s done %v effective %v success %v",
						set.EnvConfig, i, ep.Seed, k, id, e.Render(), env.FormatReward(r.Reward, r.RewardIsInt), r.Done, r.Info, err,
						w.Obs, w.Reward, w.Done, w.Effective, w.Success)
					break
				}
			}
		}
	}
	if n < minEpisodes {
		t.Errorf("%s: only %d reference episodes, want at least %d", path, n, minEpisodes)
	}
}
