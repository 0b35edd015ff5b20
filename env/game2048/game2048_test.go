package game2048

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ragen/env"
	"ragen/env/envtest"
)

func golden(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return string(b)
}

func TestSlide(t *testing.T) {
	tests := []struct {
		in      []int
		out     []int
		reward  int
		changed bool
	}{
		{[]int{0, 0, 0, 0}, []int{0, 0, 0, 0}, 0, false},
		{[]int{2, 4, 8, 16}, []int{2, 4, 8, 16}, 0, false},
		{[]int{0, 0, 0, 2}, []int{2, 0, 0, 0}, 0, true},
		// Each tile merges once, front to back: 2+2, 2+2.
		{[]int{2, 2, 2, 2}, []int{4, 4, 0, 0}, 8, true},
		// Three equal: the front pair merges, the third stays.
		{[]int{2, 2, 2, 0}, []int{4, 2, 0, 0}, 4, true},
		// No cascade: 4+4 makes 8, which does not merge with the next 8.
		{[]int{4, 4, 8, 0}, []int{8, 8, 0, 0}, 8, true},
		// Gaps close before merging.
		{[]int{2, 0, 2, 4}, []int{4, 4, 0, 0}, 4, true},
		{[]int{4, 0, 0, 4}, []int{8, 0, 0, 0}, 8, true},
		{[]int{1024, 1024, 0, 0}, []int{2048, 0, 0, 0}, 2048, true},
	}
	for _, tc := range tests {
		line := append([]int(nil), tc.in...)
		r, ch := slide(line)
		assert.Equal(t, tc.out, line, "%v", tc.in)
		assert.Equal(t, tc.reward, r, "%v", tc.in)
		assert.Equal(t, tc.changed, ch, "%v", tc.in)
	}
}

func TestMoveDirections(t *testing.T) {
	start := [][]int{
		{2, 0, 2, 0},
		{0, 4, 0, 0},
		{2, 4, 0, 8},
		{0, 0, 0, 8},
	}
	tests := []struct {
		dir    int
		want   [][]int
		reward int
	}{
		// Up: column 0 [2,0,2,0] → [4,0,0,0]; column 1 [0,4,4,0] → [8,0,0,0];
		// column 2 [2,0,0,0] stays; column 3 [0,0,8,8] → [16,0,0,0].
		{Up, [][]int{{4, 8, 2, 16}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}}, 28},
		// Down compacts toward row 3, merging from the bottom.
		{Down, [][]int{{0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, {4, 8, 2, 16}}, 28},
		// Left: row 0 [2,0,2,0] → [4,0,0,0]; row 1 → [4,0,0,0]; row 2 [2,4,0,8] → [2,4,8,0]; row 3 → [8,0,0,0].
		{Left, [][]int{{4, 0, 0, 0}, {4, 0, 0, 0}, {2, 4, 8, 0}, {8, 0, 0, 0}}, 4},
		// Right: mirror image.
		{Right, [][]int{{0, 0, 0, 4}, {0, 0, 0, 4}, {0, 2, 4, 8}, {0, 0, 0, 8}}, 4},
	}
	for _, tc := range tests {
		g := copyGrid(start)
		r, moved := move(g, tc.dir)
		assert.True(t, moved)
		assert.Equal(t, tc.want, g, "dir %d", tc.dir)
		assert.Equal(t, tc.reward, r, "dir %d", tc.dir)
	}
}

