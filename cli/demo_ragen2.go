package cli

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"ragen/config"
	"ragen/track"
)

// `ragen demo ragen2`: RAGEN-2's two contributions on a run the CPU can
// make (config/demo_ragen2.yaml). A tiny model is warmed up on bandit
// demonstrations whose reasoning names the arms of the prompt, then one
// sweep trains two StarPO arms from that same model and the same seeds (no
// filter; top_p 0.9 on reward variance) with the collapse diagnostics on,
// and one figure puts the two arms side by side.

// ragen2FilterKey is the swept key; ragen2Arms its values and their names.
const ragen2FilterKey = "actor_rollout_ref.rollout.rollout_filter_value"

var ragen2Arms = []struct{ value, name string }{
	{"1.0", "no filter"},
	{"0.9", "top_p 0.9"},
}

// demoRagen2Args turns the flags (--out DIR, --quick) into overrides of
// config/demo_ragen2.yaml followed by the user's own, and returns the run
// folder given with --out ("" when absent).
func demoRagen2Args(args []string) (rest []string, out string, err error) {
	quick, out, rest, err := demoFlags(args)
	if err != nil {
		return nil, "", err
	}
	for _, a := range rest {
		k, _, _ := strings.Cut(strings.TrimLeft(a, "+~"), "=")
		if k == ragen2FilterKey {
			return nil, "", fmt.Errorf("ragen demo ragen2: %s is the demo's sweep (1.0 and 0.9); run `ragen train -m --config-name demo_ragen2 %s=...` for other values", k, k)
		}
		if strings.HasPrefix(a, "-") {
			return nil, "", fmt.Errorf("ragen demo ragen2: unknown flag %s (valid: --out DIR, --quick)", a)
		}
	}
	if quick {
		// a short smoke run; the user's overrides still win
		rest = append([]string{"sft.steps=40", "trainer.total_training_steps=4", "trainer.test_freq=4",
			"collapse_detection.num_samples=16", "es_manager.val.env_groups=16", "es_manager.val.env_configs.n_groups=[16]"}, rest...)
	}
	return rest, out, nil
}

// cmdDemoRagen2 runs the RAGEN-2 demo: SFT once, then the two-arm sweep,
// then the figure and a table of the numbers.
func cmdDemoRagen2(ctx context.Context, args []string) error {
	rest, out, err := demoRagen2Args(args)
	if err != nil {
		return err
	}
	if out != "" {
		rest = append(rest, "trainer.default_local_dir="+out)
	}
	t, _, err := loadTree(append([]string{"--config-name", "demo_ragen2"}, rest...), "demo_ragen2")
	if err != nil {
		return err
	}
	if out, err = t.String("trainer.default_local_dir"); err != nil || out == "" {
		return fmt.Errorf("ragen demo ragen2: trainer.default_local_dir must name the run folder (%v)", err)
	}
	// every job's config is checked before the slow part starts
	if _, _, _, _, err := libraryConfigs(t); err != nil {
		return err
	}
	start := time.Now()
	initTorch(t)
	tok, m, err := demoModel(ctx, t, "ragen demo ragen2")
	if err != nil {
		return err
	}
	fmt.Println("stage 1: supervised warm-up on demonstrations that pick an arm at random and reason \"<arm> or <arm>? <pick>\"")
	_, err = runSFT(ctx, t, m, tok)
	sftDir := filepath.Join(out, "sft")
	if err == nil {
		err = saveModel(sftDir, m, tok)
	}
	m.Close()
	if err != nil {
		return err
	}
	sftTime := time.Since(start)
	fmt.Printf("stage 2: two StarPO arms from %s, same seeds: %s (collapse diagnostics every %s steps)\n",
		sftDir, ragen2ArmList(), treeStr(t, "collapse_detection.compute_freq"))
	values := make([]string, len(ragen2Arms))
	for i, a := range ragen2Arms {
		values[i] = a.value
	}
	var user []string
	for _, a := range rest {
		if k, _, _ := strings.Cut(a, "="); k != "trainer.default_local_dir" {
			user = append(user, a)
		}
	}
	sweep := append([]string{"--config-name", "demo_ragen2"}, user...)
	sweep = append(sweep, "model_path="+sftDir, ragen2FilterKey+"="+strings.Join(values, ","), "hydra.sweep.dir="+out)
	if err := runSweep(ctx, sweep, "", 1); err != nil {
		return err
	}
	arms := make([]ragen2Run, len(ragen2Arms))
	for i, a := range ragen2Arms {
		dir := filepath.Join(out, fmt.Sprint(i))
		recs, err := track.ReadJSONL(filepath.Join(dir, "metrics.jsonl"))
		if err != nil {
			return err
		}
		arms[i] = ragen2Run{Name: a.name, Dir: dir, Records: recs}
	}
	fig, err := ragen2Figure(arms, out)
	if err != nil {
		return err
	}
	table := ragen2Table(arms)
	tablePath := filepath.Join(out, "ragen2.md")
	total := time.Since(start)
	head := fmt.Sprintf("ragen demo ragen2: SFT %s, total %s\n\n", sftTime.Round(time.Second), total.Round(time.Second))
	if err := os.WriteFile(tablePath, []byte(head+table), 0o644); err != nil {
		return err
	}
	fmt.Printf("\n== %s ==\n\n%s\nfigure:    %s\nnumbers:   %s\nruns:      %s (ragen dash %s)\n",
		strings.TrimSpace(head), table, fig, tablePath, strings.Join([]string{arms[0].Dir, arms[1].Dir}, ", "), out)
	return nil
}

