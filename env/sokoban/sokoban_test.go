package sokoban

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"ragen/env"
	"ragen/env/envtest"
)

var (
	ctx    = context.Background()
	update = flag.Bool("update", false, "rewrite golden files")
)

func mustRoom(t testing.TB, rows ...string) Room {
	t.Helper()
	r, err := ParseRoom(rows)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Rule table (gym-sokoban semantics). Rewards: -0.1 per step, +1 / -1
// when boxes on target rise / fall, +10 when no target is empty, summed in
// that order in floating point: -0.1+1+10 = 10.9, -0.1+-1 = -1.1.
func TestStepRules(t *testing.T) {
	type step struct {
		id      int
		grid    string
		reward  float64
		done    bool
		eff     bool
		success bool
	}
	tests := []struct {
		name     string
		room     []string
		maxSteps int
		steps    []step
	}{
		{"push onto target wins", []string{"#####", "#@$.#", "#####"}, 100, []step{
			{4, "#####\n#_P√#\n#####", 10.9, true, true, true},
		}},
		{"plain moves", []string{"######", "#@ $.#", "######"}, 100, []step{
			{3, "######\n#P_XO#\n######", -0.1, false, false, false}, // wall on the left
			{4, "######\n#_PXO#\n######", -0.1, false, true, false},
			{1, "######\n#_PXO#\n######", -0.1, false, false, false}, // wall above
		}},
		{"push off a target, then blocked", []string{"#######", "#@* $.#", "#######"}, 100, []step{
			// Box (1,2) leaves its target; the player now stands on it, so
			// boxes on target fall from 1 to 0.
			{4, "#######\n#_SXXO#\n#######", -1.1, false, true, false},
			// Box behind box: no push, no move.
			{4, "#######\n#_SXXO#\n#######", -0.1, false, false, false},
		}},
		{"box destination off the grid", []string{"#.#", "#@#", "#$#"}, 100, []step{
			{2, "#O#\n#P#\n#X#", -0.1, false, false, false},
		}},
		{"move-only action does not push", []string{"#####", "#@$.#", "#####"}, 100, []step{
			{8, "#####\n#PXO#\n#####", -0.1, false, false, false},
			{0, "#####\n#PXO#\n#####", -0.1, false, false, false}, // no-op
		}},
		{"max_steps ends on equality only", []string{"#####", "#@$.#", "#####"}, 2, []step{
			{3, "#####\n#PXO#\n#####", -0.1, false, false, false},
			{3, "#####\n#PXO#\n#####", -0.1, true, false, false},
			{3, "#####\n#PXO#\n#####", -0.1, false, false, false},
		}},
		// Upstream accepts max_steps 0: num_env_steps (>= 1 after a step)
		// never equals it, so only the boxes end the episode.
		{"max_steps 0 never ends on steps", []string{"#####", "#@$.#", "#####"}, 0, []step{
			{3, "#####\n#PXO#\n#####", -0.1, false, false, false},
			{4, "#####\n#_P√#\n#####", 10.9, true, true, true},
		}},
		{"two boxes, one pushed on", []string{"#######", "#@$.  #", "# $. ##", "#######"}, 100, []step{
			{4, "#######\n#_P√__#\n#_XO_##\n#######", 0.9, false, true, false},
		}},
	}
	for _, tc := range tests {
		cfg := DefaultConfig()
		cfg.MaxSteps = tc.maxSteps
		e, err := NewFromRoom(cfg, mustRoom(t, tc.room...))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for i, s := range tc.steps {
			r, err := e.Step(ctx, env.Action{ID: s.id})
			if err != nil {
				t.Fatal(err)
			}
			if r.Observation != s.grid || e.Render() != s.grid {
				t.Errorf("%s step %d: grid\n%s\nwant\n%s", tc.name, i, e.Render(), s.grid)
			}
			if r.Reward != s.reward || r.RewardIsInt || r.Done != s.done {
				t.Errorf("%s step %d: reward %v done %v, want %v %v", tc.name, i, r.Reward, r.Done, s.reward, s.done)
			}
			if r.Info["action_is_effective"] != s.eff || r.Info["action_is_valid"] != true || r.Info["success"] != s.success {
				t.Errorf("%s step %d: info %v", tc.name, i, r.Info)
			}
		}
	}
}

func TestRewardPrintsLikePython(t *testing.T) {
	for _, tc := range []struct {
		r    float64
		want string
	}{{10.9, "10.9"}, {-1.1, "-1.1"}, {0.9, "0.9"}, {-0.1, "-0.1"}} {
		if got := env.FormatReward(tc.r, false); got != tc.want {
			t.Errorf("%v -> %q, want %q", tc.r, got, tc.want)
		}
	}
}

func TestInvalidActionID(t *testing.T) {
	e, _ := NewFromRoom(DefaultConfig(), mustRoom(t, "#####", "#@$.#", "#####"))
	r, err := e.Step(ctx, env.Action{ID: 9})
	if err != nil || r.Info["action_is_valid"] != false || r.Reward != 0 || r.Done {
		t.Errorf("id 9: %+v %v", r, err)
	}
	if e.numEnvSteps != 0 {
		t.Error("invalid action counted as a step")
	}
}

func TestCoordRender(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ObservationFormat = "coord"
	e, _ := NewFromRoom(cfg, mustRoom(t, "#######", "#@* $.#", "#######"))
	want := "Board size: 3 rows x 7 cols (zero-indexed).\nTargets: (1, 2), (1, 5)\nBoxes: (1, 4)\nBoxes on target: (1, 2)\nPlayer: (1, 1)"
	if got := e.Render(); got != want {
		t.Errorf("coord:\n%s\nwant\n%s", got, want)
	}
	_, _ = e.Step(ctx, env.Action{ID: 4})
	want = "Board size: 3 rows x 7 cols (zero-indexed).\nTargets: (1, 2), (1, 5)\nBoxes: (1, 3), (1, 4)\nPlayer on target: (1, 2)"
	if got := e.Render(); got != want {
		t.Errorf("coord after push:\n%s\nwant\n%s", got, want)
	}
	gc, err := e.RenderFormat("grid_coord")
	if err != nil || gc != "Coordinates: \n"+want+"\nGrid Map: \n#######\n#_SXXO#\n#######" {
		t.Errorf("grid_coord = %q, %v", gc, err)
	}
	if _, err := e.RenderFormat("walls"); err == nil {
		t.Error("unknown format: want error")
	}
	// Walls are never listed (HEAD behaviour).
	if strings.Contains(gc, "Walls") {
		t.Error("coord lists walls")
	}
}

func TestCustomGridLookup(t *testing.T) {
	tags, err := env.DefaultTags()
	if err != nil {
		t.Fatal(err)
	}
	tag, _ := tags.Lookup("SokobanDifferentGridVocab")
	be, err := tag.Build()
	if err != nil {
		t.Fatal(err)
	}
	e := be.(*Env)
	if err := e.SetRoom(mustRoom(t, "######", "#+$ *#", "######")); err != nil {
		t.Fatal(err)
	}
	// {0:W, 1:., 2:G, 3:C, 4:B, 5:A, 6:@}; player on target -> 6, box on target -> 3.
	if got := e.Render(); got != "WWWWWW\nW@B.CW\nWWWWWW" {
		t.Errorf("grid = %q", got)
	}
	if rows, cols := e.Config().Dims(); rows != 6 || cols != 6 || e.Config().SearchDepth != 30 {
		t.Errorf("config = %+v", e.Config())
	}
}

func TestResetGolden(t *testing.T) {
	for _, tc := range []struct {
		tag   string
		seeds []int64
	}{
		{"SimpleSokoban", []int64{0, 1, 2, 42, 10000}},
		{"CoordSokoban", []int64{0, 10000, 10001}},
		{"LargerSokoban", []int64{0, 1, 2}},
	} {
		tags, _ := env.DefaultTags()
		tag, _ := tags.Lookup(tc.tag)
		be, err := tag.Build()
		if err != nil {
			t.Fatal(err)
		}
		e := be.(*Env)
		var b strings.Builder
		for _, seed := range tc.seeds {
			obs, err := e.Reset(ctx, seed, env.ModeTrain)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "== seed %d (generated from %d)\n%s\n", seed, e.GeneratedFromSeed(), obs)
			plan, ok, err := Solve(e.Room(), 100, 0)
			if err != nil || !ok {
				t.Fatalf("%s seed %d: unsolved (%v)", tc.tag, seed, err)
			}
			for _, id := range plan {
				r, _ := e.Step(ctx, env.Action{ID: id})
				fmt.Fprintf(&b, "-- %s reward %s done %v\n%s\n", e.ActionLookup()[id], env.FormatReward(r.Reward, false), r.Done, e.Render())
			}
		}
		checkGolden(t, filepath.Join("testdata", "reset_"+tc.tag+".golden"), b.String())
	}
}

