package bandit

import (
	"context"
	"math"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"ragen/env"
	"ragen/env/envtest"
)

var ctx = context.Background()

// Draws of NumPy default_rng(s).random() used below (the first is the
// spec's check value for s=0, 42):
//
//	s=0:  0.6369616873214543 0.2697867137638703 0.04097352393619469
//	s=1:  0.5118216247002567 0.9504636963259353 0.14415961271963373
//	s=42: 0.7739560485559633 0.4388784397520523 0.8585979199113825
func TestResetAndPull(t *testing.T) {
	tests := []struct {
		name           string
		split          string
		group          bool
		seed, internal int64
		at1, at2       string
		pull           int
		obs            string
		reward         float64
		success        bool
	}{
		// Generator(0): pair floor(0.637*12)=7 Technician/Youtuber; 0.27<0.5
		// low arm first; pull hi (id 2): 0.041 < 0.25 -> 1.0.
		{"seed0 hi", "train", false, 0, 0, "Technician", "Youtuber", 2, "Youtuber: 1.0 points", 1.0, true},
		// Same state, low arm pays 0.1.
		{"seed0 lo", "train", false, 0, 0, "Technician", "Youtuber", 1, "Technician: 0.1 points", 0.1, false},
		// Generator(0+1): floor(0.512*12)=6 Clerk/Freelancer; 0.95>=0.5
		// swapped; pull hi (id 1): 0.144 < 0.25 -> 1.0.
		{"internal1 hi", "train", false, 0, 1, "Freelancer", "Clerk", 1, "Freelancer: 1.0 points", 1.0, true},
		// Generator(35+7=42): floor(0.774*12)=9 Postman/Pilot; 0.439<0.5
		// low first; pull hi: 0.859 >= 0.25 -> 0.0.
		{"seed42 hi miss", "train", false, 35, 7, "Postman", "Pilot", 2, "Pilot: 0.0 points", 0.0, true},
		// Test split: floor(0.637*8)=5 Secretary/Entrepreneur, low first.
		{"test split", "test", false, 0, 0, "Secretary", "Entrepreneur", 1, "Secretary: 0.1 points", 0.1, false},
		// group_consistent: names from Generator(0) (Technician/Youtuber),
		// coin from Generator(1): 0.512 >= 0.25 -> 0.0.
		{"group consistent", "train", true, 0, 1, "Technician", "Youtuber", 2, "Youtuber: 0.0 points", 0.0, true},
	}
	for _, tc := range tests {
		cfg := DefaultConfig()
		cfg.Split = tc.split
		cfg.GroupConsistent = tc.group
		e, err := NewWithInternalSeed(cfg, tc.internal)
		if err != nil {
			t.Fatal(err)
		}
		obs, err := e.Reset(ctx, tc.seed, env.ModeTrain)
		if err != nil {
			t.Fatal(err)
		}
		if l := e.ActionLookup(); l[1] != tc.at1 || l[2] != tc.at2 || len(l) != 2 {
			t.Errorf("%s: lookup = %v, want {1:%s 2:%s}", tc.name, l, tc.at1, tc.at2)
		}
		if obs != e.Render() || !strings.Contains(obs, "named "+tc.at1+" and "+tc.at2+"\n") {
			t.Errorf("%s: reset obs = %q", tc.name, obs)
		}
		r, err := e.Step(ctx, env.Action{ID: tc.pull, Text: tc.at1})
		if err != nil {
			t.Fatal(err)
		}
		if r.Observation != tc.obs || e.Render() != tc.obs || r.Reward != tc.reward || r.RewardIsInt || !r.Done {
			t.Errorf("%s: step = %+v render %q, want obs %q reward %v done", tc.name, r, e.Render(), tc.obs, tc.reward)
		}
		if r.Info["success"] != tc.success || r.Info["action_is_valid"] != true || r.Info["action_is_effective"] != true {
			t.Errorf("%s: info = %v", tc.name, r.Info)
		}
	}
}

func TestGoldenResetText(t *testing.T) {
	want, err := os.ReadFile("testdata/reset_train_seed0.golden")
	if err != nil {
		t.Fatal(err)
	}
	e, _ := NewWithInternalSeed(DefaultConfig(), 0)
	obs, _ := e.Reset(ctx, 0, env.ModeTrain)
	if obs != string(want) {
		t.Errorf("reset text:\n got %q\nwant %q", obs, want)
	}
}

func TestScriptedCoin(t *testing.T) {
	e, _ := NewWithInternalSeed(DefaultConfig(), 0)
	s := env.NewScripted([]float64{0.25}, nil) // not < 0.25 -> hi_arm_loscore
	e.SetArms(Pair{"Teacher", "Trader"}, false, s)
	if l := e.ActionLookup(); l[1] != "Trader" || l[2] != "Teacher" {
		t.Fatalf("lookup = %v", l)
	}
	r, _ := e.Step(ctx, env.Action{ID: 1})
	if r.Reward != 0 || r.Observation != "Trader: 0.0 points" || r.Info["success"] != true {
		t.Errorf("step = %+v", r)
	}
	if f, _ := s.Remaining(); f != 0 {
		t.Error("coin not drawn exactly once")
	}
}

