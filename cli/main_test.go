package cli

import (
	"context"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ragen/llm"
	"ragen/llm/tokenizer"
	"ragen/track"
)

func TestUnknownCommandAndKeys(t *testing.T) {
	ctx := context.Background()
	require.ErrorContains(t, run(ctx, []string{"frobnicate"}), "valid: train, eval")
	err := run(ctx, []string{"train", "trainer.total_trainin_steps=3"})
	require.ErrorContains(t, err, "did you mean trainer.total_training_steps")
	err = run(ctx, []string{"eval", "--policy", "bogus", "es_manager.val.env_groups=1", "es_manager.val.env_configs.n_groups=[1]"})
	require.ErrorContains(t, err, "valid policies are model, api, oracle, random")
	// a model path that is not a local folder is a clear error, not a download
	err = run(ctx, []string{"eval", "model_path=Qwen/Qwen2.5-0.5B-Instruct", "es_manager.val.env_groups=1", "es_manager.val.env_configs.n_groups=[1]", "es_manager.val.group_size=1"})
	require.ErrorContains(t, err, "not a local Hugging Face model folder")
	// a step that cannot fit in memory is refused before anything is loaded
	err = run(ctx, []string{"train", "--config-name", "demo", "actor_rollout_ref.rollout.max_model_len=4000000",
		"micro_batch_size_per_gpu=64", "demo.model.hidden_size=1024", "demo.model.num_hidden_layers=16",
		"trainer.default_local_dir=" + t.TempDir()})
	require.ErrorContains(t, err, "memory: a training step needs about")
	require.ErrorContains(t, err, "available memory")
	// inconsistent env groups are reported before any work
	err = run(ctx, []string{"train", "model_path=tiny", "es_manager.train.env_groups=3"})
	require.Error(t, err)
	require.Contains(t, err.Error(), "n_groups")
}

func TestEvalOracleWritesTrajectoriesAndViewReadsThem(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "traj.jsonl")
	err := run(context.Background(), []string{"eval", "--policy", "oracle", "--out", out,
		"es_manager.val.env_groups=2", "es_manager.val.group_size=1", "es_manager.val.env_configs.tags=[SimpleSokoban]",
		"es_manager.val.env_configs.n_groups=[2]"})
	require.NoError(t, err)
	raw, err := os.ReadFile(out)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	require.Len(t, lines, 2)
	require.Contains(t, lines[0], `"success": true`)
	require.NoError(t, run(context.Background(), []string{"view", out, "--max", "1"}))
	bad := filepath.Join(dir, "bad.jsonl")
	require.NoError(t, os.WriteFile(bad, []byte("{not json\n"), 0o644))
	require.ErrorContains(t, run(context.Background(), []string{"view", bad}), "bad.jsonl:1")
}

func TestTrainTinyModelEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a tiny model for one step")
	}
	dir := t.TempDir()
	err := run(context.Background(), []string{"train", "--config-name", "demo",
		"trainer.default_local_dir=" + dir, "trainer.total_training_steps=1", "trainer.val_before_train=False",
		"trainer.test_freq=1", "es_manager.train.env_groups=2", "es_manager.train.group_size=4",
		"es_manager.train.env_configs.n_groups=[2]", "es_manager.val.env_groups=4", "es_manager.val.env_configs.n_groups=[4]",
		"ppo_mini_batch_size=8", "micro_batch_size_per_gpu=4", "actor_rollout_ref.rollout.response_length=16"})
	require.NoError(t, err)
	recs, err := track.ReadJSONL(filepath.Join(dir, "metrics.jsonl"))
	require.NoError(t, err)
	require.NotEmpty(t, recs)
	last := recs[len(recs)-1]
	require.Equal(t, 1, last.Step)
	require.Contains(t, last.Data, "actor/pg_loss")
	require.Contains(t, last.Data, "val-env/DemoBandit/success")
	_, err = os.Stat(filepath.Join(dir, "final", "model.safetensors"))
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(dir, "plots", "summary.png"))
	require.NoError(t, err)
}

// trainArgs is a tiny training run of the demo config.
func trainArgs(dir string, steps int) []string {
	return []string{"train", "--config-name", "demo",
		"trainer.default_local_dir=" + dir, "trainer.total_training_steps=" + strconv.Itoa(steps),
		"trainer.val_before_train=False", "trainer.test_freq=-1", "trainer.save_freq=1", "trainer.resume_mode=auto",
		"es_manager.train.env_groups=2", "es_manager.train.group_size=4", "es_manager.train.env_configs.n_groups=[2]",
		"ppo_mini_batch_size=4", "micro_batch_size_per_gpu=4", "actor_rollout_ref.rollout.response_length=12",
		// collapse diagnostics on every step: their samples and EMA must resume too
		"collapse_detection.first_turn_enabled=True", "collapse_detection.compute_freq=1"}
}