func TestStepTable(t *testing.T) {
	type want struct {
		reward      float64
		rewardIsInt bool
		done        bool
		grid        [][]int
		score       int
		raw         float64 // float(reward_merge) or -0.1
		valid       bool
		mask        []bool
		maxTile     int // in info only on the terminal step (0: absent)
		success     bool
		golden      string
	}
	tests := []struct {
		name    string
		logRew  bool
		keepPen bool // keep_invalid_penalty
		grid    [][]int
		score   int
		action  int
		floats  []float64
		ints    []int
		want    want
	}{
		{
			// Left merges 2+2 (reward 4) and slides the two 4s; the spawn takes
			// empties[0] = (0,1) and makes a 4 (0.95 ≥ 0.9). Log reward 0.1·log2(5).
			name: "merge log", logRew: true,
			grid:   [][]int{{2, 2, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 4}, {0, 0, 0, 4}},
			action: Left, floats: []float64{0.95}, ints: []int{0},
			want: want{reward: 0.23219280948873622, grid: [][]int{{4, 4, 0, 0}, {0, 0, 0, 0}, {4, 0, 0, 0}, {4, 0, 0, 0}},
				score: 4, raw: 4, valid: true, mask: []bool{true, true, true, true}, golden: "after_left.golden"},
		},
		{
			name: "merge raw", logRew: false,
			grid:   [][]int{{2, 2, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 4}, {0, 0, 0, 4}},
			action: Left, floats: []float64{0.95}, ints: []int{0},
			// Upstream returns raw_reward = float(reward_merge): a float, printed "4.0".
			want: want{reward: 4, grid: [][]int{{4, 4, 0, 0}, {0, 0, 0, 0}, {4, 0, 0, 0}, {4, 0, 0, 0}},
				score: 4, raw: 4, valid: true, mask: []bool{true, true, true, true}, golden: "after_left.golden"},
		},
		{
			// Up does nothing: no spawn (nothing scripted), penalty erased by the log reward.
			name: "invalid log", logRew: true,
			grid:   [][]int{{2, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}},
			action: Up,
			want: want{reward: 0.0, grid: [][]int{{2, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}},
				raw: -0.1, mask: []bool{false, true, true, false}, golden: "corner.golden"},
		},
		{
			// keep_invalid_penalty (ours): the log reward keeps the -0.1.
			name: "invalid log kept", logRew: true, keepPen: true,
			grid:   [][]int{{2, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}},
			action: Up,
			want: want{reward: -0.1, grid: [][]int{{2, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}},
				raw: -0.1, mask: []bool{false, true, true, false}, golden: "corner.golden"},
		},
		{
			name: "invalid raw", logRew: false,
			grid:   [][]int{{2, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}},
			action: Left,
			want: want{reward: -0.1, grid: [][]int{{2, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}},
				raw: -0.1, mask: []bool{false, true, true, false}, golden: "corner.golden"},
		},
		{
			// Left slides row 3 [0,4,2,8] → [4,2,8,0]; the only empty cell gets a 2
			// (0.5 < 0.9). No equal neighbours remain in any row or column: terminal.
			name: "terminal", logRew: true, score: 100,
			grid:   [][]int{{2, 4, 2, 4}, {4, 2, 4, 2}, {2, 4, 2, 4}, {0, 4, 2, 8}},
			action: Left, floats: []float64{0.5}, ints: []int{0},
			want: want{reward: 0.0, done: true, grid: [][]int{{2, 4, 2, 4}, {4, 2, 4, 2}, {2, 4, 2, 4}, {4, 2, 8, 2}},
				score: 100, raw: 0, valid: true, mask: []bool{false, false, false, false}, maxTile: 8, golden: "stuck.golden"},
		},
		{
			// 1024+1024 → 2048; spawn empties[2] = (0,3) as a 2. Not terminal, so
			// upstream reports neither max_tile nor success. 0.1·log2(2049).
			name: "2048", logRew: true,
			grid:   [][]int{{1024, 1024, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}},
			action: Left, floats: []float64{0.1}, ints: []int{2},
			want: want{reward: 1.1000704269011246, grid: [][]int{{2048, 0, 0, 2}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}},
				score: 2048, raw: 2048, valid: true, mask: []bool{false, true, true, true}},
		},
		{
			// Left merges 1024+1024 in row 3 → [2048,8,16,0]; the spawn fills (3,3)
			// with a 2 and nothing can move: terminal with max_tile 2048, success.
			// Reward 0.1·log2(2049) = 1.1000704269011246.
			name: "terminal 2048", logRew: true,
			grid:   [][]int{{2, 4, 2, 4}, {4, 2, 4, 2}, {2, 4, 2, 4}, {1024, 1024, 8, 16}},
			action: Left, floats: []float64{0.5}, ints: []int{0},
			want: want{reward: 1.1000704269011246, done: true, grid: [][]int{{2, 4, 2, 4}, {4, 2, 4, 2}, {2, 4, 2, 4}, {2048, 8, 16, 2}},
				score: 2048, raw: 2048, valid: true, mask: []bool{false, false, false, false}, maxTile: 2048, success: true},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.UseLogReward, cfg.KeepInvalidPenalty = tc.logRew, tc.keepPen
			rng := env.NewScripted(tc.floats, tc.ints)
			e, err := NewFromState(cfg, tc.grid, tc.score, rng)
			require.NoError(t, err)
			res, err := e.Step(context.Background(), env.Action{ID: tc.action})
			require.NoError(t, err)
			w := tc.want
			assert.Equal(t, w.reward, res.Reward)
			assert.Equal(t, w.rewardIsInt, res.RewardIsInt)
			assert.Equal(t, w.done, res.Done)
			assert.Equal(t, w.grid, e.Grid())
			wantInfo := env.Info{
				"action_is_valid": w.valid, "action_is_effective": w.valid, "grid": w.grid,
				"action_mask": w.mask, "score": w.score, "raw_reward": w.raw,
				"success": w.success,
			}
			if w.maxTile != 0 {
				wantInfo["max_tile"] = w.maxTile
			}
			assert.Equal(t, wantInfo, res.Info)
			if w.golden != "" {
				assert.Equal(t, golden(t, w.golden), e.Render())
			}
			assert.Equal(t, e.Render(), res.Observation)
			f, i := rng.Remaining()
			assert.Equal(t, 0, f+i, "every scripted draw used")
		})
	}
}

