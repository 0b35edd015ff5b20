package env

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"ragen/internal/pyrand"
)

// counterEnv is a small deterministic env for wrapper tests: the state is a
// number drawn from the seed; action 1 adds 1, action 2 adds a random 0..2.
type counterEnv struct {
	v   int
	rng *pyrand.Random
}

func (c *counterEnv) Reset(_ context.Context, seed int64, _ Mode) (string, error) {
	c.rng = pyrand.NewRandom(seed)
	c.v = c.rng.RandBelow(10)
	return c.Render(), nil
}

func (c *counterEnv) Step(_ context.Context, a Action) (StepResult, error) {
	switch a.ID {
	case 1:
		c.v++
	case 2:
		c.v += c.rng.RandBelow(3)
	default:
		return StepResult{}, fmt.Errorf("bad action %d", a.ID)
	}
	return StepResult{Observation: c.Render(), Reward: float64(c.v), RewardIsInt: true, Done: c.v >= 20, Info: Info{"v": c.v}}, nil
}

func (c *counterEnv) Render() string               { return fmt.Sprint("v=", c.v) }
func (c *counterEnv) Close() error                 { return nil }
func (c *counterEnv) ActionLookup() map[int]string { return map[int]string{1: "Inc", 2: "Rand"} }

type gridEnv struct{ counterEnv }

func (g *gridEnv) Grid() [][]int { return [][]int{{g.v}} }

func TestStepLimit(t *testing.T) {
	ctx := context.Background()
	s := NewStepLimit(&counterEnv{}, 2)
	if _, err := s.Reset(ctx, 0, ModeTrain); err != nil {
		t.Fatal(err)
	}
	r, err := s.Step(ctx, Action{ID: 1})
	if err != nil || r.Done || r.Info["step_limit_reached"] != nil {
		t.Fatalf("step 1: %+v %v", r, err)
	}
	r, err = s.Step(ctx, Action{ID: 1})
	if err != nil || !r.Done || r.Info["step_limit_reached"] != true || s.Steps() != 2 {
		t.Fatalf("step 2: %+v %v", r, err)
	}
	if _, err := s.Step(ctx, Action{ID: 1}); !errors.Is(err, ErrStepLimit) {
		t.Fatalf("step 3: err = %v, want ErrStepLimit", err)
	}
	// Reset starts a new budget; inner errors are passed through uncounted.
	_, _ = s.Reset(ctx, 0, ModeTrain)
	if _, err := s.Step(ctx, Action{ID: 9}); err == nil || s.Steps() != 0 {
		t.Fatalf("inner error: %v, steps %d", err, s.Steps())
	}
}

func TestShaper(t *testing.T) {
	ctx := context.Background()
	inner := &counterEnv{}
	sh := NewShaper(inner, func(a Action, r StepResult) StepResult {
		r.Reward -= 0.5
		r.RewardIsInt = false
		r.Info["shaped"] = a.ID
		return r
	})
	_, _ = sh.Reset(ctx, 0, ModeTrain) // random.seed(0): randbelow(10) = 6
	r, err := sh.Step(ctx, Action{ID: 1})
	if err != nil || r.Reward != 6.5 || r.RewardIsInt || r.Info["shaped"] != 1 || r.Info["v"] != 7 {
		t.Fatalf("shaped = %+v, %v", r, err)
	}
}

func TestRecorderReplay(t *testing.T) {
	ctx := context.Background()
	rec := NewRecorder(&counterEnv{})
	for _, seed := range []int64{3, 4} {
		if _, err := rec.Reset(ctx, seed, ModeVal); err != nil {
			t.Fatal(err)
		}
		for _, id := range []int{2, 1, 2, 2} {
			if _, err := rec.Step(ctx, Action{ID: id}); err != nil {
				t.Fatal(err)
			}
		}
	}
	eps := rec.Episodes()
	if len(eps) != 2 || eps[0].Seed != 3 || eps[1].Mode != ModeVal || len(eps[1].Steps) != 4 {
		t.Fatalf("episodes = %+v", eps)
	}
	for _, ep := range eps {
		if err := Replay(ctx, &counterEnv{}, ep); err != nil {
			t.Errorf("replay: %v", err)
		}
	}
	// A tampered record is caught and the mismatch named.
	bad := eps[0]
	bad.Steps[2].Result.Reward += 1
	if err := Replay(ctx, &counterEnv{}, bad); err == nil || !strings.Contains(err.Error(), "step 2") {
		t.Errorf("tampered replay error = %v", err)
	}
	bad = eps[1]
	bad.Render = "v=-1"
	if err := Replay(ctx, &counterEnv{}, bad); err == nil || !strings.Contains(err.Error(), "after reset") {
		t.Errorf("tampered render error = %v", err)
	}
}

func TestExposeForwardsOptionalInterfaces(t *testing.T) {
	chain := NewStepLimit(NewRecorder(NewShaper(&gridEnv{}, func(_ Action, r StepResult) StepResult { return r })), 5)
	e := Expose(chain)
	if _, ok := e.(ActionLookup); !ok {
		t.Error("ActionLookup not forwarded")
	}
	g, ok := e.(Gridder)
	if !ok {
		t.Fatal("Gridder not forwarded")
	}
	_, _ = e.Reset(context.Background(), 0, ModeTrain)
	if g.Grid()[0][0] != 6 {
		t.Errorf("grid = %v", g.Grid())
	}
	if _, ok := Innermost(e.(Wrapper)).(*gridEnv); !ok {
		t.Error("Innermost did not reach the env")
	}
	plain := Expose(NewStepLimit(&nopEnv{}, 1))
	if _, ok := plain.(ActionLookup); ok {
		t.Error("ActionLookup invented for an env without one")
	}
	if _, ok := plain.(Gridder); ok {
		t.Error("Gridder invented for an env without one")
	}
}