func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs:\n got:\n%s\nwant:\n%s", path, got, want)
	}
}

func TestConfig(t *testing.T) {
	e, err := FromEnvConfig(map[string]any{"dim_x": 7, "dim_y": 5, "num_boxes": 2})
	if err != nil {
		t.Fatal(err)
	}
	if r, c := e.Config().Dims(); r != 7 || c != 5 {
		t.Errorf("dims %d x %d", r, c)
	}
	if _, err := e.Reset(ctx, 3, env.ModeTrain); err != nil {
		t.Fatal(err)
	}
	if room := e.Room(); room.Rows != 7 || room.Cols != 5 {
		t.Errorf("room %dx%d", room.Rows, room.Cols)
	}
	e, _ = FromEnvConfig(map[string]any{"dim_x": 7}) // only one of the pair: dim_room stays
	if r, c := e.Config().Dims(); r != 6 || c != 6 {
		t.Errorf("dims %d x %d", r, c)
	}
	for _, bad := range []map[string]any{
		{"observation_format": "image"},
		{"render_mode": "rgb_array"},
		{"num_boxes": 0},
		{"dim_room": []any{2, 6}},
		{"dim_rooms": []any{6, 6}},
		{"max_steps": "many"},
	} {
		if _, err := FromEnvConfig(bad); err == nil {
			t.Errorf("%v: want error", bad)
		}
	}
	e, _ = FromEnvConfig(nil)
	if _, err := e.Step(ctx, env.Action{ID: 1}); err == nil {
		t.Error("Step before Reset: want error")
	}
	if e.Render() != "" {
		t.Error("Render before Reset should be empty")
	}
}

