package env

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
)

// Wrapper is a BaseEnv that wraps another one. Wrappers compose: a
// StepLimit around a Recorder around a Shaper around Sokoban is fine.
type Wrapper interface {
	BaseEnv
	Unwrap() BaseEnv
}

// Expose returns a view of w that also implements exactly those optional
// interfaces (ActionLookup, Gridder) that the innermost env implements,
// forwarded to it, so that code which type-asserts for them (the manager's
// action mapping, 2048's max_tile) sees through wrappers.
func Expose(w Wrapper) BaseEnv {
	var lookup ActionLookup
	var grid Gridder
	for e := BaseEnv(w); e != nil; {
		if l, ok := e.(ActionLookup); ok && lookup == nil {
			lookup = l
		}
		if g, ok := e.(Gridder); ok && grid == nil {
			grid = g
		}
		u, ok := e.(Wrapper)
		if !ok {
			break
		}
		e = u.Unwrap()
	}
	switch {
	case lookup != nil && grid != nil:
		return exposedLookupGrid{w, lookup, grid}
	case lookup != nil:
		return exposedLookup{w, lookup}
	case grid != nil:
		return exposedGrid{w, grid}
	}
	return w
}

type exposedLookup struct {
	Wrapper
	l ActionLookup
}

func (e exposedLookup) ActionLookup() map[int]string { return e.l.ActionLookup() }

type exposedGrid struct {
	Wrapper
	g Gridder
}

func (e exposedGrid) Grid() [][]int { return e.g.Grid() }

type exposedLookupGrid struct {
	Wrapper
	l ActionLookup
	g Gridder
}

func (e exposedLookupGrid) ActionLookup() map[int]string { return e.l.ActionLookup() }
func (e exposedLookupGrid) Grid() [][]int                { return e.g.Grid() }

// Innermost follows Unwrap to the env at the bottom of a wrapper chain.
func Innermost(e BaseEnv) BaseEnv {
	for {
		w, ok := e.(Wrapper)
		if !ok {
			return e
		}
		e = w.Unwrap()
	}
}

// ErrStepLimit is returned by StepLimit.Step once the limit is used up.
var ErrStepLimit = errors.New("env: step limit reached")

// StepLimit ends an episode after Max steps: the Max-th step's result has
// Done set and Info["step_limit_reached"]=true; a further Step before the
// next Reset returns ErrStepLimit without calling the inner env.
type StepLimit struct {
	Inner BaseEnv
	Max   int
	n     int
}

// NewStepLimit wraps inner with a limit of max steps per episode.
func NewStepLimit(inner BaseEnv, max int) *StepLimit { return &StepLimit{Inner: inner, Max: max} }

func (s *StepLimit) Unwrap() BaseEnv { return s.Inner }

// Steps reports the steps taken since the last Reset.
func (s *StepLimit) Steps() int { return s.n }

func (s *StepLimit) Reset(ctx context.Context, seed int64, mode Mode) (string, error) {
	s.n = 0
	return s.Inner.Reset(ctx, seed, mode)
}

func (s *StepLimit) Step(ctx context.Context, a Action) (StepResult, error) {
	if s.n >= s.Max {
		return StepResult{}, fmt.Errorf("%w (%d steps)", ErrStepLimit, s.Max)
	}
	r, err := s.Inner.Step(ctx, a)
	if err != nil {
		return r, err
	}
	s.n++
	if s.n >= s.Max && !r.Done {
		r.Done = true
		r.Info = maps.Clone(r.Info)
		if r.Info == nil {
			r.Info = Info{}
		}
		r.Info["step_limit_reached"] = true
	}
	return r, nil
}

func (s *StepLimit) Render() string { return s.Inner.Render() }
func (s *StepLimit) Close() error   { return s.Inner.Close() }

// ShapeFunc rewrites a step's result (reward shaping, info enrichment). It
// receives the action that produced r.
type ShapeFunc func(a Action, r StepResult) StepResult

// Shaper applies a ShapeFunc to every successful step of its inner env.
type Shaper struct {
	Inner BaseEnv
	Shape ShapeFunc
}

// NewShaper wraps inner so that every step result passes through f.
func NewShaper(inner BaseEnv, f ShapeFunc) *Shaper { return &Shaper{Inner: inner, Shape: f} }

