package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ragen/dash"
	"ragen/dash/webdriver"
	"ragen/env"
	"ragen/filter"
	"ragen/ragen"
)

// trainTinyRun writes a real run folder: two GRPO steps of a one-layer
// model on the demo bandit (4 groups of 4), collapse metrics on, the
// filter keeping the top half of the groups.
func trainTinyRun(t *testing.T, dir string) {
	t.Helper()
	args := []string{"train", "--config-name", "demo", "trainer.default_local_dir=" + dir,
		"trainer.total_training_steps=2", "trainer.test_freq=2", "trainer.logger=[jsonl]",
		"es_manager.train.env_groups=4", "es_manager.train.group_size=4", "es_manager.train.env_configs.n_groups=[4]",
		"es_manager.val.env_groups=8", "es_manager.val.env_configs.n_groups=[8]",
		"ppo_mini_batch_size=8", "micro_batch_size_per_gpu=8",
		"collapse_detection.first_turn_enabled=True", "collapse_detection.compute_freq=1",
		"actor_rollout_ref.rollout.rollout_filter_strategy=top_k", "actor_rollout_ref.rollout.rollout_filter_value=0.5",
		"demo.model.hidden_size=32", "demo.model.intermediate_size=64", "demo.model.num_hidden_layers=1",
		"demo.model.num_attention_heads=2", "demo.model.num_key_value_heads=1",
		"actor_rollout_ref.rollout.response_length=24"}
	if err := run(context.Background(), args); err != nil {
		t.Fatalf("tiny training run: %v", err)
	}
}

