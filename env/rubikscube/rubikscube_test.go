package rubikscube

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"ragen/env"
	"ragen/env/envtest"
)

func scriptedRand(ints ...int) RandFunc {
	return func(int64) (env.Rand, error) { return env.NewScripted(nil, ints), nil }
}

func allMoves() []Move {
	var ms []Move
	for m := Move(1); m <= 12; m++ {
		ms = append(ms, m)
	}
	return ms
}

// A scrambled start state used by several tests: solved, then R U F' D L B'.
func mixed(t testing.TB) Cube {
	c := SolvedCube()
	for _, m := range []Move{7, 1, 10, 3, 5, 12} {
		truth(t, c.Apply(m))
	}
	return c
}

func TestEveryMoveHasOrderFour(t *testing.T) {
	start := mixed(t)
	for _, m := range allMoves() {
		c := start
		for k := 1; k <= 4; k++ {
			c.Apply(m)
			if k < 4 {
				ne(t, start, c, "%v applied %d times is the identity", m, k)
			}
		}
		eq(t, start, c, "%v applied 4 times", m)
	}
}

func TestMoveThenInverseIsIdentity(t *testing.T) {
	start := mixed(t)
	for _, m := range allMoves() {
		c := start
		c.Apply(m)
		c.Apply(m.Inverse())
		eq(t, start, c, "%v then %v", m, m.Inverse())
		c.Apply(m.Inverse())
		c.Apply(m)
		eq(t, start, c, "%v then %v", m.Inverse(), m)
	}
}

// corners lists the three sticker positions of each of the eight corners
// (see the position table in cube.go).
var corners = [8][3]int{
	{0, 4, 17},  // UBL
	{1, 13, 16}, // UBR
	{2, 5, 8},   // UFL
	{3, 9, 12},  // UFR
	{20, 7, 10}, // DFL
	{21, 11, 14},
	{22, 6, 19}, // DBL
	{23, 15, 18},
}

// cornerSet is the sorted colour triple of each corner position, sorted.
func cornerSet(c Cube) []string {
	var out []string
	for _, k := range corners {
		cs := []byte{colourLetters[c[k[0]]], colourLetters[c[k[1]]], colourLetters[c[k[2]]]}
		sort.Slice(cs, func(i, j int) bool { return cs[i] < cs[j] })
		out = append(out, string(cs))
	}
	sort.Strings(out)
	return out
}

// Every legal move permutes whole corners, so the multiset of corner colour
// triples of the solved cube is invariant. Upstream's B breaks it: it mixes
// stickers of two corners.
func TestMovesKeepCornersWhole(t *testing.T) {
	want := cornerSet(SolvedCube())
	c := SolvedCube()
	seq := []Move{1, 11, 6, 9, 12, 3, 8, 11, 11, 2, 5, 10, 4, 7}
	for i, m := range seq {
		c.Apply(m)
		eq(t, want, cornerSet(c), "after move %d (%v)", i, m)
	}
	l := SolvedCube()
	l.ApplyLegacy(1)  // U
	l.ApplyLegacy(11) // legacy B
	ne(t, want, cornerSet(l), "legacy B should break a corner")
}

