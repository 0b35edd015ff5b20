package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"ragen/config"
	"ragen/dash"
	"ragen/env"
	"ragen/filter"
	"ragen/ragen"
	"ragen/starpo"
)

// rolloutExport writes what a training run's rollouts were, for ragen dash
// and ragen view: every training and validation rollout as trajectory JSONL
// (train_step_N.jsonl, val_step_N.jsonl) and the rollout filter's per-group
// decision of every training step (filter_step_N.json), under
// trainer.rollout_data_dir (default: the run folder's rollouts/).
type rolloutExport struct {
	dir    string
	opt    ragen.ExportOptions
	fc     filter.Config
	nextFn func() int // the step the next training rollout belongs to
}

// rolloutDataDir is trainer.rollout_data_dir, or outDir/rollouts when it is
// null; "none" turns the export off ("").
func rolloutDataDir(t *config.Tree, outDir string) (string, error) {
	if !t.Has("trainer.rollout_data_dir") {
		return filepath.Join(outDir, "rollouts"), nil
	}
	v, err := t.Get("trainer.rollout_data_dir")
	if err != nil {
		return "", err
	}
	if v == nil {
		return filepath.Join(outDir, "rollouts"), nil
	}
	s, err := t.String("trainer.rollout_data_dir")
	if err != nil {
		return "", err
	}
	if s == "none" || s == "" {
		return "", nil
	}
	return s, nil
}

// wrap returns a RolloutFunc that exports each batch after rollout.
func (x *rolloutExport) wrap(f starpo.RolloutFunc) starpo.RolloutFunc {
	return func(ctx context.Context, mode env.Mode, opt ragen.RolloutOptions) (*ragen.Batch, error) {
		b, err := f(ctx, mode, opt)
		if err != nil || b == nil {
			return b, err
		}
		step, kind := x.nextFn(), "train"
		if mode == env.ModeVal {
			// validation runs after the step is done (or before training: step 0)
			step, kind = step-1, "val"
		}
		if err := x.writeBatch(filepath.Join(x.dir, fmt.Sprintf("%s_step_%d.jsonl", kind, step)), b); err != nil {
			return nil, err
		}
		return b, nil
	}
}

func (x *rolloutExport) writeBatch(path string, b *ragen.Batch) error {
	if err := os.MkdirAll(x.dir, 0o755); err != nil {
		return fmt.Errorf("rollout export: %w", err)
	}
	tmp := path + ".tmp"
	fh, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("rollout export: %w", err)
	}
	if err := ragen.WriteJSONL(fh, ragen.TrajectoryRecords(b, x.opt)); err != nil {
		fh.Close()
		return err
	}
	if err := fh.Close(); err != nil {
		return fmt.Errorf("rollout export: %w", err)
	}
	return os.Rename(tmp, path) // readers never see a half-written file
}

// onFilter is the trainer's Deps.OnFilter.
func (x *rolloutExport) onFilter(step int, res filter.Result) error {
	d := dash.FilterStep{Step: step, Strategy: x.fc.Strategy, Value: x.fc.Value, Type: x.fc.FilterType,
		Metric: x.fc.Metric, Unchanged: res.Unchanged, Groups: []dash.FilterGroup{}}
	if d.Metric == "" {
		d.Metric = "reward_variance"
	}
	sel := map[int]bool{}
	for _, g := range res.SelectedGroups {
		sel[g] = true
	}
	n := max(len(res.GroupIDs), len(res.RewardMatrix))
	for g := 0; g < n; g++ {
		fg := dash.FilterGroup{GroupID: g, Kept: res.Unchanged || sel[g], Rewards: []float64{}}
		if g < len(res.GroupIDs) {
			fg.GroupID = res.GroupIDs[g]
		}
		if g < len(res.RewardMatrix) {
			for _, v := range res.RewardMatrix[g] {
				if !math.IsNaN(v) && !math.IsInf(v, 0) {
					fg.Rewards = append(fg.Rewards, v)
				}
			}
		}
		if g < len(res.GroupRewardStd) && !math.IsNaN(res.GroupRewardStd[g]) && !math.IsInf(res.GroupRewardStd[g], 0) {
			s := res.GroupRewardStd[g]
			fg.RewardStd = &s
		}
		d.Groups = append(d.Groups, fg)
	}
	if err := os.MkdirAll(x.dir, 0o755); err != nil {
		return err
	}
	data, err := json.Marshal(d)
	if err != nil {
		return err
	}
	path := filepath.Join(x.dir, fmt.Sprintf("filter_step_%d.json", step))
	if err := os.WriteFile(path+".tmp", append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}