func TestResetScripted(t *testing.T) {
	// First spawn: Intn(16) = 5 → (1,1), 0.3 < 0.9 → 2. Second: Intn(15) = 0 → (0,0), 0.95 → 4.
	rng := env.NewScripted([]float64{0.3, 0.95}, []int{5, 0})
	e, err := NewWithRand(DefaultConfig(), func(int64) (env.Rand, error) { return rng, nil })
	require.NoError(t, err)
	_, err = e.Reset(context.Background(), 3, env.ModeTrain)
	require.NoError(t, err)
	assert.Equal(t, [][]int{{4, 0, 0, 0}, {0, 2, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}}, e.Grid())
	assert.Equal(t, 0, e.Score())
}

func TestResetSeeded(t *testing.T) {
	a, err := New(DefaultConfig())
	require.NoError(t, err)
	b, err := New(DefaultConfig())
	require.NoError(t, err)
	for _, seed := range []int64{0, 1, 42, 99999} {
		oa, err := a.Reset(context.Background(), seed, env.ModeTrain)
		require.NoError(t, err)
		ob, err := b.Reset(context.Background(), seed, env.ModeTrain)
		require.NoError(t, err)
		assert.Equal(t, oa, ob)
		tiles := 0
		for _, row := range a.Grid() {
			for _, v := range row {
				if v != 0 {
					tiles++
					assert.Contains(t, []int{2, 4}, v)
				}
			}
		}
		assert.Equal(t, 2, tiles, "seed %d", seed)
		for _, id := range []int{0, 1, 2, 3} {
			ra, err := a.Step(context.Background(), env.Action{ID: id})
			require.NoError(t, err)
			rb, err := b.Step(context.Background(), env.Action{ID: id})
			require.NoError(t, err)
			assert.Equal(t, ra, rb)
		}
	}
	_, err = a.Reset(context.Background(), -5, env.ModeTrain)
	assert.Error(t, err)
}

func TestStepBeforeReset(t *testing.T) {
	e, err := New(DefaultConfig())
	require.NoError(t, err)
	_, err = e.Step(context.Background(), env.Action{ID: 0})
	assert.Error(t, err)
}

func TestNewFromStateErrors(t *testing.T) {
	rng := env.NewScripted(nil, nil)
	for _, g := range [][][]int{
		{{2, 0}, {0, 0}},
		{{2, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0}},
		{{3, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}},
	} {
		_, err := NewFromState(DefaultConfig(), g, 0, rng)
		assert.Error(t, err, "%v", g)
	}
}

func TestRegistry(t *testing.T) {
	e, err := env.New("game_2048", map[string]any{"size": 5, "use_log_reward": false, "two_prob": 1})
	require.NoError(t, err)
	g := e.(*Env)
	assert.Equal(t, 5, g.Config().Size)
	assert.Equal(t, 1.0, g.Config().TwoProb)
	assert.False(t, g.Config().UseLogReward)
	_, err = e.Reset(context.Background(), 0, env.ModeTrain)
	require.NoError(t, err)
	assert.Len(t, g.Grid(), 5)

	_, err = env.New("game_2048", map[string]any{"invalid_act_score": -1})
	assert.ErrorContains(t, err, "invalid_act_score")
	_, err = env.New("game_2048", map[string]any{"two_prob": 1.5})
	assert.ErrorContains(t, err, "two_prob")
}

func TestConcurrentEnvs(t *testing.T) {
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			e, err := New(DefaultConfig())
			if err != nil {
				t.Error(err)
				return
			}
			for s := 0; s < 20; s++ {
				if _, err := e.Reset(context.Background(), int64(g*100+s), env.ModeTrain); err != nil {
					t.Error(err)
					return
				}
				for k := 0; k < 30; k++ {
					res, err := e.Step(context.Background(), env.Action{ID: k % 4})
					if err != nil {
						t.Error(err)
						return
					}
					_ = e.Render()
					if res.Done {
						break
					}
				}
			}
		}(g)
	}
	wg.Wait()
}

