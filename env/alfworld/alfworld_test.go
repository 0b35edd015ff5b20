package alfworld_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
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
	// The collection's own order, not sorted (service-envs.md §5): the
	// fake lists [game2, game0, game1]; 4 mod 3 = 1.
	obs, err := e.Reset(ctx, 4, env.ModeTrain)
	if err != nil {
		t.Fatal(err)
	}
	want := "-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room (/fake/train/game0/game.tw-pddl).\n\n" +
		"Your task is to: put a apple in fridge.\n\nAdmissible actions: [look, go to fridge 1, take apple 1 from countertop 1]"
	if obs != want || e.Render() != want {
		t.Fatalf("reset:\n%q\nwant\n%q", obs, want)
	}
	r, err := e.Step(ctx, env.Action{Text: "open the fridge"})
	if err != nil || r.Info["action_is_valid"] != false || r.Reward != 0 || r.Done || r.Info["success"] != false {
		t.Errorf("inadmissible: %+v %v", r, err)
	}
	// The step's observation is the render: feedback and the new
	// admissible list; info has exactly three keys.
	r, _ = e.Step(ctx, env.Action{Text: "take apple 1 from countertop 1"})
	wantObs := "You pick up the apple 1 from the countertop 1.\n\nAdmissible actions: [look, go to fridge 1, put apple 1 in/on fridge 1]"
	if r.Observation != wantObs || e.Render() != wantObs ||
		!reflect.DeepEqual(r.Info, env.Info{"action_is_valid": true, "action_is_effective": true, "success": false}) {
		t.Errorf("take: %+v %q", r, e.Render())
	}
	r, _ = e.Step(ctx, env.Action{Text: "put apple 1 in/on fridge 1"})
	if !r.Done || r.Reward != 10 || r.RewardIsInt || r.Info["success"] != true || r.Info["action_is_effective"] != true ||
		r.Observation != "You put the apple 1 in/on the fridge 1.\n\nAdmissible actions: [look, go to fridge 1, put apple 1 in/on fridge 1]" {
		t.Errorf("win: %+v", r)
	}
	e.Reset(ctx, 1, env.ModeVal)
	if !strings.Contains(e.Render(), "/fake/eval_in_distribution/game0/") {
		t.Errorf("val: %q", e.Render())
	}
}

func TestOOD(t *testing.T) {
	e := build(t, "AlfworldOOD")
	e.Reset(context.Background(), 5, env.ModeVal) // [game2, game0, game1][5 mod 3]
	if !strings.Contains(e.Render(), "/fake/eval_out_of_distribution/game1/") {
		t.Errorf("%q", e.Render())
	}
}

