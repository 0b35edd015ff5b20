package starpo

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ragen/env"
	"ragen/env/bandit"
	"ragen/filter"
	"ragen/llm"
	"ragen/llm/tokenizer"
	"ragen/llmpolicy"
	"ragen/ragen"
	"ragen/starpo/algo"
	"ragen/torch"
)

func float32Snapshot(t *testing.T, ps []*torch.Tensor) [][]float32 {
	t.Helper()
	var out [][]float32
	for _, p := range ps {
		v, err := torch.Data[float32](p)
		require.NoError(t, err)
		out = append(out, v)
	}
	return out
}

// The real stack: a tiny Qwen2 model samples Bandit answers through
// llmpolicy.New, a Qwen2 critic and a frozen reference; two GAE steps give
// finite losses and move every parameter of actor and critic, and the
// trained policy exports as a Hugging Face folder that llm.Load reads back.
func TestSmokeLLMBandit(t *testing.T) {
	m, err := llm.New(llm.TinyConfig(tinyVocab), llm.Options{DType: torch.Float32, Device: torch.CPU, Seed: 3})
	require.NoError(t, err)
	defer m.Close()
	ref, err := m.Clone()
	require.NoError(t, err)
	defer ref.Close()
	critic, err := llm.NewCritic(m)
	require.NoError(t, err)
	defer critic.Close()

	tags, err := env.DefaultTags()
	require.NoError(t, err)
	rc := ragen.DefaultConfig()
	rc.CustomEnvs = ragen.SpecsFromTags(tags)
	rc.ESManager.Train = ragen.EnvSetConfig{EnvGroups: 2, GroupSize: 2, EnvConfigs: ragen.EnvConfigs{Tags: []string{"Bandit"}, NGroups: []int{2}}}
	rc.ESManager.Val = ragen.EnvSetConfig{EnvGroups: 2, GroupSize: 1, EnvConfigs: ragen.EnvConfigs{Tags: []string{"Bandit"}, NGroups: []int{2}}}
	rc.AgentProxy.MaxTurn, rc.AgentProxy.MaxActionsPerTurn = 1, 1
	rc.Rollout.ResponseLength = 12
	var next int64
	prov := ragen.ProviderFuncs{New: func(string, ragen.EnvSpec) (env.BaseEnv, error) {
		next++
		return bandit.NewWithInternalSeed(bandit.DefaultConfig(), next-1)
	}}
	proxy, err := ragen.NewAgentProxy(rc, tokenizer.NewByte(), prov, llmpolicy.New(m, tokenizer.NewByte(), llmpolicy.Options{Seed: 5}))
	require.NoError(t, err)
	defer proxy.Close()

	cfg := smallConfig(t.TempDir())
	cfg.ESManager.Train = EnvSetConfig{EnvGroups: 2, GroupSize: 2}
	cfg.ActorRolloutRef.Actor.PPOMiniBatchSize = 2
	cfg.ActorRolloutRef.Actor.PPOMicroBatchSizePerGPU = 1
	cfg.ActorRolloutRef.Actor.Optim.LR = 1e-3
	cfg.ActorRolloutRef.Actor.UseKLLoss = true
	cfg.ActorRolloutRef.Actor.KLLossCoef = 0.01
	cfg.Critic.PPOMiniBatchSize, cfg.Critic.PPOMicroBatchSizePerGPU = 2, 1
	cfg.Trainer.TotalTrainingSteps = 2
	cfg.Trainer.ValBeforeTrain = false
	cfg.Trainer.TestFreq = 0
	before := float32Snapshot(t, m.Trainable())
	cbefore := float32Snapshot(t, critic.Trainable())
	log := &recLogger{}
	tr, err := NewTrainer(cfg, Deps{Actor: m, Critic: critic, Ref: ref, Rollout: proxy.RolloutWith, Filter: filter.DefaultConfig(), Logger: log})
	require.NoError(t, err)
	defer tr.Close()
	_, err = tr.Fit(context.Background())
	require.NoError(t, err)
	require.Len(t, log.metrics, 2)
	for _, met := range log.metrics {
		for _, k := range []string{algo.MetricPGLoss, algo.MetricVFLoss, algo.MetricKLLoss, MetricActorGradNorm, algo.MetricEntropy} {
			v, ok := met[k]
			require.True(t, ok, k)
			assert.False(t, math.IsNaN(v) || math.IsInf(v, 0), "%s = %v", k, v)
		}
	}
	after := float32Snapshot(t, m.Trainable())
	for i := range before {
		assert.NotEqual(t, before[i], after[i], "actor tensor %d did not move", i)
	}
	cafter := float32Snapshot(t, critic.Trainable())
	for i := range cbefore {
		assert.NotEqual(t, cbefore[i], cafter[i], "critic tensor %d did not move", i)
	}

	dir := filepath.Join(t.TempDir(), "hf")
	require.NoError(t, tr.Export(dir))
	back, err := llm.Load(dir, llm.DefaultOptions())
	require.NoError(t, err)
	defer back.Close()
	got := float32Snapshot(t, back.Trainable())
	require.Len(t, got, len(after))
	for i := range after {
		assert.Equal(t, after[i], got[i], "exported tensor %d", i)
	}
}
