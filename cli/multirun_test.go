package cli

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ragen/llm"
	"ragen/starpo"
	"ragen/torch"
	"ragen/track"
)

func TestSplitSweepValue(t *testing.T) {
	for in, want := range map[string][]string{
		"1,2,3":               {"1", "2", "3"},
		"[1,2],[3]":           {"[1,2]", "[3]"},
		"'a,b',c":             {"'a,b'", "c"},
		"${oc.env:X,y},2":     {"${oc.env:X,y}", "2"},
		"range(1,4)":          {"1", "2", "3"},
		"range(0,1,0.25)":     {"0", "0.25", "0.5", "0.75"},
		"choice(top_p,min_p)": {"top_p", "min_p"},
		"single":              {"single"},
	} {
		got, err := splitSweepValue(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, bad := range []string{"1,,2", "[1,2", "range(1)", "range(1,2,0)", "range(3,1)", "'a,b"} {
		_, err := splitSweepValue(bad)
		require.Error(t, err, bad)
	}
}

func TestPlanSweepCartesianProduct(t *testing.T) {
	p, err := planSweep([]string{"--config-name", "demo", "a.b=1,2", "c=x", "+d=p,q,r", "hydra.sweep.dir=/tmp/sw", "hydra.job.chdir=True"}, time.Unix(0, 0))
	require.NoError(t, err)
	require.Equal(t, []string{"--config-name", "demo"}, p.Flags)
	require.Equal(t, []string{"a.b", "d"}, p.Keys)
	require.Equal(t, "/tmp/sw", p.Dir)
	require.Len(t, p.Jobs, 6)
	// the first key varies slowest, as Hydra's basic sweeper orders jobs
	require.Equal(t, []string{"a.b=1", "c=x", "+d=p", "trainer.default_local_dir=/tmp/sw/0"}, p.Jobs[0].Overrides)
	require.Equal(t, []string{"a.b=2", "c=x", "+d=r", "trainer.default_local_dir=/tmp/sw/5"}, p.Jobs[5].Overrides)
	require.Equal(t, map[string]string{"a.b": "2", "d": "r"}, p.Jobs[5].Params)
	require.Len(t, p.Notices, 1)
	require.Contains(t, p.Notices[0], "hydra.job.chdir")
}

func TestTrainerDeviceWithoutCUDA(t *testing.T) {
	if torch.CUDAAvailable() {
		t.Skip("this machine has CUDA")
	}
	tr, _, err := loadTree([]string{"model_path=tiny"}, "base")
	require.NoError(t, err)
	var b strings.Builder
	dev, err := trainerDevice(tr, nil, "", &b)
	require.NoError(t, err)
	require.Equal(t, "cpu", dev)
	require.Contains(t, b.String(), "trainer.device=cuda (upstream's default) but there is no CUDA here")
	// asked for explicitly: an error naming the missing piece
	tr, a, err := loadTree([]string{"trainer.device=cuda"}, "base")
	require.NoError(t, err)
	_, err = trainerDevice(tr, a.Overrides, "", &b)
	require.ErrorContains(t, err, "trainer.device=cuda was asked for on the command line but there is no CUDA here")
	// --device wins
	dev, err = trainerDevice(tr, a.Overrides, "cpu", &b)
	require.NoError(t, err)
	require.Equal(t, "cpu", dev)
}

// tinySweepArgs are a demo-config run small enough for a test (seconds).
func tinySweepArgs() []string {
	return []string{"--config-name", "demo", "trainer.total_training_steps=1", "trainer.val_before_train=False",
		"trainer.test_freq=1", "es_manager.train.env_groups=2", "es_manager.train.group_size=4",
		"es_manager.train.env_configs.n_groups=[2]", "es_manager.val.env_groups=2", "es_manager.val.env_configs.n_groups=[2]",
		"ppo_mini_batch_size=8", "micro_batch_size_per_gpu=8", "actor_rollout_ref.rollout.response_length=8"}
}

func TestMultirunThreeWayTinyModel(t *testing.T) {
	if testing.Short() {
		t.Skip("three one-step runs of the tiny model")
	}
	dir := t.TempDir()
	args := append([]string{"train", "-m"}, tinySweepArgs()...)
	args = append(args, "actor_rollout_ref.actor.optim.lr=1e-4,3e-4,1e-3", "hydra.sweep.dir="+dir,
		// upstream's optional outputs, each into the job's own folder
		"trainer.validation_data_dir=${trainer.default_local_dir}/val_dump", "trainer.log_group_rv_table=True",
		"trainer.generations_to_log_to_wandb.val=1", "actor_rollout_ref.rollout.val_kwargs.n=2")
	require.NoError(t, run(context.Background(), args))

	f, err := os.Open(filepath.Join(dir, "summary.csv"))
	require.NoError(t, err)
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	require.NoError(t, err)
	require.Len(t, rows, 4)
	require.Equal(t, []string{"job", "actor_rollout_ref.actor.optim.lr", "steps", "val_success", "val_success_best", "reward", "filter_kept_ratio", "mi_estimate", "status", "dir"}, rows[0])
	for i, lr := range []string{"1e-4", "3e-4", "1e-3"} {
		r := rows[i+1]
		require.Equal(t, lr, r[1])
		require.Equal(t, "1", r[2], "one step")
		require.NotEmpty(t, r[3], "validation success logged")
		require.NotEmpty(t, r[5], "reward logged")
		require.Equal(t, "ok", r[8])
		job := filepath.Join(dir, r[0])
		require.Equal(t, job, r[9])
		_, err := os.Stat(filepath.Join(job, "metrics.jsonl"))
		require.NoError(t, err)
		// validation_data_dir: one line per validation episode; val_kwargs.n=2
		// doubles the 2 validation envs
		dumps := readJSONLines[starpo.ValidationDump](t, filepath.Join(job, "val_dump", "1.jsonl"))
		require.Len(t, dumps, 4)
		require.Equal(t, 1, dumps[0].Step)
		require.NotEmpty(t, dumps[0].Input)
		gens := readJSONLines[starpo.ValidationDump](t, filepath.Join(job, "val_generations", "1.jsonl"))
		require.Len(t, gens, 1)
		rv := readJSONLines[starpo.GroupRV](t, filepath.Join(job, "group_rv_table.jsonl"))
		require.Len(t, rv, 2, "two training groups")
		require.Equal(t, 4, rv[0].N)
		// the same tables in TensorBoard's text plugin
		tb, err := filepath.Glob(filepath.Join(job, "tensorboard", "events.out.tfevents.*.ragen-text"))
		require.NoError(t, err)
		require.Len(t, tb, 1)
		raw, err := os.ReadFile(tb[0])
		require.NoError(t, err)
		require.Len(t, tfRecords(t, raw), 3, "file version, group_rv_table of step 1, generations of step 1")
	}
	md, err := os.ReadFile(filepath.Join(dir, "summary.md"))
	require.NoError(t, err)
	require.Contains(t, string(md), "| job | actor_rollout_ref.actor.optim.lr | steps | val_success |")
	require.Equal(t, 3+2, strings.Count(string(md), "\n| ")+1)
	_, err = os.Stat(filepath.Join(dir, "plots", "summary.png"))
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(dir, "plots", "val_success.png"))
	require.NoError(t, err)
}

func readJSONLines[T any](t *testing.T, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var x T
		require.NoError(t, json.Unmarshal(sc.Bytes(), &x), path)
		out = append(out, x)
	}
	require.NoError(t, sc.Err())
	return out
}

