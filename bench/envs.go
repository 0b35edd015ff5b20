package bench

import (
	"context"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	"ragen/env"
	_ "ragen/env/all" // every environment
)

// Upstream's Python SokobanEnv (6x6, 1 box) on this machine, from
// shared/notes/peers.md: the gym-sokoban dependency tree cannot be installed
// offline, so the peer figures are the recorded measurements, not a live run.
const (
	upstreamSokobanResetsPerS = 877.0   // median of 880 / 873
	upstreamSokobanStepsPerS  = 11300.0 // median of 11.7k / 10.9k
)

// envCase is one tag measured by the env comparison.
type envCase struct {
	tag     string
	actions []string // cycled; for discrete envs, names of ActionLookup
}

var envCases = []envCase{
	{"SimpleSokoban", nil}, {"FrozenLake", nil}, {"Bandit", nil}, {"game_2048", nil}, {"rubikscube", nil},
	{"SimpleSudoku", []string{"place 1 at row 1 col 1", "place 2 at row 1 col 2"}},
	{"MetamathQA", []string{"42"}},
}

func init() {
	Register(Comparison{Name: "environments (single goroutine)", Run: runEnvs})
}

// rate runs f until d has passed and returns calls per second.
func rate(d time.Duration, f func(i int) error) (float64, error) {
	start := time.Now()
	n := 0
	for time.Since(start) < d {
		for range 64 {
			if err := f(n); err != nil {
				return 0, err
			}
			n++
		}
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

func runEnvs(cfg RunConfig, w io.Writer) error {
	tags, err := env.DefaultTags()
	if err != nil {
		return err
	}
	ctx := context.Background()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "tag\tresets/s\tstep+render/s\tvs upstream Python (resets, steps)\t\n")
	names := make([]string, 0, len(envCases))
	byName := map[string]envCase{}
	for _, c := range envCases {
		if _, ok := tags[c.tag]; ok {
			names = append(names, c.tag)
			byName[c.tag] = c
		}
	}
	sort.Strings(names)
	for _, tag := range names {
		c := byName[tag]
		e, err := tags[tag].Build()
		if err != nil {
			return fmt.Errorf("%s: %w", tag, err)
		}
		resets, err := rate(300*time.Millisecond, func(i int) error {
			_, err := e.Reset(ctx, int64(i), env.ModeTrain)
			return err
		})
		if err != nil {
			return fmt.Errorf("%s: reset: %w", tag, err)
		}
		if _, err := e.Reset(ctx, 0, env.ModeTrain); err != nil {
			return err
		}
		acts := c.actions
		ids := []int{0}
		if al, ok := e.(env.ActionLookup); ok && len(acts) == 0 {
			ids = ids[:0]
			for id, name := range al.ActionLookup() {
				ids = append(ids, id)
				acts = append(acts, name)
			}
		}
		if len(acts) == 0 {
			acts = []string{"42"}
		}
		steps, err := rate(300*time.Millisecond, func(i int) error {
			k := i % len(acts)
			a := env.Action{Text: acts[k]}
			if k < len(ids) {
				a.ID = ids[k]
			}
			r, err := e.Step(ctx, a)
			if err != nil {
				return err
			}
			_ = e.Render()
			if r.Done {
				_, err = e.Reset(ctx, int64(i), env.ModeTrain)
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("%s: step: %w", tag, err)
		}
		vs := ""
		if tag == "SimpleSokoban" {
			vs = fmt.Sprintf("%.0fx, %.0fx", resets/upstreamSokobanResetsPerS, steps/upstreamSokobanStepsPerS)
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%s\t\n", tag, resets, steps, vs)
		_ = e.Close()
	}
	return tw.Flush()
}
