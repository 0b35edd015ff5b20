package cli

import (
	"fmt"
	"io"
	"strings"

	"ragen/config"
	"ragen/torch"
)

// Start-up notices: every upstream key a run carries either works or is
// named once, here, with why it has no effect (issue #16: no silently
// ignored key).

// overrideGiven reports whether the command line set key (or a map above it).
func overrideGiven(overrides []string, key string) bool {
	for _, o := range overrides {
		k, _, _ := strings.Cut(strings.TrimLeft(o, "+~"), "=")
		if k == key || strings.HasPrefix(key, k+".") {
			return true
		}
	}
	return false
}

// trainerDevice resolves upstream's trainer.device (veRL's default: cuda)
// against this build. --device and system.device win when given. A CUDA
// device asked for on the command line without CUDA here is an error; the
// config's default is a notice and CPU.
func trainerDevice(t *config.Tree, overrides []string, deviceFlag string, w io.Writer) (string, error) {
	if deviceFlag != "" || !t.Has("trainer.device") {
		return deviceFlag, nil
	}
	if t.Has("system.device") {
		if d, _ := t.String("system.device"); d != "" {
			return deviceFlag, nil
		}
	}
	dev, err := t.String("trainer.device")
	if err != nil || dev == "" {
		return deviceFlag, err
	}
	explicit := overrideGiven(overrides, "trainer.device")
	d, err := torch.ParseDevice(dev)
	if err != nil {
		return "", fmt.Errorf("trainer.device=%s: %w", dev, err)
	}
	if d == torch.CPU {
		return dev, nil
	}
	if torch.CUDAAvailable() {
		return dev, nil
	}
	if explicit {
		return "", fmt.Errorf("trainer.device=%s was asked for on the command line but there is no CUDA here (%s); use trainer.device=cpu, or a build with -tags torchpc,cuda on a GPU machine (doc/design.md)", dev, torch.BuildInfo())
	}
	fmt.Fprintf(w, "ragen: trainer.device=%s (upstream's default) but there is no CUDA here (%s): training on CPU\n", dev, torch.BuildInfo())
	return "cpu", nil
}

// featureNotices names the upstream features a config turns on that work
// differently here, or not at all, and why; and applies val_kwargs.n.
func featureNotices(t *config.Tree, w io.Writer) error {
	var lines []string
	on := func(key string) bool {
		v, err := t.Get(key)
		if err != nil || v == nil {
			return false
		}
		switch x := v.(type) {
		case bool:
			return x
		case int:
			return x != 0
		case float64:
			return x != 0
		case string:
			return x != ""
		}
		return true
	}
	if !on("trainer.gradient_analysis_mode") {
		for _, k := range []string{"trainer.gradient_analysis_env_groups", "trainer.gradient_analysis_group_size", "trainer.gradient_analysis_log_prefilter"} {
			if on(k) {
				lines = append(lines, k+": no effect without trainer.gradient_analysis_mode=True")
			}
		}
	}
	if on("trainer.log_val_generations") {
		lines = append(lines, "trainer.log_val_generations: use trainer.generations_to_log_to_wandb.val (validation generations go to <default_local_dir>/val_generations/<step>.jsonl)")
	}
	// val_kwargs.n: n responses per validation prompt = n envs per
	// validation initial state.
	if t.Has("actor_rollout_ref.rollout.val_kwargs.n") {
		n, err := t.Int("actor_rollout_ref.rollout.val_kwargs.n")
		if err != nil {
			return err
		}
		if n < 1 {
			return fmt.Errorf("actor_rollout_ref.rollout.val_kwargs.n=%d: want >= 1", n)
		}
		if n > 1 {
			gs := 1
			if t.Has("es_manager.val.group_size") {
				if gs, err = t.Int("es_manager.val.group_size"); err != nil {
					return err
				}
			}
			if err := t.Set("es_manager.val.group_size", gs*n); err != nil {
				return err
			}
			lines = append(lines, fmt.Sprintf("actor_rollout_ref.rollout.val_kwargs.n=%d: each validation initial state is rolled out %d times (es_manager.val.group_size %d -> %d)", n, n, gs, gs*n))
		}
	}
	for _, l := range lines {
		fmt.Fprintln(w, "ragen:", l)
	}
	return nil
}