// TestRunScriptStartsOnTinyModel: an upstream run script's override set,
// unmodified, with only the model and the sizes shrunk to the tiny model,
// trains a step.
func TestRunScriptStartsOnTinyModel(t *testing.T) {
	if testing.Short() {
		t.Skip("one tiny Sokoban step")
	}
	raw, err := os.ReadFile(filepath.Join("..", "config", "testdata", "runs", "run_top_p_sweep.args"))
	require.NoError(t, err)
	args := []string{"train"}
	for _, l := range strings.Split(string(raw), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			args = append(args, l)
		}
	}
	dir := t.TempDir()
	args = append(args, "model_path=tiny", "+demo.model.max_position_embeddings=4096", "trainer.total_training_steps=1", "trainer.val_before_train=False", "trainer.test_freq=1",
		"trainer.logger=[console,jsonl]", "trainer.default_local_dir="+dir,
		"es_manager.train.env_groups=2", "es_manager.train.group_size=4", "es_manager.train.env_configs.n_groups=[2]",
		"es_manager.val.env_groups=2", "es_manager.val.env_configs.n_groups=[2]", "agent_proxy.max_turn=1",
		"ppo_mini_batch_size=8", "micro_batch_size_per_gpu=8", "actor_rollout_ref.rollout.response_length=8",
		"collapse_detection.first_turn_enabled=False", "collapse_detection.multi_turn_enabled=False")
	require.NoError(t, run(context.Background(), args))
	_, err = os.Stat(filepath.Join(dir, "metrics.jsonl"))
	require.NoError(t, err)
}