// service-envs.md §5 "Reset": the mode changes only when the mapped split
// changes (QUIRK: val → test keeps val, test → val keeps test), and test
// mode needs a seed. Driven through the bridge's protocol, since a Go
// Reset always has a seed.
func TestModeQuirk(t *testing.T) {
	url := bridgetest.Start(t, true)
	cfgFile := filepath.Join(bridgetest.Root(), "scripts", "testdata", "fakesim", "alfworld_config.yaml")
	call := func(path, body string) (int, string) {
		t.Helper()
		resp, err := http.Post(url+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	newEnv := func() string {
		_, b := call("/v1/envs", `{"env_type": "alfworld", "env_config": {"config_file": "`+cfgFile+`"}}`)
		var r struct{ ID string }
		json.Unmarshal([]byte(b), &r)
		return "/v1/envs/" + r.ID
	}
	for _, c := range []struct {
		first, second string
		status        int
		want          string
	}{
		{"test", "val", 422, "Seed must be provided in test mode."}, // test → val keeps test
		{"val", "test", 200, "Admissible actions"},                  // val → test keeps val: no seed needed
		{"test", "", 422, "Seed must be provided in test mode."},    // null keeps the mode
		{"test", "train", 200, "/fake/train/"},                      // train ↔ eval switches
	} {
		id := newEnv()
		if st, b := call(id+"/reset", `{"seed": 1, "mode": "`+c.first+`"}`); st != 200 {
			t.Fatalf("%s: %d %s", c.first, st, b)
		}
		mode := `"` + c.second + `"`
		if c.second == "" {
			mode = "null"
		}
		st, b := call(id+"/reset", `{"seed": null, "mode": `+mode+`}`)
		if st != c.status || !strings.Contains(b, c.want) {
			t.Errorf("%s then %s: %d %s", c.first, c.second, st, b)
		}
	}
}

// service-envs.md §5: the episode's step limit is the config file's
// rl.training.max_nb_steps_per_episode; a game that fails to load is
// retried with the next seed (abs(hash(str(seed))) upstream, CRC-32 of
// str(seed) here) until one loads; seeds outside NumPy's range are
// errors, as np.random.seed raises upstream.
func TestStepLimitRetryAndSeedRange(t *testing.T) {
	url := bridgetest.Start(t, true)
	dir := t.TempDir()
	newEnv := func(t *testing.T, cfg string) env.BaseEnv {
		t.Helper()
		path := filepath.Join(dir, filepath.Base(t.Name())+".yaml")
		if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		e, err := env.New("alfworld", map[string]any{"bridge_url": url, "config_file": path})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}
	ctx := context.Background()
	t.Run("limit", func(t *testing.T) {
		e := newEnv(t, `{"env": {"type": "AlfredTWEnv"}, "rl": {"training": {"max_nb_steps_per_episode": 3}}}`)
		if _, err := e.Reset(ctx, 0, env.ModeTrain); err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= 3; i++ {
			r, err := e.Step(ctx, env.Action{Text: "look"})
			if err != nil || r.Done != (i == 3) || r.Info["success"] != false {
				t.Fatalf("step %d: %+v %v", i, r, err)
			}
		}
	})
	t.Run("retry", func(t *testing.T) {
		// Games [game2, game0, game1], game0 broken: seed 4 → game0; retry
		// crc32("4") = 4088798008 → game0 again; crc32("4088798008") =
		// 855211850 → game1.
		e := newEnv(t, `{"env": {"type": "AlfredTWEnv"}, "fake": {"broken": [0]}, "rl": {"training": {"max_nb_steps_per_episode": 50}}}`)
		obs, err := e.Reset(ctx, 4, env.ModeTrain)
		if err != nil || !strings.Contains(obs, "/fake/train/game1/") {
			t.Fatalf("%q %v", obs, err)
		}
	})
	t.Run("all broken", func(t *testing.T) {
		e := newEnv(t, `{"env": {"type": "AlfredTWEnv"}, "fake": {"broken": [0, 1, 2]}, "rl": {"training": {"max_nb_steps_per_episode": 50}}}`)
		_, err := e.Reset(ctx, 4, env.ModeTrain)
		if err == nil || !strings.Contains(err.Error(), "20 games in a row failed to load") || !strings.Contains(err.Error(), "cannot load /fake/train/game0-broken") {
			t.Fatalf("%v", err)
		}
	})
	t.Run("seed range", func(t *testing.T) {
		e := newEnv(t, `{"env": {"type": "AlfredTWEnv"}, "rl": {"training": {"max_nb_steps_per_episode": 50}}}`)
		for _, seed := range []int64{-3, 1<<32 + 1} {
			if _, err := e.Reset(ctx, seed, env.ModeTrain); err == nil || !strings.Contains(err.Error(), "Seed must be between 0 and 2**32 - 1") {
				t.Errorf("seed %d: %v", seed, err)
			}
		}
		if _, err := e.Reset(ctx, 1<<32-1, env.ModeTrain); err != nil {
			t.Error(err)
		}
	})
	t.Run("no limit", func(t *testing.T) {
		path := filepath.Join(dir, "nolimit.yaml")
		os.WriteFile(path, []byte(`{"env": {"type": "AlfredTWEnv"}}`), 0o644)
		_, err := env.New("alfworld", map[string]any{"bridge_url": url, "config_file": path})
		if err == nil || !strings.Contains(err.Error(), "rl.training.max_nb_steps_per_episode") {
			t.Errorf("%v", err)
		}
	})
	t.Run("game lists once per process", func(t *testing.T) {
		count := filepath.Join(dir, "count")
		cfg := `{"env": {"type": "AlfredTWEnv"}, "fake": {"count_file": "` + count + `"}, "rl": {"training": {"max_nb_steps_per_episode": 50}}}`
		for i := 0; i < 3; i++ {
			e := newEnv(t, cfg)
			if _, err := e.Reset(ctx, int64(i), env.ModeVal); err != nil {
				t.Fatal(err)
			}
		}
		b, _ := os.ReadFile(count)
		if string(b) != "train\neval_in_distribution\n" {
			t.Errorf("collections: %q", b)
		}
	})
	t.Run("default config", func(t *testing.T) {
		// upstream's ./ragen/env/alfworld/alfworld_config.yaml is not in the
		// bridge's folder: its settings are built in (50 steps).
		e, err := env.New("alfworld", map[string]any{"bridge_url": url})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		if _, err := e.Reset(ctx, 0, env.ModeTrain); err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= 50; i++ {
			if r, err := e.Step(ctx, env.Action{Text: "look"}); err != nil || r.Done != (i == 50) {
				t.Fatalf("step %d: %+v %v", i, r, err)
			}
		}
	})
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