func (s *Shaper) Unwrap() BaseEnv { return s.Inner }
func (s *Shaper) Reset(ctx context.Context, seed int64, mode Mode) (string, error) {
	return s.Inner.Reset(ctx, seed, mode)
}
func (s *Shaper) Step(ctx context.Context, a Action) (StepResult, error) {
	r, err := s.Inner.Step(ctx, a)
	if err != nil {
		return r, err
	}
	r.Info = maps.Clone(r.Info)
	return s.Shape(a, r), nil
}
func (s *Shaper) Render() string { return s.Inner.Render() }
func (s *Shaper) Close() error   { return s.Inner.Close() }

// Transition is one recorded step: the action, what Step returned and what
// Render showed afterwards.
type Transition struct {
	Action Action     `json:"action"`
	Result StepResult `json:"result"`
	Render string     `json:"render"`
}

// Episode is the record of one episode: how it was reset and every step.
type Episode struct {
	Seed       int64        `json:"seed"`
	Mode       Mode         `json:"mode"`
	InitialObs string       `json:"initial_obs"`
	Render     string       `json:"render"` // Render() right after Reset
	Steps      []Transition `json:"steps"`
}

// Recorder records every episode of its inner env for replay and debugging.
// Failed calls are not recorded.
type Recorder struct {
	Inner    BaseEnv
	episodes []Episode
}

// NewRecorder wraps inner with a recorder.
func NewRecorder(inner BaseEnv) *Recorder { return &Recorder{Inner: inner} }

func (r *Recorder) Unwrap() BaseEnv { return r.Inner }

// Episodes returns the recorded episodes, oldest first (copies).
func (r *Recorder) Episodes() []Episode {
	out := make([]Episode, len(r.episodes))
	for i, e := range r.episodes {
		e.Steps = append([]Transition(nil), e.Steps...)
		out[i] = e
	}
	return out
}

func (r *Recorder) Reset(ctx context.Context, seed int64, mode Mode) (string, error) {
	obs, err := r.Inner.Reset(ctx, seed, mode)
	if err != nil {
		return obs, err
	}
	r.episodes = append(r.episodes, Episode{Seed: seed, Mode: mode, InitialObs: obs, Render: r.Inner.Render()})
	return obs, nil
}

func (r *Recorder) Step(ctx context.Context, a Action) (StepResult, error) {
	res, err := r.Inner.Step(ctx, a)
	if err != nil || len(r.episodes) == 0 {
		return res, err
	}
	rec := res
	rec.Info = maps.Clone(res.Info)
	ep := &r.episodes[len(r.episodes)-1]
	ep.Steps = append(ep.Steps, Transition{Action: a, Result: rec, Render: r.Inner.Render()})
	return res, nil
}

func (r *Recorder) Render() string { return r.Inner.Render() }
func (r *Recorder) Close() error   { return r.Inner.Close() }

// Replay re-drives fresh (a newly built env of the same kind and config)
// through ep and checks that it reproduces every observation, render,
// reward, done flag and info map. The error names the first mismatch.
func Replay(ctx context.Context, fresh BaseEnv, ep Episode) error {
	obs, err := fresh.Reset(ctx, ep.Seed, ep.Mode)
	if err != nil {
		return fmt.Errorf("env: replay: reset(seed %d): %w", ep.Seed, err)
	}
	if obs != ep.InitialObs {
		return fmt.Errorf("env: replay: reset(seed %d) observation differs:\n got %q\nwant %q", ep.Seed, obs, ep.InitialObs)
	}
	if got := fresh.Render(); got != ep.Render {
		return fmt.Errorf("env: replay: render after reset differs:\n got %q\nwant %q", got, ep.Render)
	}
	for i, tr := range ep.Steps {
		res, err := fresh.Step(ctx, tr.Action)
		if err != nil {
			return fmt.Errorf("env: replay: step %d (%+v): %w", i, tr.Action, err)
		}
		if !sameResult(res, tr.Result) {
			return fmt.Errorf("env: replay: step %d (%+v) result differs:\n got %+v\nwant %+v", i, tr.Action, res, tr.Result)
		}
		if got := fresh.Render(); got != tr.Render {
			return fmt.Errorf("env: replay: render after step %d differs:\n got %q\nwant %q", i, got, tr.Render)
		}
	}
	return nil
}

func sameResult(a, b StepResult) bool {
	if a.Observation != b.Observation || a.Reward != b.Reward || a.RewardIsInt != b.RewardIsInt || a.Done != b.Done {
		return false
	}
	if len(a.Info) == 0 && len(b.Info) == 0 {
		return true
	}
	return reflect.DeepEqual(a.Info, b.Info)
}