// TestCriticFromItsOwnFolder: critic.model.path names a model folder; the
// critic's trunk is that model, not the actor.
func TestCriticFromItsOwnFolder(t *testing.T) {
	dir := t.TempDir()
	tr, _, err := loadTree([]string{"--config-name", "demo", "algorithm.adv_estimator=gae", "demo.model.seed=7"}, "base")
	require.NoError(t, err)
	other, tok, err := loadModel(tr, "cpu")
	require.NoError(t, err)
	require.NoError(t, saveModel(dir, other, tok))
	other.Close()
	tr, _, err = loadTree([]string{"--config-name", "demo", "algorithm.adv_estimator=gae", "critic.model.path=" + dir}, "base")
	require.NoError(t, err)
	actor, _, err := loadModel(tr, "cpu")
	require.NoError(t, err)
	defer actor.Close()
	c, err := loadCritic(tr, actor, "cpu")
	require.NoError(t, err)
	defer c.Close()
	fromActor, err := llm.NewCritic(actor)
	require.NoError(t, err)
	defer fromActor.Close()
	s := torch.NewScope()
	defer s.Close()
	w1 := s.Float32s(c.Trunk().Trainable()[0])
	w2 := s.Float32s(fromActor.Trunk().Trainable()[0])
	require.NoError(t, s.Err())
	require.NotEqual(t, w1, w2, "the critic's trunk comes from critic.model.path, not from the actor")
	// a folder that is not a model is a clear error
	tr, _, err = loadTree([]string{"--config-name", "demo", "algorithm.adv_estimator=gae", "critic.model.path=" + t.TempDir()}, "base")
	require.NoError(t, err)
	_, err = loadCritic(tr, actor, "cpu")
	require.ErrorContains(t, err, "critic.model.path")
}

