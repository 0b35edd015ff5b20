package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"ragen/config"
	"ragen/llm"
	"ragen/llm/tokenizer"
	"ragen/ragen"
	"ragen/sft"
	"ragen/track"
)

// sftConfig reads the sft section (sft.DefaultConfig for absent keys) and
// the rollout config used for demonstrations: es_manager.train with its
// sizes replaced by sft.env_groups / sft.group_size when given.
func sftConfig(t *config.Tree) (sft.Config, ragen.Config, error) {
	c := sft.DefaultConfig()
	if t.Has("sft") {
		if err := t.DecodeLoose("sft", &c); err != nil {
			return c, ragen.Config{}, err
		}
	}
	rc, err := rolloutConfig(t)
	if err != nil {
		return c, rc, err
	}
	r := &reader{t: t}
	groups, size := rc.ESManager.Train.EnvGroups, rc.ESManager.Train.GroupSize
	r.int("sft.env_groups", &groups)
	r.int("sft.group_size", &size)
	if err := r.err(); err != nil {
		return c, rc, err
	}
	if groups < 1 || size < 1 {
		return c, rc, fmt.Errorf("config: sft.env_groups=%d and sft.group_size=%d must be >= 1", groups, size)
	}
	if groups != rc.ESManager.Train.EnvGroups {
		// scale every tag's n_groups to the new total, keeping the mix
		old := rc.ESManager.Train.EnvGroups
		ng := make([]int, len(rc.ESManager.Train.EnvConfigs.NGroups))
		sum := 0
		for i, n := range rc.ESManager.Train.EnvConfigs.NGroups {
			ng[i] = max(n*groups/old, 0)
			sum += ng[i]
		}
		ng[len(ng)-1] += groups - sum
		rc.ESManager.Train.EnvConfigs.NGroups = ng
	}
	rc.ESManager.Train.EnvGroups, rc.ESManager.Train.GroupSize = groups, size
	return c, rc, c.Validate()
}

// runSFT warms model up on demonstrations with a progress bar.
func runSFT(ctx context.Context, t *config.Tree, m *llm.Model, tok tokenizer.Tokenizer) (map[string]float64, error) {
	sc, rc, err := sftConfig(t)
	if err != nil {
		return nil, err
	}
	tr, err := sft.New(sc, m, tok, rc, ragen.DefaultProvider())
	if err != nil {
		return nil, err
	}
	defer tr.Close()
	bar := track.NewProgress(os.Stdout, "SFT warm-up", track.ProgressOptions{Total: sc.Steps, Unit: "step"})
	var last map[string]float64
	err = tr.Run(ctx, func(step int, mt map[string]float64) error {
		last = mt
		bar.Set(step, track.Field{Name: "loss", Value: mt[sft.MetricLoss]}, track.Field{Name: "success", Value: mt[sft.MetricSuccess]})
		return nil
	})
	bar.Finish()
	return last, err
}

func cmdSFT(ctx context.Context, args []string) error {
	fl, rest, err := splitFlags(args, "device", "out")
	if err != nil {
		return err
	}
	t, a, err := loadTree(rest, "demo")
	if err != nil {
		return err
	}
	if a.Cfg != "" {
		fmt.Print(a.Print(t))
		return nil
	}
	m, tok, err := loadModel(t, fl["device"])
	if err != nil {
		return err
	}
	defer m.Close()
	start := time.Now()
	last, err := runSFT(ctx, t, m, tok)
	if err != nil {
		return err
	}
	out := fl["out"]
	if out == "" {
		dir := "checkpoints/sft"
		if t.Has("trainer.default_local_dir") {
			if d, _ := t.String("trainer.default_local_dir"); d != "" {
				dir = filepath.Join(d, "sft")
			}
		}
		out = dir
	}
	if err := saveModel(out, m, tok); err != nil {
		return err
	}
	fmt.Printf("SFT done in %s: loss %.4f; model written to %s\n", time.Since(start).Round(time.Second), last[sft.MetricLoss], out)
	return nil
}