func TestDashArgs(t *testing.T) {
	d, err := parseDashArgs([]string{"runs/a", "--addr", "127.0.0.1:0", "runs/b", "seed.val=3"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(d.runs, ",") != "runs/a,runs/b" || d.cfgArgs[len(d.cfgArgs)-1] != "seed.val=3" || !d.explicitCfg {
		t.Fatalf("%+v", d)
	}
	for args, want := range map[string]string{
		"":                           "usage",
		"runs/a --addr 0.0.0.0:1":    "--token",
		"runs/a --bogus 1":           "unknown flag --bogus",
		"runs/a --base-url http://x": "--api-model",
	} {
		_, err := parseDashArgs(strings.Fields(args))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", args, err, want)
		}
	}
	t.Setenv("RAGEN_DASH_TOKEN", "tok")
	if _, err := parseDashArgs([]string{"runs/a", "--addr", "0.0.0.0:1"}); err != nil {
		t.Fatalf("token from the environment: %v", err)
	}
}

// A run folder whose path holds "=" (a sweep's runs/lr=1e-5) is a run
// folder when it exists, not a config override; a "=" argument that is no
// folder is still an override.
func TestDashArgsRunFolderWithEquals(t *testing.T) {
	run := filepath.Join(t.TempDir(), "lr=1e-5")
	if err := os.Mkdir(run, 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := parseDashArgs([]string{run, "seed.val=3", "--addr", "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.runs) != 1 || d.runs[0] != run {
		t.Fatalf("runs %q, want [%s]", d.runs, run)
	}
	if last := d.cfgArgs[len(d.cfgArgs)-1]; last != "seed.val=3" {
		t.Fatalf("config args %q", d.cfgArgs)
	}
}

// TestDashBrowser trains a tiny run, serves it and checks every page in
// headless Chromium: charts and trajectories render, the filter's kept and
// dropped groups show, live polling picks up a new step, the trained model
// plays an episode streamed into the page, and no page logs a console
// error. Screenshots go to the test's temp dir (and to $RAGEN_DASH_SHOTS
// when set; $RAGEN_DASH_RUN serves an existing run instead of training).
func TestDashBrowser(t *testing.T) {
	if _, _, err := webdriver.Find(); err != nil {
		t.Skipf("browser test needs Chromium: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	tmp := t.TempDir()
	runDir, own := os.Getenv("RAGEN_DASH_RUN"), false
	if runDir == "" {
		runDir, own = filepath.Join(tmp, "tiny"), true
		trainTinyRun(t, runDir)
	}
	dirs := []string{runDir}
	if own {
		// a sweep folder as ragen train -m writes it: one run per job
		// number, summary.md beside them
		sweep := filepath.Join(tmp, "sweep")
		for _, job := range []string{"0", "1"} {
			os.MkdirAll(filepath.Join(sweep, job), 0o755)
			copyFile(t, filepath.Join(runDir, "metrics.jsonl"), filepath.Join(sweep, job, "metrics.jsonl"))
		}
		os.WriteFile(filepath.Join(sweep, "summary.md"), []byte("| job | lr |\n|---|---|\n| 0 | 1e-4 |\n| 1 | 1e-5 |\n"), 0o644)
		dirs = append(dirs, sweep)
	}
	d, err := parseDashArgs(append(dirs, "--addr", "127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	opt, err := dashOptions(d)
	if err != nil {
		t.Fatal(err)
	}
	opt.PollInterval = 300 * time.Millisecond
	srv, err := dash.New(opt)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv.Handler("127.0.0.1:0")}
	go hs.Serve(ln)
	defer hs.Close()
	base := "http://" + ln.Addr().String()

	wd, err := webdriver.Start(ctx, filepath.Join(tmp, "profile"), 1280, 860)
	if err != nil {
		t.Fatal(err)
	}
	defer wd.Close()
	shots := os.Getenv("RAGEN_DASH_SHOTS")
	page := func(name, path string, check func() error) {
		t.Helper()
		if err := wd.Navigate(ctx, base+path); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := check(); err != nil {
			// kept after the test: the temp dir is removed
			shot := filepath.Join(os.TempDir(), "ragen-dash-"+name+"-failed.png")
			wd.Screenshot(context.Background(), shot)
			t.Fatalf("%s page: %v (screenshot: %s)", name, err, shot)
		}
		var bad bool
		if err := wd.Eval(ctx, `return document.body.textContent.includes('[object ')`, &bad); err != nil || bad {
			t.Errorf("%s page: a value was rendered as [object …] (%v)", name, err)
		}
		errs, err := wd.ConsoleErrors(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(errs) > 0 {
			t.Errorf("%s page: console errors: %v", name, errs)
		}
		png := filepath.Join(tmp, name+".png")
		if err := wd.Screenshot(ctx, png); err != nil {
			t.Fatal(err)
		}
		if shots != "" {
			copyFile(t, png, filepath.Join(shots, "dash-"+name+".png"))
		}
	}
	wait := func(what, js string) error {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return wd.WaitFor(wctx, what, js)
	}

	// runs: charts of the default metrics, a long key list, live updates
	page("runs", "/runs", func() error {
		if err := wait("charts", `return document.querySelectorAll('#charts .chart canvas').length >= 2`); err != nil {
			return err
		}
		if n, _ := wd.Count(ctx, "#keylist input"); n < 20 {
			return fmt.Errorf("metric picker lists %d keys, want the run's ~100", n)
		}
		var title string
		wd.Eval(ctx, `return [...document.querySelectorAll('#charts .chart')].map(c => c.dataset.title).join(',')`, &title)
		if !strings.Contains(title, "val-env/DemoBandit/success") {
			return fmt.Errorf("charts %q lack val-env/DemoBandit/success", title)
		}
		// hover: the legend shows the value under the cursor
		var legend string
		if err := wd.Eval(ctx, `const u = document.querySelector('#charts .chart')._uplot; u.setCursor({left: u.bbox.width / devicePixelRatio - 2, top: 10});
			return [...document.querySelectorAll('#charts .chart')[0].querySelectorAll('.u-series .u-value')].map(e => e.textContent).join('|')`, &legend); err != nil {
			return err
		}
		if !strings.ContainsAny(legend, "0123456789") {
			return fmt.Errorf("hover legend %q shows no value", legend)
		}
		// zoom: a selected x range narrows the scale
		// zoom: selecting the first half of the x range narrows the scale
		// (uPlot applies it on the next tick)
		if err := wd.Eval(ctx, `const u = document.querySelector('#charts .chart')._uplot; const x = u.data[0];
			window.__zoomTo = x[0] + (x[x.length-1] - x[0]) / 2; u.setScale('x', {min: x[0], max: window.__zoomTo}); return true`, nil); err != nil {
			return err
		}
		if err := wait("zoom", `const u = document.querySelector('#charts .chart')._uplot; return u.scales.x.max === window.__zoomTo && u.scales.x.max < u.data[0][u.data[0].length-1]`); err != nil {
			return err
		}
		if own {
			if err := wait("sweep table", `return document.querySelectorAll('table.sweep tr').length === 3 && document.body.textContent.includes('summary.md')`); err != nil {
				return err
			}
			if n, _ := wd.Count(ctx, "input[data-run]"); n != 3 {
				return fmt.Errorf("%d runs to pick, want the run and the sweep's two", n)
			}
			// a second run overlays its curves on the same charts
			if err := wd.Click(ctx, `input[data-run="r1/0"]`); err != nil {
				return err
			}
			if err := wait("two runs on one chart", `const c = document.querySelector('#charts .chart'); return c && c._uplot.series.length === 3`); err != nil {
				return err
			}
		}
		// smoothing redraws
		if err := wd.Eval(ctx, `const s = document.getElementById('smooth'); s.value = 0.6; s.dispatchEvent(new Event('input')); return true`, nil); err != nil {
			return err
		}
		if err := wait("smoothing in the URL", `return location.search.includes('smooth=0.6')`); err != nil {
			return err
		}
		if !own {
			return nil
		}
		// live: a step the trainer appends appears without a reload
		fh, err := os.OpenFile(filepath.Join(runDir, "metrics.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		fmt.Fprintln(fh, `{"step":99,"data":{"val-env/DemoBandit/success":0.5}}`)
		fh.Close()
		return wait("live step 99", `return [...document.querySelectorAll('#charts .chart')].some(c => c._uplot.data[0].includes(99))`)
	})

	// trajectories: the validation rollout, turn by turn; filters apply
	page("trajectories", "/trajectories", func() error {
		if err := wait("trajectories", `return document.querySelectorAll('#traj-list details.traj').length > 0`); err != nil {
			return err
		}
		txt, _ := wd.Text(ctx, "#traj-list details.traj .turn pre.state")
		if !strings.Contains(txt, "bandit") {
			return fmt.Errorf("first state %q is not the bandit prompt", txt)
		}
		count, _ := wd.Text(ctx, "#traj-count")
		if !strings.Contains(count, "trajectories") {
			return fmt.Errorf("count %q", count)
		}
		var files int
		wd.Eval(ctx, `return document.querySelectorAll('#traj-file option').length`, &files)
		if own && files != 4 { // val 0, train 1, train 2, val 2
			return fmt.Errorf("%d rollout files listed, want 4", files)
		}
		// success=yes, then format errors only: the list follows the filter
		if err := wd.Eval(ctx, `const s = document.getElementById('f-format'); s.value = 'yes'; s.dispatchEvent(new Event('change')); return true`, nil); err != nil {
			return err
		}
		if err := wait("format-error filter", `return location.search.includes('format_error=yes') && [...document.querySelectorAll('#traj-list details.traj')].every(d => d.querySelector('.badge.warn'))`); err != nil {
			return err
		}
		// back to all, on a training step
		if err := wd.Eval(ctx, `const s = document.getElementById('f-format'); s.value = 'any'; s.dispatchEvent(new Event('change'));
			const f = document.getElementById('traj-file'); f.value = [...f.options].map(o => o.value).filter(v => v.startsWith('train_')).pop(); f.dispatchEvent(new Event('change')); return true`, nil); err != nil {
			return err
		}
		return wait("a training step's trajectories", `return location.search.includes('file=train_') && !location.search.includes('format_error') && document.querySelectorAll('#traj-list details.traj').length > 0`)
	})

	// RAGEN-2: the filter's groups with reward std, kept and dropped
	page("ragen2", "/ragen2", func() error {
		if err := wait("groups table", `return document.querySelectorAll('#r2-table tr.kept').length > 0`); err != nil {
			return err
		}
		kept, _ := wd.Count(ctx, "#r2-table tr.kept")
		dropped, _ := wd.Count(ctx, "#r2-table tr.dropped")
		if own && (kept != 2 || dropped != 2) {
			return fmt.Errorf("top_k 0.5 of 4 groups: %d kept, %d dropped, want 2 and 2", kept, dropped)
		}
		if n, _ := wd.Count(ctx, "#r2-charts .chart"); n != 5 {
			return fmt.Errorf("%d RAGEN-2 charts, want 5", n)
		}
		if n, _ := wd.Count(ctx, "#r2-charts .chart canvas"); n < 2 {
			return fmt.Errorf("success and filter charts should draw (%d canvases)", n)
		}
		return nil
	})

	// play: the run's exported model plays DemoBandit, streamed
	page("play", "/play?tag=DemoBandit&policy=model:0&seed=5", func() error {
		if err := wait("play form", `return document.querySelectorAll('#play-policy option').length >= 3`); err != nil {
			return err
		}
		var pol string
		wd.Eval(ctx, `return document.getElementById('play-policy').value`, &pol)
		if pol != "model:0" {
			return fmt.Errorf("policy %q, want the run's model", pol)
		}
		if err := wd.Click(ctx, "#play-start"); err != nil {
			return err
		}
		if err := wait("initial state", `return !document.getElementById('play-step').disabled && document.querySelector('#play-log pre.state') !== null`); err != nil {
			return err
		}
		if err := wd.Click(ctx, "#play-step"); err != nil {
			return err
		}
		if err := wait("episode end", `return document.getElementById('play-done') !== null`); err != nil {
			return err
		}
		stream, _ := wd.Text(ctx, "#stream-0")
		if strings.TrimSpace(stream) == "" {
			return fmt.Errorf("no streamed text")
		}
		// Run, then a new episode: it plays to the end without Step
		if err := wd.Click(ctx, "#play-auto"); err != nil {
			return err
		}
		if err := wd.Eval(ctx, `document.getElementById('play-seed').value = 6; return true`, nil); err != nil {
			return err
		}
		if err := wd.Click(ctx, "#play-start"); err != nil {
			return err
		}
		return wait("an auto-run episode", `return document.getElementById('play-auto').textContent === 'Pause' && document.getElementById('play-done') !== null && document.querySelector('#stream-0') !== null`)
	})
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	out.Close()
}

// TestRolloutExport: training rollouts are written under the step the
// trainer is on, validation under the finished step, and the filter's
// decision names each group's rewards, std and fate.
func TestRolloutExport(t *testing.T) {
	dir := t.TempDir()
	step := 0
	x := &rolloutExport{dir: dir, fc: filter.Config{Strategy: "top_k", Value: 0.5, FilterType: "largest"}, nextFn: func() int { return step + 1 }}
	batch := &ragen.Batch{Episodes: []*ragen.EnvOutput{{EnvID: 0, GroupID: 0, Tag: "Bandit",
		History: []ragen.HistoryEntry{{State: "pick", Acted: true, LLMRawResponse: "<answer>A</answer>"}, {State: "A: 1 points"}},
		Metrics: map[string]float64{"Bandit/success": 1}}}}
	roll := x.wrap(func(ctx context.Context, mode env.Mode, opt ragen.RolloutOptions) (*ragen.Batch, error) {
		return batch, nil
	})
	for _, m := range []env.Mode{env.ModeVal, env.ModeTrain} { // validation before training, then step 1
		if _, err := roll(context.Background(), m, ragen.RolloutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	step = 1
	roll(context.Background(), env.ModeVal, ragen.RolloutOptions{}) // validation after step 1
	for _, f := range []string{"val_step_0.jsonl", "train_step_1.jsonl", "val_step_1.jsonl"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		rec, err := ragen.ParseTrajectoryRecord(b)
		if err != nil || !rec.Metadata.Success || len(rec.Messages) != 3 {
			t.Fatalf("%s: %+v %v", f, rec, err)
		}
	}
	nan := math.NaN()
	if err := x.onFilter(2, filter.Result{GroupIDs: []int{4, 5, 6}, RewardMatrix: [][]float64{{1, 0}, {0, 0}, {1, nan}},
		GroupRewardStd: []float64{0.7, 0, nan}, SelectedGroups: []int{0}}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "filter_step_2.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dash.FilterStep
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	g := d.Groups
	if d.Step != 2 || d.Metric != "reward_variance" || d.Strategy != "top_k" || len(g) != 3 ||
		g[0].GroupID != 4 || !g[0].Kept || g[1].Kept || g[2].Kept || *g[0].RewardStd != 0.7 || g[2].RewardStd != nil || len(g[2].Rewards) != 1 {
		t.Fatalf("decision %s", b)
	}

	tr, _, err := loadTree(nil, "base")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := rolloutDataDir(tr, "out"); got != filepath.Join("out", "rollouts") {
		t.Fatalf("default: %q", got)
	}
	for v, want := range map[string]string{"/data/r": "/data/r", "none": ""} {
		tr, _, _ := loadTree([]string{"trainer.rollout_data_dir=" + v}, "base")
		if got, _ := rolloutDataDir(tr, "out"); got != want {
			t.Fatalf("%s: %q", v, got)
		}
	}
}