func TestSingleMovesFromSolved(t *testing.T) {
	tests := []struct {
		moves  []Move
		legacy bool
		want   string
	}{
		// U: F top ← R top, R ← B, B ← L, L ← F; U face keeps W.
		{[]Move{1}, false, "WWWW GGOO RRGG BBRR OOBB YYYY"},
		// U' undoes it in the other direction: F top ← L top, L ← B, B ← R, R ← F.
		{[]Move{2}, false, "WWWW BBOO OOGG GGRR RRBB YYYY"},
		// D: F bottom ← L bottom, L ← B, B ← R, R ← F.
		{[]Move{3}, false, "WWWW OOBB GGOO RRGG BBRR YYYY"},
		// L: U(0,2) ← B(19,17) = B; B(19,17) ← D(20,22) = Y; D(20,22) ← F(8,10) = G; F(8,10) ← U(0,2) = W.
		{[]Move{5}, false, "BWBW OOOO WGWG RRRR BYBY GYGY"},
		// R: U(1,3) ← F(9,11) = G; F ← D = Y; D(21,23) ← B(18,16) = B; B(18,16) ← U(1,3) = W.
		{[]Move{7}, false, "WGWG OOOO GYGY RRRR WBWB YBYB"},
		// F: U(2,3) ← L(7,5) = O; L(7,5) ← D(21,20) = Y; D(21,20) ← R(12,14) = R; R(12,14) ← U(2,3) = W.
		{[]Move{9}, false, "WWOO OYOY GGGG WRWR BBBB RRYY"},
		// B: U(0,1) ← R(13,15) = R; R(13,15) ← D(22,23) = Y; D(22,23) ← L(4,6) = O; L(4,6) ← U(0,1) = W.
		{[]Move{11}, false, "RRWW WOWO GGGG RYRY BBBB YYOO"},
		// U then B. After U: L=GGOO, R=BBRR, B=OOBB. B turns its own face to BOBO;
		// U(0,1) ← R(13,15) = B,R; R(13,15) ← D(23,22) = Y,Y; D(23,22) ← L(6,4) = O,G; L(6,4) ← U(0,1) = W,W.
		{[]Move{1, 11}, false, "BRWW WGWO RRGG BYRY BOBO YYGO"},
		// Upstream's B: D(22,23) ← L(6,4) = O,G.
		{[]Move{1, 11}, true, "BRWW WGWO RRGG BYRY BOBO YYOG"},
		// L then B. After L: U=BWBW, F=WGWG, B=BYBY, D=GYGY. B face → BBYY;
		// U(0,1) ← R(13,15) = R,R; R(13,15) ← D(23,22) = Y,G; D(23,22) ← L(6,4) = O,O; L(6,4) ← U(0,1) = B,W.
		{[]Move{5, 11}, false, "RRBW WOBO WGWG RYRG BBYY GYOO"},
		// Upstream's B: R(13,15) ← D(22,23) = G,Y.
		{[]Move{5, 11}, true, "RRBW WOBO WGWG RGRY BBYY GYOO"},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.moves, tc.legacy), func(t *testing.T) {
			c := SolvedCube()
			for _, m := range tc.moves {
				if tc.legacy {
					c.ApplyLegacy(m)
				} else {
					c.Apply(m)
				}
			}
			eq(t, tc.want, c.String())
		})
	}
}

func TestParseCube(t *testing.T) {
	c, err := ParseCube("wwww oooo GGGG RRRR BBBB YYYY")
	must(t, err)
	eq(t, SolvedCube(), c)
	for _, bad := range []string{"", "WWWW", "WWWW OOOO GGGG RRRR BBBB YYYX", "WWWW OOOO GGGG RRRR BBBB YYYY W", "WWWW WOOO GGGG RRRR BBBB YYYY"} {
		_, err := ParseCube(bad)
		isErr(t, err, bad)
	}
}

func golden(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	must(t, err)
	return string(b)
}

func TestRenderGolden(t *testing.T) {
	e, err := NewFromState(DefaultConfig(), SolvedCube())
	must(t, err)
	eq(t, golden(t, "solved_step0.golden"), e.Render())

	res, err := e.Step(context.Background(), env.Action{ID: 1, Text: "U"})
	must(t, err)
	eq(t, golden(t, "u_step1.golden"), e.Render())
	// Not solved, not at max_steps: the returned obs is the in-game text.
	eq(t, e.Render(), res.Observation)
}

