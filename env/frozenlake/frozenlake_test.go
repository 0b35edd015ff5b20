package frozenlake

import (
	"context"
	"flag"
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

var testMap = []string{
	"SFFF",
	"FHFH",
	"FFFH",
	"HFFG",
}

// Ids: 1 Left, 2 Down, 3 Right, 4 Up. Slippery with success_rate 0.8: the
// running sums of [(1-0.8)/2, 0.8, (1-0.8)/2] are
// [0.09999999999999998, 0.9, 1.0], so u=0.5 keeps the intended move,
// u=0.05 slips to (a-1)%4 (Right->Down, Down->Left) and u=0.95 slips to
// (a+1)%4 (Right->Up).
func TestStepRules(t *testing.T) {
	type step struct {
		id      int
		u       float64
		render  string
		reward  float64
		done    bool
		eff     bool
		success bool
	}
	tests := []struct {
		name     string
		slippery bool
		steps    []step
	}{
		{"intended move", true, []step{
			{3, 0.5, "_P__\n_O_O\n___O\nO__G", 0, false, true, false},
		}},
		{"slip left of intended", true, []step{
			{3, 0.05, "____\nPO_O\n___O\nO__G", 0, false, true, false},
		}},
		{"slip right of intended off board", true, []step{
			{3, 0.95, "P___\n_O_O\n___O\nO__G", 0, false, false, false},
		}},
		{"wall bump", true, []step{
			{1, 0.5, "P___\n_O_O\n___O\nO__G", 0, false, false, false},
		}},
		{"into hole then absorbing", true, []step{
			{2, 0.5, "____\nPO_O\n___O\nO__G", 0, false, true, false},
			{3, 0.5, "____\n_X_O\n___O\nO__G", 0, true, true, false},
			{4, 0.5, "____\n_X_O\n___O\nO__G", 0, true, false, false},
		}},
		{"to the goal, not slippery", false, []step{
			{3, 0.99, "_P__\n_O_O\n___O\nO__G", 0, false, true, false},
			{3, 0.99, "__P_\n_O_O\n___O\nO__G", 0, false, true, false},
			{2, 0.99, "____\n_OPO\n___O\nO__G", 0, false, true, false},
			{2, 0.99, "____\n_O_O\n__PO\nO__G", 0, false, true, false},
			{2, 0.99, "____\n_O_O\n___O\nO_PG", 0, false, true, false},
			{3, 0.99, "____\n_O_O\n___O\nO__√", 1, true, true, true},
			{1, 0.99, "____\n_O_O\n___O\nO__√", 0, true, false, true},
		}},
	}
	for _, tc := range tests {
		cfg := DefaultConfig()
		cfg.IsSlippery = tc.slippery
		var us []float64
		for _, s := range tc.steps {
			us = append(us, s.u)
		}
		rng := env.NewScripted(us, nil)
		e, err := NewFromMap(cfg, testMap, rng)
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range tc.steps {
			r, err := e.Step(ctx, env.Action{ID: s.id})
			if err != nil {
				t.Fatal(err)
			}
			if e.Render() != s.render || r.Observation != s.render {
				t.Errorf("%s step %d: render\n%s\nwant\n%s", tc.name, i, e.Render(), s.render)
			}
			if r.Reward != s.reward || !r.RewardIsInt || r.Done != s.done {
				t.Errorf("%s step %d: reward %v int %v done %v, want %v true %v", tc.name, i, r.Reward, r.RewardIsInt, r.Done, s.reward, s.done)
			}
			if r.Info["action_is_effective"] != s.eff || r.Info["action_is_valid"] != true || r.Info["success"] != s.success {
				t.Errorf("%s step %d: info %v", tc.name, i, r.Info)
			}
		}
		if f, _ := rng.Remaining(); f != 0 {
			t.Errorf("%s: %d scripted draws unused", tc.name, f)
		}
	}
}

func TestCoordRender(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ObservationFormat = "coord"
	cfg.IsSlippery = false
	e, _ := NewFromMap(cfg, testMap, env.NewScripted([]float64{0, 0}, nil))
	want := "Board size: 4 rows x 4 cols (zero-indexed).\nStart: (0, 0)\nGoal: (3, 3)\nPlayer: (0, 0)\nHoles: (1, 1), (1, 3), (2, 3), (3, 0)"
	if got := e.Render(); got != want {
		t.Errorf("coord:\n%s\nwant\n%s", got, want)
	}
	_, _ = e.Step(ctx, env.Action{ID: 2}) // Down to (1,0)
	_, _ = e.Step(ctx, env.Action{ID: 3}) // Right into the hole (1,1)
	want = "Board size: 4 rows x 4 cols (zero-indexed).\nStart: (0, 0)\nGoal: (3, 3)\nPlayer in hole: (1, 1)\nHoles: (1, 1), (1, 3), (2, 3), (3, 0)"
	if got := e.Render(); got != want {
		t.Errorf("coord in hole:\n%s\nwant\n%s", got, want)
	}
	cfg.ObservationFormat = "grid_coord"
	e, _ = NewFromMap(cfg, []string{"SG", "FF"}, env.NewScripted([]float64{0}, nil))
	_, _ = e.Step(ctx, env.Action{ID: 3})
	want = "Coordinates: \nBoard size: 2 rows x 2 cols (zero-indexed).\nStart: (0, 0)\nGoal: (0, 1)\nPlayer on goal: (0, 1)\nGrid Map: \n_√\n__"
	if got := e.Render(); got != want {
		t.Errorf("grid_coord on goal:\n%q\nwant\n%q", got, want)
	}
}

// Map generation: default_rng(0).random() starts 0.637, 0.270, 0.041 (all
// < 0.9, so the first three tiles are frozen); the full maps are pinned.
func TestGenerateMap(t *testing.T) {
	tests := []struct {
		seed int64
		want string
	}{
		{0, "FFGS FHFF FHFF FFFF"},
		{1, "FHFH FGFF FFFF SFFF"},
		{2, "FFFF FFFF FFFF FFGS"},
		{3, "FFFF FFGF FFFF FSFH"},
		{42, "FFSF FHFF FFFH GFFF"},
	}
	for _, tc := range tests {
		m, err := GenerateMap(4, 0.9, tc.seed)
		if err != nil || strings.Join(m, " ") != tc.want {
			t.Errorf("seed %d: %v (%v), want %s", tc.seed, m, err, tc.want)
		}
	}
	// Every generated map has one S, one G and a path between them.
	for seed := range int64(300) {
		for _, size := range []int{3, 4, 6} {
			m, err := GenerateMap(size, 0.7, seed)
			if err != nil {
				t.Fatal(err)
			}
			all := strings.Join(m, "")
			if strings.Count(all, "S") != 1 || strings.Count(all, "G") != 1 {
				t.Fatalf("seed %d size %d: %v", seed, size, m)
			}
			b := make([][]byte, size)
			si := strings.IndexByte(all, 'S')
			for i := range m {
				b[i] = []byte(m[i])
			}
			if !reachable(b, si/size, si%size) {
				t.Fatalf("seed %d: goal unreachable: %v", seed, m)
			}
		}
	}
}

func TestResetGolden(t *testing.T) {
	for _, format := range []string{"grid", "coord", "grid_coord"} {
		e, err := FromEnvConfig(map[string]any{"observation_format": format})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, seed := range []int64{0, 1, 42, 10000} {
			obs, err := e.Reset(ctx, seed, env.ModeTrain)
			if err != nil {
				t.Fatal(err)
			}
			b.WriteString("== seed ")
			b.WriteString(fmtInt(seed))
			b.WriteString("\n")
			b.WriteString(obs)
			b.WriteString("\n")
			// A fixed action script shows the seeded slips.
			for _, id := range []int{2, 3, 3, 2} {
				r, _ := e.Step(ctx, env.Action{ID: id})
				b.WriteString("-- " + e.cfg.ActionLookupMap[id] + " reward " + env.FormatReward(r.Reward, true) + " done " + boolStr(r.Done) + "\n")
				b.WriteString(e.Render() + "\n")
				if r.Done {
					break
				}
			}
		}
		checkGolden(t, filepath.Join("testdata", "reset_"+format+".golden"), b.String())
	}
}

func fmtInt(v int64) string { return env.FormatReward(float64(v), true) }
func boolStr(b bool) string {
	if b {
		return "true"
	}
	return "false"
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

func TestResetDeterministic(t *testing.T) {
	a, _ := FromEnvConfig(nil)
	b, _ := FromEnvConfig(nil)
	for seed := range int64(50) {
		oa, _ := a.Reset(ctx, seed, env.ModeTrain)
		ob, _ := b.Reset(ctx, seed, env.ModeVal)
		if oa != ob {
			t.Fatalf("seed %d: resets differ", seed)
		}
		for _, id := range []int{1, 2, 3, 4, 2, 3} {
			ra, _ := a.Step(ctx, env.Action{ID: id})
			rb, _ := b.Step(ctx, env.Action{ID: id})
			if ra.Observation != rb.Observation || ra.Reward != rb.Reward || ra.Done != rb.Done {
				t.Fatalf("seed %d: steps differ", seed)
			}
		}
	}
}

func TestConfigAndErrors(t *testing.T) {
	for _, m := range []map[string]any{
		{"observation_format": "image"},
		{"size": 1},
		{"p": 0},
		{"render_mode": "rgb_array"},
		{"slippery": true},
	} {
		if _, err := FromEnvConfig(m); err == nil {
			t.Errorf("%v: want error", m)
		}
	}
	e, _ := FromEnvConfig(nil)
	if _, err := e.Step(ctx, env.Action{ID: 1}); err == nil {
		t.Error("Step before Reset: want error")
	}
	seed := int64(0)
	e, err := FromEnvConfig(map[string]any{"map_seed": seed, "success_rate": 1})
	if err != nil || strings.Join(e.Map(), " ") != "FFGS FHFF FHFF FFFF" {
		t.Fatalf("map_seed: %v %v", e.Map(), err)
	}
	r, err := e.Step(ctx, env.Action{ID: 7})
	if err != nil || r.Info["action_is_valid"] != false || r.Done {
		t.Errorf("invalid id: %+v %v", r, err)
	}
	for _, bad := range [][]string{{}, {"SF", "F"}, {"SX", "FG"}, {"FF", "FG"}, {"SS", "FG"}, {"SF", "FF"}} {
		if _, err := NewFromMap(DefaultConfig(), bad, nil); err == nil {
			t.Errorf("map %v: want error", bad)
		}
	}
	if _, err := e.Reset(ctx, -1, env.ModeTrain); err == nil {
		t.Error("negative seed: want error")
	}
}

func TestRegistryAndTags(t *testing.T) {
	tags, err := env.DefaultTags()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"FrozenLake", "CoordFrozenLake"} {
		tag, _ := tags.Lookup(name)
		e, err := tag.Build()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		obs, err := e.Reset(ctx, 10000, env.ModeTrain)
		if err != nil || obs == "" {
			t.Fatalf("%s: reset: %v", name, err)
		}
		if name == "CoordFrozenLake" && !strings.HasPrefix(obs, "Coordinates: \nBoard size: 4 rows x 4 cols") {
			t.Errorf("CoordFrozenLake obs = %q", obs)
		}
	}
}

func TestConcurrentEnvs(t *testing.T) {
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, _ := FromEnvConfig(nil)
			for s := range 100 {
				_, _ = e.Reset(ctx, int64(s*8+i), env.ModeTrain)
				for _, id := range []int{2, 3, 2, 3} {
					_, _ = e.Step(ctx, env.Action{ID: id})
					_ = e.Render()
				}
			}
		}()
	}
	wg.Wait()
}

