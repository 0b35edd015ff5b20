package cli

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"ragen/config"
	"ragen/llm"
	"ragen/llm/tokenizer"
	"ragen/torch"
)

// memAvailable is MemAvailable from /proc/meminfo in bytes (0 if unknown).
func memAvailable() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			fs := strings.Fields(rest)
			if len(fs) > 0 {
				kb, err := strconv.ParseInt(fs[0], 10, 64)
				if err == nil {
					return kb << 10
				}
			}
		}
	}
	return 0
}

// modelConfigFor reads the model config a run will use without loading
// weights: config.json of model_path, or the tiny demo model's, whose
// tokenizer it returns too (nil for model_path folders) so loadModelTok need
// not load it again.
func modelConfigFor(t *config.Tree) (llm.Config, tokenizer.Tokenizer, error) {
	path, err := t.String("model_path")
	if err != nil {
		return llm.Config{}, nil, err
	}
	if path == "tiny" {
		tok, err := tinyTokenizer(t)
		if err != nil {
			return llm.Config{}, nil, err
		}
		mc, err := tinyModelConfig(t, tok.VocabSize())
		return mc, tok, err
	}
	if err := localModelDir(path); err != nil {
		return llm.Config{}, nil, err
	}
	mc, err := llm.ReadConfig(path)
	return mc, nil, err
}

// checkMemory estimates a training step's memory (weights, gradients, AdamW
// state, activations and logits of one micro batch) before anything is
// loaded, and refuses to start when it cannot fit in the host's available
// memory (CPU runs). On CUDA the estimate is printed only.
func checkMemory(t *config.Tree, mc llm.Config, dev torch.Device) error {
	p := config.MemoryPlan{
		Model: config.ModelSpec{Name: "model", Vocab: mc.VocabSize, Hidden: mc.HiddenSize, Layers: mc.NumHiddenLayers,
			Heads: mc.NumAttentionHeads, KVHeads: mc.NumKeyValueHeads, HeadDim: mc.HeadDimension(),
			Intermediate: mc.IntermediateSize, TiedEmbed: mc.TieWordEmbeddings, QKVBias: true},
		Shards: 1, Critic: config.CriticEnabled(t),
	}
	r := &reader{t: t}
	r.int("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", &p.MicroBatch)
	r.int("actor_rollout_ref.rollout.max_model_len", &p.SeqLen)
	r.int("lora.rank", &p.LoRARank)
	r.bool("actor_rollout_ref.actor.use_ref", &p.Reference)
	if err := r.err(); err != nil {
		return err
	}
	p.MicroBatch = max(p.MicroBatch, 1)
	est, err := config.EstimateMemory(p)
	if err != nil {
		return err
	}
	if dev.IsCUDA() {
		fmt.Fprintf(os.Stderr, "ragen: estimated memory per training step on %s: %s\n", dev, est)
		return nil
	}
	if avail := memAvailable(); avail > 0 {
		if err := est.Fits(avail); err != nil {
			return fmt.Errorf("%w (budget = this machine's available memory)", err)
		}
	}
	return nil
}