func TestStepTable(t *testing.T) {
	oneU := SolvedCube()
	oneU.Apply(1)
	tests := []struct {
		name     string
		maxSteps int
		ids      []int
		reward   float64
		done     bool
		success  bool
		obsTail  string
	}{
		// U' undoes U: solved on the first step, reward 1.0.
		{"solve", 20, []int{2}, 1.0, true, true, "=== Game Over: Cube Solved! ==="},
		// U makes it U2: not solved, step 1 < 20.
		{"not solved", 20, []int{1}, 0.0, false, false, "What is your next move?"},
		// Two U moves with max_steps 2: U2 then U3 = U', still not solved; step 2 ≥ 2 ends it.
		{"max steps", 2, []int{1, 1}, 0.0, true, false, "=== Game Over: Max steps reached. ==="},
		// Solving on the very last allowed step counts as solved.
		{"solve at limit", 1, []int{2}, 1.0, true, true, "=== Game Over: Cube Solved! ==="},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.MaxSteps = tc.maxSteps
			e, err := NewFromState(cfg, oneU)
			must(t, err)
			var res env.StepResult
			for _, id := range tc.ids {
				res, err = e.Step(context.Background(), env.Action{ID: id})
				must(t, err)
			}
			eq(t, tc.reward, res.Reward)
			truth(t, !res.RewardIsInt)
			eq(t, tc.done, res.Done)
			// Upstream: {"action_is_effective": True, "action_is_valid": True, "success": …}.
			eq(t, env.Info{"action_is_effective": true, "action_is_valid": true, "success": tc.success}, res.Info)
			truth(t, strings.HasSuffix(res.Observation, tc.obsTail), res.Observation)
			truth(t, strings.HasSuffix(e.Render(), "What is your next move?"))
		})
	}
}

func TestInvalidIDCountsAsStep(t *testing.T) {
	e, err := NewFromState(DefaultConfig(), mixed(t))
	must(t, err)
	before := e.Cube()
	res, err := e.Step(context.Background(), env.Action{ID: 13})
	must(t, err)
	eq(t, before, e.Cube())
	eq(t, 1, e.CurrentStep())
	eq(t, false, res.Info["action_is_valid"])
	eq(t, false, res.Info["action_is_effective"])
}

func TestResetScriptedScramble(t *testing.T) {
	tests := []struct {
		physical bool
		want     string
	}{
		// legacy_b_move: upstream's B, D(22,23) ← L(6,4) = O,G (see TestSingleMovesFromSolved).
		{false, "BRWW WGWO RRGG BYRY BOBO YYOG"},
		// Default (a real cube's B): D(23,22) ← L(6,4) = O,G.
		{true, "BRWW WGWO RRGG BYRY BOBO YYGO"},
	}
	for _, tc := range tests {
		cfg := DefaultConfig()
		cfg.ScrambleDepth = 2
		cfg.LegacyBMove = !tc.physical
		// Intn(12) = 0 → move 1 (U), then 10 → move 11 (B).
		e, err := NewWithRand(cfg, scriptedRand(0, 10))
		must(t, err)
		obs, err := e.Reset(context.Background(), 7, env.ModeTrain)
		must(t, err)
		eq(t, tc.want, e.Cube().String(), "legacy_b_move=%v", !tc.physical)
		eq(t, e.Render(), obs)
		eq(t, 0, e.CurrentStep())
	}
}

// Steps use the same B as the scramble: a real cube's by default.
func TestStepBMoveFollowsConfig(t *testing.T) {
	for _, physical := range []bool{false, true} {
		cfg := DefaultConfig()
		cfg.LegacyBMove = !physical
		e, err := NewFromState(cfg, SolvedCube())
		must(t, err)
		for _, id := range []int{1, 11} {
			_, err = e.Step(context.Background(), env.Action{ID: id})
			must(t, err)
		}
		want := SolvedCube()
		want.ApplyLegacy(1)
		want.ApplyLegacy(11)
		if physical {
			want = SolvedCube()
			want.Apply(1)
			want.Apply(11)
		}
		eq(t, want, e.Cube(), "legacy_b_move=%v", !physical)
	}
}