// Retries: a 3x3 room has one floor cell, never enough for player + box,
// so every seed fails and the error says how many retries were made.
func TestResetRetries(t *testing.T) {
	e, err := FromEnvConfig(map[string]any{"dim_room": []any{3, 3}, "num_boxes": 1, "max_retries": 5})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Reset(ctx, 0, env.ModeTrain); err == nil || !strings.Contains(err.Error(), "5 retries") {
		t.Errorf("err = %v", err)
	}
	// 6x6 with 3 boxes fails for some seeds (upstream's reference data has
	// 26 of 60); those resets land on RetrySeed(seed) deterministically.
	e, _ = FromEnvConfig(map[string]any{"num_boxes": 3})
	retried := 0
	for seed := range int64(20) {
		o1, err := e.Reset(ctx, seed, env.ModeTrain)
		if err != nil {
			t.Fatal(err)
		}
		if e.GeneratedFromSeed() != seed {
			retried++
		}
		o2, _ := e.Reset(ctx, seed, env.ModeTrain)
		if o1 != o2 {
			t.Fatalf("seed %d: retry not deterministic", seed)
		}
	}
	if retried == 0 {
		t.Error("expected some seeds to need a retry")
	}
	ctxDone, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := e.Reset(ctxDone, 0, env.ModeTrain); err == nil {
		t.Error("cancelled context: want error")
	}
}

