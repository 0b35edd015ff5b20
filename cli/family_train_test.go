package cli

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"ragen/llm"
	"ragen/llm/tokenizer"
	"ragen/torch"
	"ragen/track"
)

// `ragen train model_path=DIR` trains a Llama 3 and a Qwen3 tiny checkpoint
// (PPO with a critic of the same family) for one StarPO step from their
// Hugging Face folders.
func TestTrainLlama3AndQwen3FromFolder(t *testing.T) {
	if testing.Short() {
		t.Skip("trains two tiny models for one step")
	}
	for _, family := range []string{"llama", "qwen3"} {
		t.Run(family, func(t *testing.T) {
			dir := t.TempDir()
			tok, err := tokenizer.TrainBPE(nil, tokenizer.TrainOptions{VocabSize: 259})
			require.NoError(t, err)
			cfg, err := llm.TinyConfigFor(family, tok.VocabSize())
			require.NoError(t, err)
			m, err := llm.New(cfg, llm.Options{DType: torch.Float32, Device: torch.CPU, Seed: 3})
			require.NoError(t, err)
			modelDir := filepath.Join(dir, "model")
			require.NoError(t, llm.SaveHF(modelDir, m, tok))
			m.Close()
			out := filepath.Join(dir, "run")
			args := append(trainArgs(out, 1), "model_path="+modelDir, "algorithm.adv_estimator=gae",
				"trainer.save_freq=-1", "collapse_detection.first_turn_enabled=False",
				"es_manager.train.env_groups=1", "es_manager.train.env_configs.n_groups=[1]")
			require.NoError(t, run(context.Background(), args))
			recs, err := track.ReadJSONL(filepath.Join(out, "metrics.jsonl"))
			require.NoError(t, err)
			last := recs[len(recs)-1].Data
			for _, k := range []string{"actor/pg_loss", "actor/grad_norm", "critic/vf_loss", "critic/grad_norm"} {
				require.Contains(t, last, k)
				require.False(t, math.IsNaN(last[k]), k)
			}
			require.Greater(t, last["actor/grad_norm"], 0.0, "the actor's weights got gradients")
		})
	}
}