func TestKilledRunResumesExactly(t *testing.T) {
	if testing.Short() {
		t.Skip("three tiny training runs")
	}
	ctx := context.Background()
	full, cut := t.TempDir(), t.TempDir()
	require.NoError(t, run(ctx, trainArgs(full, 3)))
	require.NoError(t, run(ctx, trainArgs(cut, 2))) // "killed" after its step-2 checkpoint
	require.NoError(t, run(ctx, trainArgs(cut, 3))) // resumes from global_step_2
	a, err := track.ReadJSONL(filepath.Join(full, "metrics.jsonl"))
	require.NoError(t, err)
	b, err := track.ReadJSONL(filepath.Join(cut, "metrics.jsonl"))
	require.NoError(t, err)
	require.Equal(t, len(a), len(b), "the resumed log continues the killed one")
	require.Contains(t, a[len(a)-1].Data, "collapse/first_turn_num_total") // the diagnostics ran (a random model has no valid <think>, so no sample metrics)
	for i := range a {
		require.Equal(t, a[i].Step, b[i].Step)
		for k, v := range a[i].Data {
			if strings.HasPrefix(k, "timing") || strings.HasPrefix(k, "perf/") {
				continue
			}
			w, ok := b[i].Data[k]
			require.True(t, ok, "step %d: %s missing after resume", a[i].Step, k)
			require.InDelta(t, v, w, 1e-9*max(1, abs(v)), "step %d: %s", a[i].Step, k)
		}
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func TestEvalWithAPIServerOnLoopbackAndTinyModel(t *testing.T) {
	// an OpenAI-compatible server on loopback that always pushes "Right"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"<think>go right</think><answer>Right</answer>"}}]}`)
	}))
	defer srv.Close()
	dir := t.TempDir()
	out := filepath.Join(dir, "api.jsonl")
	err := run(context.Background(), []string{"eval", "--policy", "api", "--base-url", srv.URL + "/v1", "--api-model", "stub", "--out", out,
		"es_manager.val.env_groups=2", "es_manager.val.group_size=1", "es_manager.val.env_configs.tags=[SimpleSokoban]",
		"es_manager.val.env_configs.n_groups=[2]"})
	require.NoError(t, err)
	raw, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, 2, strings.Count(string(raw), "\n"))
	require.Contains(t, string(raw), "<answer>Right</answer>")

	// the in-process tiny model (random weights) runs end to end too
	out = filepath.Join(dir, "tiny.jsonl")
	err = run(context.Background(), []string{"eval", "--config-name", "demo", "--out", out,
		"es_manager.val.env_groups=3", "es_manager.val.env_configs.n_groups=[3]", "actor_rollout_ref.rollout.response_length=8"})
	require.NoError(t, err)
	raw, err = os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, 3, strings.Count(string(raw), "\n"))
}

func TestSFTOutputIsALoadableModelFolder(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "sft")
	require.NoError(t, run(context.Background(), []string{"sft", "--config-name", "demo", "sft.steps=1",
		"sft.env_groups=1", "sft.group_size=2", "--out", out}))
	for _, f := range []string{"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} {
		_, err := os.Stat(filepath.Join(out, f))
		require.NoError(t, err, f)
	}
	// the byte tokenizer's Hugging Face form encodes like the byte tokenizer
	tok, err := llm.LoadTokenizer(out)
	require.NoError(t, err)
	text := "<|im_start|>user\nState:\n#_P_O#<|im_end|>\n"
	require.Equal(t, tokenizer.NewByte().Encode(text), tok.Encode(text))
	// and the folder evaluates as a model_path
	require.NoError(t, run(context.Background(), []string{"eval", "--config-name", "demo", "model_path=" + out,
		"--out", filepath.Join(dir, "e.jsonl"), "es_manager.val.env_groups=2", "es_manager.val.env_configs.n_groups=[2]",
		"actor_rollout_ref.rollout.response_length=8"}))
}

// A rollout through `ragen serve-envs` (a remote env, env_type "http") gives
// the same trajectories as the local env.
func TestEvalThroughServeEnvs(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve-envs", "--addr", addr}) }()
	require.Eventually(t, func() bool {
		r, err := http.Get("http://" + addr + "/v1/health")
		if err == nil {
			r.Body.Close()
		}
		return err == nil
	}, 5*time.Second, 20*time.Millisecond)
	dir := t.TempDir()
	// random actions (a remote env has no oracle), the same draws on both sides
	common := []string{"eval", "--policy", "random", "es_manager.val.env_groups=2", "es_manager.val.group_size=1",
		"es_manager.val.env_configs.n_groups=[2]"}
	local := filepath.Join(dir, "local.jsonl")
	require.NoError(t, run(ctx, append(append([]string{}, common...), "--out", local, "es_manager.val.env_configs.tags=[SimpleSokoban]")))
	remote := filepath.Join(dir, "remote.jsonl")
	require.NoError(t, run(ctx, append(append([]string{}, common...), "--out", remote, "es_manager.val.env_configs.tags=[RemoteSokoban]",
		"+custom_envs.RemoteSokoban={env_type: http, max_actions_per_traj: 10, max_tokens: 100, env_instruction: '', env_config: {url: 'http://"+addr+"', env_type: sokoban, env_config: {dim_room: [6, 6], num_boxes: 1, max_steps: 100}}}")))
	a, err := os.ReadFile(local)
	require.NoError(t, err)
	b, err := os.ReadFile(remote)
	require.NoError(t, err)
	require.Equal(t, strings.ReplaceAll(string(a), "SimpleSokoban", "RemoteSokoban"), string(b))
	cancel()
	require.NoError(t, <-done)
}

func TestTrainPPOWithCriticOneStep(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a tiny model and critic for one step")
	}
	dir := t.TempDir()
	args := append(trainArgs(dir, 1), "algorithm.adv_estimator=gae", "trainer.save_freq=-1")
	require.NoError(t, run(context.Background(), args))
	recs, err := track.ReadJSONL(filepath.Join(dir, "metrics.jsonl"))
	require.NoError(t, err)
	last := recs[len(recs)-1].Data
	for _, k := range []string{"critic/vf_loss", "critic/values/mean", "critic/vf_explained_var", "actor/pg_loss"} {
		require.Contains(t, last, k)
	}
	require.False(t, math.IsNaN(last["critic/vf_loss"]))
}