func ragen2ArmList() string {
	var s []string
	for _, a := range ragen2Arms {
		s = append(s, fmt.Sprintf("%s (%s=%s)", a.name, "rollout_filter_value", a.value))
	}
	return strings.Join(s, " and ")
}

// treeStr is a key's value as text ("?" when unset).
func treeStr(t *config.Tree, key string) string {
	v, err := t.Get(key)
	if err != nil {
		return "?"
	}
	return fmt.Sprint(v)
}

// ragen2Run is one arm's metrics.
type ragen2Run struct {
	Name    string
	Dir     string
	Records []track.Record
}

// ragen2Charts are the figure's panels: metric patterns per panel, each
// drawn once per arm. Reward std is the mean in-group std of all groups
// (the filter's score, before filtering); entropies are the first-turn
// sample's (nats per reasoning token).
var ragen2Charts = []struct {
	name, title string
	keys        []string
}{
	{"success", "training success (share of rollouts choosing the risky arm)", []string{"train/*/success"}},
	{"reward_std", "reward std within groups (mean over all groups)", []string{"rollout/in_group_reward_std"}},
	{"kept_ratio", "filter: kept ratio of groups", []string{"rollout/filter_kept_ratio"}},
	{"mi", "MI estimate (first turn; trajectory)", []string{"collapse_first_turn_sample/mi_estimate", "collapse_trajectory_sample/mi_estimate"}},
	{"retrieval", "retrieval accuracy (first turn) and its chance level", []string{"collapse_first_turn_sample/retrieval_accuracy", "collapse_first_turn_sample/retrieval_chance_level"}},
	{"entropy", "reasoning entropy: conditional H(Z|X), marginal H(Z)", []string{"collapse_first_turn_sample/conditional_entropy_est", "collapse_first_turn_sample/reasoning_entropy_est"}},
}

// ragen2Short names a metric in a figure legend.
func ragen2Short(key string) string {
	r := strings.NewReplacer("collapse_first_turn_sample/", "first ", "collapse_trajectory_sample/", "traj ",
		"conditional_entropy_est", "H(Z|X)", "reasoning_entropy_est", "H(Z)", "retrieval_accuracy", "acc",
		"retrieval_chance_level", "chance", "mi_estimate", "MI")
	return r.Replace(key)
}