func BenchmarkReset(b *testing.B) {
	envtest.BenchReset(b, envtest.Build(FromEnvConfig(nil)))
}

func BenchmarkStepRender(b *testing.B) {
	e, _ := FromEnvConfig(nil)
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
}

func TestPromptDefaultsMatchConfig(t *testing.T) {
	c := DefaultConfig()
	envtest.CheckPromptDefaults(t, "frozen_lake", c.ObservationFormat, c.GridVocab, c.ActionLookupMap)
}

// map_lookup (upstream field) remaps tile codes before grid_lookup.
func TestMapLookup(t *testing.T) {
	e, err := FromEnvConfig(map[string]any{"map_lookup": map[string]any{"P": 0, "F": 2, "H": 1, "G": 3}, "is_slippery": false})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.setMap(testMap); err != nil {
		t.Fatal(err)
	}
	// F -> 2 ("O"), H -> 1 ("_"): the picture's holes and ice swap.
	if got := e.Render(); got != "POOO\nO_O_\nOOO_\n_OOG" {
		t.Errorf("grid = %q", got)
	}
	if _, err := FromEnvConfig(map[string]any{"map_lookup": map[string]any{"F": 1}}); err == nil {
		t.Error("incomplete map_lookup: want error")
	}
}

// RenderFormat is upstream's render(mode) override: any of the three text
// formats regardless of observation_format. testMap with the player on S:
// S shows as P, F as _, H as O, G as G; coord lists Start, Goal, Player,
// Holes (row-major).
func TestRenderFormat(t *testing.T) {
	e, _ := NewFromMap(DefaultConfig(), testMap, env.NewScripted(nil, nil))
	grid := "P___\n_O_O\n___O\nO__G"
	coord := "Board size: 4 rows x 4 cols (zero-indexed).\nStart: (0, 0)\nGoal: (3, 3)\nPlayer: (0, 0)\nHoles: (1, 1), (1, 3), (2, 3), (3, 0)"
	for _, tc := range []struct{ format, want string }{
		{"grid", grid},
		{"coord", coord},
		{"grid_coord", "Coordinates: \n" + coord + "\nGrid Map: \n" + grid},
	} {
		got, err := e.RenderFormat(tc.format)
		if err != nil || got != tc.want {
			t.Errorf("RenderFormat(%q) = %q, %v; want %q", tc.format, got, err, tc.want)
		}
	}
	if e.Render() != grid {
		t.Errorf("Render() = %q, want the configured grid format", e.Render())
	}
	if _, err := e.RenderFormat("walls"); err == nil {
		t.Error("unknown format: want an error")
	}
}

