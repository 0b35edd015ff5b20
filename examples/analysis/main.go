// Analysis: RAGEN-2's two diagnostics on rollouts saved as JSONL (from
// `ragen eval`, `ragen train`'s rollouts/ folder, or ragen.WriteJSONL).
//
//   - Filter: trajectories are grouped by their group id (one initial state,
//     several samples); each group's reward std is its signal. The
//     reward-variance filter (top_p by default, upstream's setting) keeps the
//     groups that carry most of it; the table shows every group, kept or not.
//
//   - Collapse: the first-turn reasoning z_i (the <think> text) of every
//     trajectory is scored under every prompt x_j by a model; the mutual
//     information estimate and the retrieval accuracy say whether the
//     reasoning still depends on the input (high) or has become a template
//     (near the chance level).
//
//     go run . -in rollouts.jsonl [-model DIR] [-filter-value 0.9]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"ragen/collapse"
	"ragen/filter"
	"ragen/llm"
	"ragen/llm/tokenizer"
	"ragen/ragen"
)

func main() {
	in := flag.String("in", "", "trajectories (JSONL)")
	dir := flag.String("model", "", "model folder that scores the reasoning (default: a seeded tiny model)")
	value := flag.Float64("filter-value", 0.9, "top_p share of the reward-std mass to keep")
	flag.Parse()
	if err := run(context.Background(), *in, *dir, *value, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "analysis:", err)
		os.Exit(1)
	}
}

// ReadTrajectories reads a JSONL file of trajectory records.
func ReadTrajectories(path string) ([]ragen.TrajectoryRecord, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var recs []ragen.TrajectoryRecord
	err = ragen.ReadTrajectories(f, path, func(_ int, r ragen.TrajectoryRecord) error {
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%s: no trajectories", path)
	}
	return recs, nil
}

// FilterReport runs the reward-variance filter over the records' groups.
func FilterReport(recs []ragen.TrajectoryRecord, value float64, w io.Writer) (filter.Result, error) {
	b := filter.Batch{}
	groups := map[int]bool{}
	for _, r := range recs {
		b.Rewards = append(b.Rewards, r.Metadata.TotalReward)
		b.GroupIDs = append(b.GroupIDs, r.Metadata.GroupID)
		groups[r.Metadata.GroupID] = true
	}
	cfg := filter.DefaultConfig()
	cfg.Value = value
	cfg.NumGroups, cfg.GroupSize = len(groups), len(recs)/max(len(groups), 1)
	if cfg.NumGroups*cfg.GroupSize != len(recs) {
		return filter.Result{}, fmt.Errorf("%d trajectories do not split into %d equal groups", len(recs), len(groups))
	}
	res, err := filter.Apply(b, cfg)
	if err != nil && !errors.Is(err, filter.ErrNoneKept) {
		return res, err
	}
	fmt.Fprintf(w, "filter %s %.2f (metric %s): %d of %d groups kept\n", cfg.Strategy, cfg.Value, cfg.Metric, len(res.SelectedGroups), cfg.NumGroups)
	rows := res.GroupRVRows(0)
	sort.Slice(rows, func(i, j int) bool { return rows[i].RewardStd > rows[j].RewardStd })
	for _, g := range rows {
		mark := "dropped"
		if g.Selected {
			mark = "kept"
		}
		fmt.Fprintf(w, "  group %4d  reward std %.4f  %s\n", g.GroupID, g.RewardStd, mark)
	}
	return res, nil
}

// firstTurn returns the first user message (the state the agent saw) and
// the reasoning of the first assistant answer.
func firstTurn(r ragen.TrajectoryRecord) (prompt, reasoning string) {
	for i, m := range r.Messages {
		if m.Role == "assistant" {
			if i > 0 {
				prompt = r.Messages[i-1].Content
			}
			think := m.Content
			if _, after, ok := strings.Cut(think, "<think>"); ok {
				think = after
			}
			think, _, _ = strings.Cut(think, "</think>")
			return prompt, strings.TrimSpace(think)
		}
	}
	return prompt, ""
}

// CollapseReport scores every first-turn reasoning under every prompt.
func CollapseReport(ctx context.Context, recs []ragen.TrajectoryRecord, m *llm.Model, tok tokenizer.Tokenizer, w io.Writer) (map[string]float64, error) {
	var prompts, reasoning [][]int
	for _, r := range recs {
		p, z := firstTurn(r)
		prompts = append(prompts, tok.Encode(p))
		reasoning = append(reasoning, tok.Encode(z))
	}
	L, S, err := collapse.CrossScores(ctx, llm.NewScorer(m, 64), prompts, reasoning, 64, 1)
	if err != nil {
		return nil, err
	}
	col := make([]int, len(recs))
	for i := range col {
		col[i] = i
	}
	cfg := collapse.DefaultConfig()
	met, _, err := collapse.MatrixMetrics(collapse.Matrix{L: L, S: S, Col: col, Sig: collapse.Signatures(prompts)}, cfg.StdEps, cfg.EMADecay, collapse.EMA{})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "collapse (first turn, %d trajectories, %d distinct prompts):\n", len(recs), distinct(collapse.Signatures(prompts)))
	keys := make([]string, 0, len(met))
	for k := range met {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "  %-36s %.4f\n", k, met[k])
	}
	return met, nil
}

func distinct(sig []int) int {
	seen := map[int]bool{}
	for _, s := range sig {
		seen[s] = true
	}
	return len(seen)
}

func run(ctx context.Context, in, dir string, value float64, w io.Writer) error {
	if in == "" {
		return errors.New("-in FILE.jsonl is required")
	}
	recs, err := ReadTrajectories(in)
	if err != nil {
		return err
	}
	if _, err := FilterReport(recs, value, w); err != nil {
		return err
	}
	var m *llm.Model
	var tok tokenizer.Tokenizer
	if dir == "" {
		tok = tokenizer.NewByte()
		m, err = llm.New(llm.TinyConfig(tok.VocabSize()), llm.Options{Seed: 5})
	} else {
		if tok, err = llm.LoadTokenizer(dir); err == nil {
			m, err = llm.Load(dir, llm.Options{})
		}
	}
	if err != nil {
		return err
	}
	defer m.Close()
	_, err = CollapseReport(ctx, recs, m, tok, w)
	return err
}