func TestInvalidActionAndErrors(t *testing.T) {
	e, _ := NewWithInternalSeed(DefaultConfig(), 0)
	if _, err := e.Step(ctx, env.Action{ID: 1}); err == nil {
		t.Error("Step before Reset: want error")
	}
	_, _ = e.Reset(ctx, 0, env.ModeTrain)
	before := e.Render()
	r, err := e.Step(ctx, env.Action{ID: 3})
	if err != nil || r.Done || r.Reward != 0 || r.Info["action_is_valid"] != false || e.Render() != before {
		t.Errorf("invalid id: %+v %v", r, err)
	}
	if _, err := FromEnvConfig(map[string]any{"split": "dev"}); err == nil || !strings.Contains(err.Error(), "split") {
		t.Errorf("bad split: %v", err)
	}
	if _, err := FromEnvConfig(map[string]any{"split": "dev", "render_mode": "rgb_array"}); err == nil ||
		!strings.Contains(err.Error(), "split") || !strings.Contains(err.Error(), "render_mode") {
		t.Errorf("two bad values should both be reported: %v", err)
	}
	if _, err := FromEnvConfig(map[string]any{"lo_arm_name": "Phoenix"}); err == nil || !strings.Contains(err.Error(), "lo_arm_name") {
		t.Errorf("unknown key: %v", err)
	}
	if _, err := e.Reset(ctx, -5, env.ModeTrain); err == nil {
		t.Error("negative seed: want error (NumPy rejects it)")
	}
	// seed + internal_seed is a Python int: past 2^63 it is still a seed
	big, _ := NewWithInternalSeed(DefaultConfig(), 3)
	if _, err := big.Reset(ctx, math.MaxInt64-1, env.ModeTrain); err != nil {
		t.Errorf("seed 2^63-2 + internal 3: %v", err)
	}
}

func TestInstanceCounterAndRegistry(t *testing.T) {
	a, err := env.New("bandit", map[string]any{"split": "test"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := env.New("bandit", nil)
	ia, ib := a.(*Env).InternalSeed(), b.(*Env).InternalSeed()
	if ib != ia+1 {
		t.Errorf("internal seeds %d, %d: want consecutive", ia, ib)
	}
	if a.(*Env).Config().Split != "test" {
		t.Error("env_config not applied")
	}
}

func TestConcurrentEnvs(t *testing.T) {
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, _ := NewWithInternalSeed(DefaultConfig(), int64(i))
			for s := range 200 {
				_, _ = e.Reset(ctx, int64(s), env.ModeTrain)
				_, _ = e.Step(ctx, env.Action{ID: 1})
			}
		}()
	}
	wg.Wait()
}

func BenchmarkReset(b *testing.B) {
	envtest.BenchReset(b, envtest.Build(NewWithInternalSeed(DefaultConfig(), 0)))
}

func BenchmarkStepRender(b *testing.B) {
	e, _ := NewWithInternalSeed(DefaultConfig(), 0)
	_, _ = e.Reset(ctx, 0, env.ModeTrain)
	for b.Loop() {
		_, _ = e.Step(ctx, env.Action{ID: 2})
		_ = e.Render()
	}
}

// Scores given as ints in env_config stay Python ints: str(1) is "1".
func TestIntScores(t *testing.T) {
	e, err := FromEnvConfig(map[string]any{"lo_arm_score": 2, "hi_arm_hiscore": 1.0})
	if err != nil {
		t.Fatal(err)
	}
	e.SetArms(Pair{"Teacher", "Trader"}, true, env.NewScripted([]float64{0.1}, nil))
	r, _ := e.Step(ctx, env.Action{ID: 1})
	if r.Observation != "Teacher: 2 points" || !r.RewardIsInt || r.Reward != 2 {
		t.Errorf("int score: %+v", r)
	}
	e.SetArms(Pair{"Teacher", "Trader"}, true, env.NewScripted([]float64{0.1}, nil))
	r, _ = e.Step(ctx, env.Action{ID: 2})
	if r.Observation != "Trader: 1.0 points" || r.RewardIsInt {
		t.Errorf("float score: %+v", r)
	}
}

func TestArmPairsOption(t *testing.T) {
	e, err := FromEnvConfig(map[string]any{"arm_pairs": []any{[]any{"Red", "Blue"}}})
	require.NoError(t, err)
	seen := map[string]bool{}
	for seed := int64(0); seed < 20; seed++ {
		_, err := e.Reset(context.Background(), seed, env.ModeTrain)
		require.NoError(t, err)
		lk := e.ActionLookup()
		require.ElementsMatch(t, []string{"Red", "Blue"}, []string{lk[1], lk[2]})
		seen[lk[1]] = true
		for id, name := range lk {
			r, err := e.Step(context.Background(), env.Action{ID: id, Text: name})
			require.NoError(t, err)
			require.Equal(t, name == "Blue", r.Info["success"], "the high arm is the second name")
			_, err = e.Reset(context.Background(), seed, env.ModeTrain)
			require.NoError(t, err)
		}
	}
	require.Len(t, seen, 2, "both orders occur")
	_, err = FromEnvConfig(map[string]any{"arm_pairs": []any{[]any{"Red"}, []any{"A", "A"}}})
	require.ErrorContains(t, err, "arm_pairs[0]")
	require.ErrorContains(t, err, "arm_pairs[1]")
}

// hi_arm_hiscore_prob is not range-checked (upstream's dataclass takes any
// value): the coin is u < prob, so 1.5 always pays hi_arm_hiscore and -1
// never does, whatever u is.
func TestHiscoreProbOutsideUnitInterval(t *testing.T) {
	for _, tc := range []struct {
		prob float64
		obs  string
	}{{1.5, "Trader: 1.0 points"}, {-1, "Trader: 0.0 points"}} {
		e, err := FromEnvConfig(map[string]any{"hi_arm_hiscore_prob": tc.prob})
		if err != nil {
			t.Fatalf("prob %v: %v", tc.prob, err)
		}
		e.SetArms(Pair{"Teacher", "Trader"}, true, env.NewScripted([]float64{0.999}, nil))
		r, _ := e.Step(ctx, env.Action{ID: 2})
		if r.Observation != tc.obs || r.Info["success"] != true {
			t.Errorf("prob %v: %+v, want %q", tc.prob, r, tc.obs)
		}
	}
}