func TestResetDeterministic(t *testing.T) {
	cfg := DefaultConfig()
	cfg.LegacyBMove = false // so that scrambles keep the corners whole
	a, err := New(cfg)
	must(t, err)
	b, err := New(cfg)
	must(t, err)
	for _, seed := range []int64{0, 1, 42, 123456} {
		oa, err := a.Reset(context.Background(), seed, env.ModeTrain)
		must(t, err)
		ob, err := b.Reset(context.Background(), seed, env.ModeVal)
		must(t, err)
		eq(t, oa, ob)
		eq(t, cornerSet(SolvedCube()), cornerSet(a.Cube()))
	}
	_, err = a.Reset(context.Background(), -1, env.ModeTrain)
	isErr(t, err, "NumPy rejects negative seeds")
}

func TestConfigValidate(t *testing.T) {
	cfg := DefaultConfig()
	cfg.RenderMode = "rgb"
	cfg.MaxSteps = -1
	cfg.ActionLookup = map[int]string{0: "X"}
	err := cfg.Validate()
	isErr(t, err)
	for _, s := range []string{"render_mode", "max_steps", "action_lookup id 0"} {
		truth(t, strings.Contains(err.Error(), s), s)
	}
}

func TestActionLookupIsCopy(t *testing.T) {
	e, err := New(DefaultConfig())
	must(t, err)
	m := e.ActionLookup()
	eq(t, "B'", m[12])
	eq(t, 12, len(m))
	m[12] = "X"
	eq(t, "B'", e.ActionLookup()[12])
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
			for s := 0; s < 50; s++ {
				if _, err := e.Reset(context.Background(), int64(g*100+s), env.ModeTrain); err != nil {
					t.Error(err)
					return
				}
				for k := 1; k <= 5; k++ {
					if _, err := e.Step(context.Background(), env.Action{ID: k}); err != nil {
						t.Error(err)
					}
					_ = e.Render()
				}
			}
		}(g)
	}
	wg.Wait()
}

func FuzzParseCube(f *testing.F) {
	f.Add("WWWW OOOO GGGG RRRR BBBB YYYY")
	f.Add("BRWW WGWO RRGG BYRY BOBO YYGO")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCube(s)
		if err != nil {
			return
		}
		back, err := ParseCube(c.String())
		if err != nil || back != c {
			t.Fatalf("round trip of %q failed: %v", s, err)
		}
	})
}

func BenchmarkReset(b *testing.B) {
	envtest.BenchReset(b, envtest.Build(New(DefaultConfig())))
}

func BenchmarkStepRender(b *testing.B) {
	cfg := DefaultConfig()
	cfg.MaxSteps = 1 << 30
	e, err := New(cfg)
	must(b, err)
	ctx := context.Background()
	_, err = e.Reset(ctx, 1, env.ModeTrain)
	must(b, err)
	id := 0
	for b.Loop() {
		if _, err := e.Step(ctx, env.Action{ID: id%12 + 1}); err != nil {
			b.Fatal(err)
		}
		_ = e.Render()
		id++
	}
}

func TestRegistry(t *testing.T) {
	e, err := env.New("rubikscube", map[string]any{"scramble_depth": 1, "max_steps": 3, "legacy_b_move": true})
	must(t, err)
	r := e.(*Env)
	eq(t, 1, r.Config().ScrambleDepth)
	eq(t, 3, r.Config().MaxSteps)
	eq(t, true, r.Config().LegacyBMove)
	d, err := env.New("rubikscube", nil)
	must(t, err)
	eq(t, false, d.(*Env).Config().LegacyBMove, "a real cube's B by default")
	eq(t, 12, len(r.ActionLookup()))

	_, err = env.New("rubikscube", map[string]any{"scramble_dept": 1})
	isErr(t, err)
	truth(t, strings.Contains(err.Error(), `"scramble_dept"`) && strings.Contains(err.Error(), "scramble_depth"), err)
	_, err = env.New("rubikscube", map[string]any{"max_steps": -2})
	isErr(t, err)
}

func TestPromptDefaults(t *testing.T) {
	d, ok := env.PromptDefaultsFor("rubikscube")
	truth(t, ok)
	eq(t, []string{"U", "U'", "D", "D'", "L", "L'", "R", "R'", "F", "F'", "B", "B'"}, d.ActionNames)
}