// TestGradientAnalysisSeparateRollout: trainer.gradient_analysis_env_groups
// / _group_size / _log_prefilter draw an analysis batch of their own, and
// ragen plot grad-analysis draws its figures.
func TestGradientAnalysisSeparateRollout(t *testing.T) {
	if testing.Short() {
		t.Skip("one tiny step with a gradient analysis")
	}
	dir := t.TempDir()
	args := append([]string{"train"}, tinySweepArgs()...)
	args = append(args, "trainer.default_local_dir="+dir, "trainer.test_freq=-1",
		"trainer.gradient_analysis_mode=True", "trainer.gradient_analysis_every=1",
		"trainer.gradient_analysis_env_groups=2", "trainer.gradient_analysis_group_size=2",
		"trainer.gradient_analysis_log_prefilter=True", "actor_rollout_ref.rollout.gradient_analysis_num_buckets=2")
	require.NoError(t, run(context.Background(), args))
	recs, err := track.ReadJSONL(filepath.Join(dir, "metrics.jsonl"))
	require.NoError(t, err)
	m := recs[len(recs)-1].Data
	require.Equal(t, 0.0, m["grad_analysis/uses_training_batch"])
	require.Equal(t, 2.0, m["grad_analysis/source_env_groups"])
	require.Equal(t, 4.0, m["grad_analysis/source_batch_size"], "2 groups x 2, not the training 2 x 4")
	require.Contains(t, m, "grad_norm/all/task")
	require.Contains(t, m, "grad_norm_prefilter/all/task")
	require.Equal(t, 4.0, m["grad_analysis_prefilter/source_batch_size"], "the pre-filter pass sees the whole analysis batch")
	require.Equal(t, m["grad_analysis_prefilter/adjusted_batch_size"], m["grad_norm_prefilter/all/sample_count"])
	require.Equal(t, 8.0, m["train/batch_size"], "training still uses its own batch")
	files, err := plotGradAnalysis(filepath.Join(dir, "metrics.jsonl"), filepath.Join(dir, "gradient_analysis"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
}

// TestMain lets the test binary stand in for the ragen binary: with
// RAGEN_TEST_AS_CLI=1 it runs the CLI on its arguments (multirun --jobs N
// starts `os.Executable() train ...` children).
func TestMain(m *testing.M) {
	if os.Getenv("RAGEN_TEST_AS_CLI") == "1" {
		os.Exit(Main(os.Args[1:]))
	}
	os.Exit(m.Run())
}

func TestMultirunParallelJobsInChildProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("two tiny runs in child processes")
	}
	t.Setenv("RAGEN_TEST_AS_CLI", "1")
	dir := t.TempDir()
	args := append([]string{"train", "-m", "--jobs", "2"}, tinySweepArgs()...)
	args = append(args, "seed.train=1,2", "hydra.sweep.dir="+dir)
	require.NoError(t, run(context.Background(), args))
	f, err := os.Open(filepath.Join(dir, "summary.csv"))
	require.NoError(t, err)
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	require.NoError(t, err)
	require.Len(t, rows, 3)
	for i, seed := range []string{"1", "2"} {
		require.Equal(t, seed, rows[i+1][1])
		require.Equal(t, "ok", rows[i+1][8])
		log, err := os.ReadFile(filepath.Join(dir, rows[i+1][0], "train.log"))
		require.NoError(t, err)
		require.Contains(t, string(log), "training stopped: finished after 1 steps")
	}
	// failing jobs are reported with their logs, and still summarised
	failed := t.TempDir()
	err = run(context.Background(), append([]string{"train", "-m", "--jobs", "2", "hydra.sweep.dir=" + failed},
		append(tinySweepArgs(), "model_path=/nonexistent/qwen-a,/nonexistent/qwen-b")...))
	require.ErrorContains(t, err, "job 0")
	require.ErrorContains(t, err, "job 1")
	require.ErrorContains(t, err, "train.log")
	md, err := os.ReadFile(filepath.Join(failed, "summary.md"))
	require.NoError(t, err)
	require.Equal(t, 2, strings.Count(string(md), "| failed: "))
}

func TestMultirunCommandLineErrors(t *testing.T) {
	ctx := context.Background()
	require.ErrorContains(t, run(ctx, []string{"train", "--jobs", "2", "model_path=tiny"}), "--jobs needs a multirun")
	require.ErrorContains(t, run(ctx, []string{"train", "-m", "--jobs", "0", "seed.train=1,2"}), "--jobs \"0\"")
	// a sweep value without -m says how to sweep
	require.ErrorContains(t, run(ctx, []string{"train", "seed.train=1,2"}), "ragen train -m")
	// every job is checked before any starts
	err := run(ctx, []string{"train", "-m", "hydra.sweep.dir=" + t.TempDir(), "es_manager.train.env_groups=8,3"})
	require.ErrorContains(t, err, "multirun: job 1")
	// Hydra's own keys in a single run: named, then ignored
	require.NoError(t, run(ctx, []string{"train", "hydra.run.dir=/tmp/x", "hydra.job.chdir=True", "--cfg", "job"}))
	// -m --cfg job prints the jobs' configs and leaves no sweep folder
	dir := filepath.Join(t.TempDir(), "sweep")
	require.NoError(t, run(ctx, []string{"train", "-m", "--cfg", "job", "hydra.sweep.dir=" + dir, "seed.train=1,2"}))
	_, err = os.Stat(dir)
	require.True(t, os.IsNotExist(err), "sweep folder: %v", err)
}
