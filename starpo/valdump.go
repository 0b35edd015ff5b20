package starpo

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"ragen/env"
	"ragen/ragen"
)

// ValidationDump is one line of trainer.validation_data_dir/<step>.jsonl:
// veRL's _dump_generations fields (input, output, score, step) plus the
// episode's identity and success.
type ValidationDump struct {
	Input   string  `json:"input"`  // the environment's states (user turns), "\n"-joined
	Output  string  `json:"output"` // the model's responses (assistant turns), "\n"-joined
	Score   float64 `json:"score"`  // Σ rm_scores of the episode
	Step    int     `json:"step"`   // global step the validation ran at (0: before training)
	Tag     string  `json:"tag"`
	EnvID   int     `json:"env_id"`
	GroupID int     `json:"group_id"`
	Success bool    `json:"success"`
}

// DumpValidation wraps a RolloutFunc so that every validation batch is
// appended to dir/<step>.jsonl (upstream's trainer.validation_data_dir), the
// step read from step() when the batch arrives; limit > 0 keeps only the
// first limit episodes of each validation (upstream's
// generations_to_log_to_wandb.val). Training batches pass through
// untouched. A write failure fails the rollout.
func DumpValidation(rollout RolloutFunc, dir string, limit int, step func() int) RolloutFunc {
	var mu sync.Mutex
	return func(ctx context.Context, mode env.Mode, opt ragen.RolloutOptions) (*ragen.Batch, error) {
		b, err := rollout(ctx, mode, opt)
		if err != nil || b == nil || mode != env.ModeVal {
			return b, err
		}
		mu.Lock()
		defer mu.Unlock()
		if err := appendValidationDump(b, dir, limit, step()); err != nil {
			return nil, fmt.Errorf("starpo: validation_data_dir: %w", err)
		}
		return b, nil
	}
}

// ValidationDumps builds the dump lines of a validation batch.
func ValidationDumps(b *ragen.Batch, step int) []ValidationDump {
	recs := ragen.TrajectoryRecords(b, ragen.ExportOptions{})
	out := make([]ValidationDump, len(recs))
	for i, r := range recs {
		var in, resp []string
		for _, m := range r.Messages {
			if m.Role == "assistant" {
				resp = append(resp, m.Content)
			} else {
				in = append(in, m.Content)
			}
		}
		tag := ""
		if i < len(b.Episodes) && b.Episodes[i] != nil {
			tag = b.Episodes[i].Tag
		}
		out[i] = ValidationDump{Input: strings.Join(in, "\n"), Output: strings.Join(resp, "\n"), Score: r.Metadata.TotalReward,
			Step: step, Tag: tag, EnvID: r.Metadata.EnvID, GroupID: r.Metadata.GroupID, Success: r.Metadata.Success}
	}
	return out
}

func appendValidationDump(b *ragen.Batch, dir string, limit, step int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("%d.jsonl", step)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	dumps := ValidationDumps(b, step)
	if limit > 0 && len(dumps) > limit {
		dumps = dumps[:limit]
	}
	for _, d := range dumps {
		if err := enc.Encode(d); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// GroupRV is one line of the group reward-variance table (upstream's
// trainer.log_group_rv_table, a W&B table there): one env group of one
// training step, before the rollout filter.
type GroupRV struct {
	Step       int     `json:"step"`
	GroupID    int     `json:"group_id"`
	Tag        string  `json:"tag"`
	N          int     `json:"n"`           // episodes in the group
	RewardMean float64 `json:"reward_mean"` // of the episode scores
	RewardStd  float64 `json:"reward_std"`  // population std, the filter's reward_variance score
}

// GroupRVs computes the table rows of a training batch.
func GroupRVs(b *ragen.Batch, step int) []GroupRV {
	type acc struct {
		tag        string
		n          int
		sum, sumSq float64
	}
	groups := map[int]*acc{}
	var order []int
	for i, o := range b.Episodes {
		if o == nil || i >= len(b.EpisodeScores) {
			continue
		}
		g := groups[o.GroupID]
		if g == nil {
			g = &acc{tag: o.Tag}
			groups[o.GroupID] = g
			order = append(order, o.GroupID)
		}
		x := float64(b.EpisodeScores[i])
		g.n++
		g.sum += x
		g.sumSq += x * x
	}
	out := make([]GroupRV, 0, len(order))
	for _, id := range order {
		g := groups[id]
		mean := g.sum / float64(g.n)
		v := max(g.sumSq/float64(g.n)-mean*mean, 0)
		out = append(out, GroupRV{Step: step, GroupID: id, Tag: g.tag, N: g.n, RewardMean: mean, RewardStd: math.Sqrt(v)})
	}
	return out
}

// LogGroupRV wraps a RolloutFunc so that every training batch's GroupRVs
// are appended to path (JSONL), the step being step() at the time of the
// rollout (the step it trains).
func LogGroupRV(rollout RolloutFunc, path string, step func() int) RolloutFunc {
	var mu sync.Mutex
	return func(ctx context.Context, mode env.Mode, opt ragen.RolloutOptions) (*ragen.Batch, error) {
		b, err := rollout(ctx, mode, opt)
		if err != nil || b == nil || mode != env.ModeTrain {
			return b, err
		}
		mu.Lock()
		defer mu.Unlock()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, err
		}
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("starpo: log_group_rv_table: %w", err)
		}
		w := bufio.NewWriter(f)
		enc := json.NewEncoder(w)
		for _, r := range GroupRVs(b, step()) {
			if err := enc.Encode(r); err != nil {
				f.Close()
				return nil, err
			}
		}
		if err := errors.Join(w.Flush(), f.Close()); err != nil {
			return nil, fmt.Errorf("starpo: log_group_rv_table: %w", err)
		}
		return b, nil
	}
}