// A full random game from a seed always ends (board fills) and keeps the
// score equal to the sum of merge rewards.
func TestPlayToEnd(t *testing.T) {
	e, err := New(DefaultConfig())
	require.NoError(t, err)
	_, err = e.Reset(context.Background(), 7, env.ModeTrain)
	require.NoError(t, err)
	sum := 0
	for step := 0; step < 100000; step++ {
		res, err := e.Step(context.Background(), env.Action{ID: step % 4})
		require.NoError(t, err)
		if r := res.Info["raw_reward"].(float64); r > 0 {
			sum += int(r)
		}
		if res.Done {
			assert.Equal(t, sum, e.Score())
			assert.Contains(t, e.Render(), "Valid Actions: None.")
			return
		}
	}
	t.Fatal("game did not end")
}

func BenchmarkReset(b *testing.B) {
	envtest.BenchReset(b, envtest.Build(New(DefaultConfig())))
}

func BenchmarkStepRender(b *testing.B) {
	e, err := New(DefaultConfig())
	require.NoError(b, err)
	ctx := context.Background()
	_, err = e.Reset(ctx, 1, env.ModeTrain)
	require.NoError(b, err)
	k := 0
	for b.Loop() {
		res, err := e.Step(ctx, env.Action{ID: k % 4})
		if err != nil {
			b.Fatal(err)
		}
		_ = e.Render()
		k++
		if res.Done {
			_, _ = e.Reset(ctx, int64(k), env.ModeTrain)
		}
	}
}

func ExampleNewFromState() {
	grid := [][]int{{2, 2, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}}
	// Spawns pick empties[0] and make a 2 (0.5 < two_prob).
	rng := env.NewScripted([]float64{0.5}, []int{0})
	e, _ := NewFromState(DefaultConfig(), grid, 0, rng)
	res, _ := e.Step(context.Background(), env.Action{ID: Left})
	fmt.Printf("%.4f %v\n", res.Reward, e.Grid()[0])
	fmt.Println(e.Render())
	// Output:
	// 0.2322 [4 2 0 0]
	// Current 2048 Grid:
	// Row 1: [4, 2, 0, 0]
	// Row 2: [0, 0, 0, 0]
	// Row 3: [0, 0, 0, 0]
	// Row 4: [0, 0, 0, 0]
	//
	// Valid Actions: 1(Right), 2(Down).
	// Goal: Merge same numbers to reach 2048.
	// Current Score: 4
	// What is your next move?
}

func TestPromptDefaults(t *testing.T) {
	d, ok := env.PromptDefaultsFor("game_2048")
	require.True(t, ok)
	assert.Equal(t, []string{"Up", "Right", "Down", "Left"}, d.ActionNames)
}

// testdata/episodes.json (written by testdata/episodes_ref.py from the spec):
// eight games on 2×2, 3×3 and 4×4 boards from random positions, random
// moves, raw and log rewards, most played to the terminal step. The spawn
// draws are scripted from the recorded values; every observation, reward
// (as Python prints it), done flag and info must match.
func TestEpisodesMatchReference(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "episodes.json"))
	require.NoError(t, err)
	var eps []struct {
		Size   int
		Log    bool
		Grid   [][]int
		Score  int
		Ints   []int
		Floats []float64
		Steps  []struct {
			A    int
			Obs  string
			R    string
			Done bool
			Info map[string]any
		}
	}
	require.NoError(t, json.Unmarshal(b, &eps))
	require.Len(t, eps, 8)
	for k, ep := range eps {
		cfg := DefaultConfig()
		cfg.Size, cfg.UseLogReward = ep.Size, ep.Log
		rng := env.NewScripted(ep.Floats, ep.Ints)
		e, err := NewFromState(cfg, ep.Grid, ep.Score, rng)
		require.NoError(t, err)
		for i, s := range ep.Steps {
			res, err := e.Step(context.Background(), env.Action{ID: s.A})
			require.NoError(t, err)
			require.Equal(t, s.Obs, res.Observation, "episode %d step %d", k, i)
			require.Equal(t, s.Obs, e.Render(), "episode %d step %d", k, i)
			require.False(t, res.RewardIsInt, "episode %d step %d", k, i)
			require.Equal(t, s.R, env.PyFloatRepr(res.Reward), "episode %d step %d", k, i)
			require.Equal(t, s.Done, res.Done, "episode %d step %d", k, i)
			got, err := json.Marshal(res.Info)
			require.NoError(t, err)
			want, err := json.Marshal(s.Info)
			require.NoError(t, err)
			require.JSONEq(t, string(want), string(got), "episode %d step %d", k, i)
		}
		f, n := rng.Remaining()
		require.Equal(t, 0, f+n, "episode %d: every recorded spawn draw used", k)
	}
}