// success_rate is not range-checked (gymnasium takes any value). The slip
// draw picks the first running sum of [fail, sr, fail] above u, fail =
// (1-sr)/2. Right from S on testMap: intended -> (0, 1), (a-1)%4 = Down ->
// (1, 0), (a+1)%4 = Up -> stays on (0, 0).
//
//	sr 1.5:  sums [-0.25, 1.25, 1.0]: u=0.999 -> index 1, intended.
//	sr -0.5: sums [0.75, 0.25, 1.0]: u=0.5 -> index 0 (Down); u=0.8 -> index 2 (Up).
func TestSuccessRateOutsideUnitInterval(t *testing.T) {
	for _, tc := range []struct {
		sr     float64
		u      float64
		player [2]int
	}{
		{1.5, 0.999, [2]int{0, 1}},
		{-0.5, 0.5, [2]int{1, 0}},
		{-0.5, 0.8, [2]int{0, 0}},
	} {
		if _, err := FromEnvConfig(map[string]any{"success_rate": tc.sr}); err != nil {
			t.Fatalf("success_rate %v: %v", tc.sr, err)
		}
		cfg := DefaultConfig()
		cfg.SuccessRate = tc.sr
		e, err := NewFromMap(cfg, testMap, env.NewScripted([]float64{tc.u}, nil))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = e.Step(ctx, env.Action{ID: 3})
		if r, c := e.Player(); r != tc.player[0] || c != tc.player[1] {
			t.Errorf("success_rate %v u %v: player (%d, %d), want %v", tc.sr, tc.u, r, c, tc.player)
		}
	}
}