// ragen2Figure draws the arms side by side over steps: one panel per
// ragen2Charts entry, one line per arm (and metric), and returns the path
// of the grid (ragen2.png in out; the panels under out/ragen2_plots).
func ragen2Figure(arms []ragen2Run, out string) (string, error) {
	merged := map[int]map[string]float64{}
	var charts []track.Chart
	for _, c := range ragen2Charts {
		var keys []string
		for _, a := range arms {
			for _, r := range a.Records {
				for _, pat := range c.keys {
					for k, v := range r.Data {
						if ok, _ := path.Match(pat, k); !ok || math.IsNaN(v) {
							continue
						}
						name := a.Name + " · "
						if len(c.keys) > 1 {
							name += ragen2Short(k)
						} else {
							name += c.name
						}
						if merged[r.Step] == nil {
							merged[r.Step] = map[string]float64{}
						}
						merged[r.Step][name] = v
					}
				}
			}
		}
		for _, a := range arms {
			for _, pat := range c.keys {
				if len(c.keys) > 1 {
					keys = append(keys, a.Name+" · "+ragen2Short(pat))
				} else {
					keys = append(keys, a.Name+" · "+c.name)
				}
			}
		}
		charts = append(charts, track.Chart{Name: c.name, Title: c.title, Keys: keys})
	}
	var recs []track.Record
	for s, m := range merged {
		recs = append(recs, track.Record{Step: s, Data: m})
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].Step < recs[j].Step })
	dir := filepath.Join(out, "ragen2_plots")
	if _, err := track.PlotCharts(recs, charts, dir, track.PlotOptions{NoSmoothing: true, Width: 560, Height: 360}); err != nil {
		if errors.Is(err, track.ErrNoData) {
			return "", fmt.Errorf("ragen demo ragen2: the runs logged none of the figure's metrics")
		}
		return "", err
	}
	fig := filepath.Join(out, "ragen2.png")
	data, err := os.ReadFile(filepath.Join(dir, "summary.png"))
	if err != nil {
		return "", err
	}
	return fig, os.WriteFile(fig, data, 0o644)
}

// ragen2Columns are the table's columns: header, metric key.
var ragen2Columns = []struct{ head, key string }{
	{"success", "train/*/success"},
	{"val success", "val-env/*/success"},
	{"reward std", "rollout/in_group_reward_std"},
	{"kept", "rollout/filter_kept_ratio"},
	{"MI first", "collapse_first_turn_sample/mi_estimate"},
	{"MI traj", "collapse_trajectory_sample/mi_estimate"},
	{"ln N first", "collapse_first_turn_sample/mi_upper_bound"},
	{"retr. acc first", "collapse_first_turn_sample/retrieval_accuracy"},
	{"chance first", "collapse_first_turn_sample/retrieval_chance_level"},
	{"retr. acc traj", "collapse_trajectory_sample/retrieval_accuracy"},
	{"chance traj", "collapse_trajectory_sample/retrieval_chance_level"},
	{"H(Z|X)", "collapse_first_turn_sample/conditional_entropy_est"},
	{"H(Z)", "collapse_first_turn_sample/reasoning_entropy_est"},
}

// ragen2Table is a Markdown table per arm of the steps that computed the
// collapse diagnostics (or validated), the columns of ragen2Columns.
func ragen2Table(arms []ragen2Run) string {
	var b strings.Builder
	for _, a := range arms {
		fmt.Fprintf(&b, "### %s (%s)\n\n| step |", a.Name, a.Dir)
		for _, c := range ragen2Columns {
			b.WriteString(" " + c.head + " |")
		}
		b.WriteString("\n|---|")
		for range ragen2Columns {
			b.WriteString("---|")
		}
		b.WriteString("\n")
		for _, r := range a.Records {
			_, coll := patternMean(r.Data, "collapse_first_turn_sample/mi_estimate")
			_, val := patternMean(r.Data, "val-env/*/success")
			if !coll && !val {
				continue
			}
			fmt.Fprintf(&b, "| %d |", r.Step)
			for _, c := range ragen2Columns {
				if x, ok := patternMean(r.Data, c.key); ok {
					fmt.Fprintf(&b, " %.3f |", x)
				} else {
					b.WriteString(" |")
				}
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	return b.String()
}