// Every generated SimpleSokoban / LargerSokoban room over many seeds is
// solvable, and replaying the solver's plan in the env wins.
func TestGeneratedRoomsSolvable(t *testing.T) {
	n := int64(300)
	if testing.Short() {
		n = 50
	}
	for _, cfg := range []map[string]any{
		{"dim_x": 6, "dim_y": 6, "num_boxes": 1, "max_steps": 100},
		{"dim_x": 8, "dim_y": 8, "num_boxes": 2, "max_steps": 100, "search_depth": 10},
	} {
		e, err := FromEnvConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for seed := range n {
			if _, err := e.Reset(ctx, seed, env.ModeTrain); err != nil {
				t.Fatal(err)
			}
			plan, ok, err := Solve(e.Room(), 200, 0)
			if err != nil || !ok {
				t.Fatalf("%v seed %d: no solution (%v)\n%s", cfg, seed, err, e.Room())
			}
			var last env.StepResult
			for _, id := range plan {
				last, _ = e.Step(ctx, env.Action{ID: id})
			}
			if !last.Done || last.Info["success"] != true {
				t.Fatalf("%v seed %d: plan %v does not win", cfg, seed, plan)
			}
		}
	}
}

func TestConcurrentEnvs(t *testing.T) {
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, _ := FromEnvConfig(map[string]any{"num_boxes": 1})
			for s := range 30 {
				_, _ = e.Reset(ctx, int64(s*4+i), env.ModeTrain)
				for _, id := range []int{1, 2, 3, 4} {
					_, _ = e.Step(ctx, env.Action{ID: id})
					_ = e.Render()
				}
			}
		}()
	}
	wg.Wait()
}

func BenchmarkReset(b *testing.B) {
	envtest.BenchReset(b, envtest.Build(FromEnvConfig(map[string]any{"dim_x": 6, "dim_y": 6, "num_boxes": 1, "max_steps": 100})))
}

func BenchmarkStepRender(b *testing.B) {
	e, _ := FromEnvConfig(map[string]any{"dim_x": 6, "dim_y": 6, "num_boxes": 1, "max_steps": 100})
	_, _ = e.Reset(ctx, 0, env.ModeTrain)
	i := 0
	for b.Loop() {
		r, _ := e.Step(ctx, env.Action{ID: 1 + i%4})
		_ = e.Render()
		if r.Done {
			_, _ = e.Reset(ctx, int64(i), env.ModeTrain)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
}

func TestPromptDefaultsMatchConfig(t *testing.T) {
	c := DefaultConfig()
	envtest.CheckPromptDefaults(t, "sokoban", c.ObservationFormat, c.GridVocab, c.ActionLookupMap)
}

// Upstream's tests/env/test_sokoban_render.py setting (5x5, one box,
// search_depth 20, seed 1234), following HEAD: coord has a Board size line
// and no Walls line; render mode overrides work.
func TestUpstreamRenderTestSetting(t *testing.T) {
	e, err := FromEnvConfig(map[string]any{"dim_room": []any{5, 5}, "num_boxes": 1, "search_depth": 20})
	if err != nil {
		t.Fatal(err)
	}
	obs, err := e.Reset(ctx, 1234, env.ModeTrain)
	if err != nil {
		t.Fatal(err)
	}
	grid, _ := e.RenderFormat("grid")
	coord, _ := e.RenderFormat("coord")
	if obs != grid || len(strings.Split(grid, "\n")) != 5 {
		t.Errorf("grid = %q", grid)
	}
	if !strings.HasPrefix(coord, "Board size: 5 rows x 5 cols (zero-indexed).\nTargets: ") || strings.Contains(coord, "Walls") {
		t.Errorf("coord = %q", coord)
	}
}
