package config

import (
	"strings"
	"testing"
)

func TestModelParams(t *testing.T) {
	// Hand counts (embedding + layers·(q+k+v+o+mlp+norms) + final norm):
	// Qwen2.5-0.5B: 151936·896 + 24·(896·896+896 + 2·(896·128+128) + 896·896 + 3·896·4864 + 2·896) + 896
	//   = 136134656 + 24·14912384 + 896 = 494032768 (published 0.49B)
	// Qwen2.5-1.5B: 233373696 + 28·46797824 + 1536 = 1543714304 (1.54B)
	// Qwen2.5-3B: 311164928 + 36·77076992 + 2048 = 3085938688 (3.09B)
	// Qwen2.5-7B (untied): 2·152064·3584 + 28·233057792 + 3584 = 7615616512 (7.61B)
	// Llama-3.2-1B: 262668288 + 16·60821504 + 2048 = 1235814400 (1.24B)
	// Llama-3.2-3B: 394002432 + 28·100669440 + 3072 = 3212749824 (3.21B)
	cases := map[string]int64{
		"Qwen/Qwen2.5-0.5B-Instruct":       494032768,
		"Qwen/Qwen2.5-1.5B-Instruct":       1543714304,
		"Qwen/Qwen2.5-3B-Instruct":         3085938688,
		"Qwen/Qwen2.5-7B":                  7615616512,
		"meta-llama/Llama-3.2-1B-Instruct": 1235814400,
		"/models/meta-llama/Llama-3.2-3B/": 3212749824,
	}
	for name, want := range cases {
		m, err := KnownModel(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Params(); got != want {
			t.Errorf("%s: %d params, want %d", name, got, want)
		}
	}
	_, err := KnownModel("Qwen/Qwen2.5-4B")
	wantErr(t, err, `unknown model "Qwen/Qwen2.5-4B"`, "known: llama-3.1-8b")
	// LoRA rank 8 on Qwen2.5-0.5B: per layer 8·(9·896 + 2·128 + 3·4864) = 8·22912 = 183296;
	// x 24 layers = 4399104.
	m, _ := KnownModel("Qwen2.5-0.5B")
	if got := m.LoRAParams(8); got != 4399104 {
		t.Errorf("LoRA params %d, want 4399104", got)
	}
}

func TestEstimateMemory(t *testing.T) {
	m, _ := KnownModel("Qwen2.5-0.5B")
	// P = 494032768. Full fine-tune, 1 shard, actor only:
	//   weights 4P = 1976131072, grads 4P = 1976131072, AdamW 8P = 3952262144.
	// Activations, micro 2 x 1000 tokens, no checkpointing: per token per layer
	//   (7·896 + 3·128 + 4·4864)·2 = (6272+384+19456)·2 = 52224 bytes; x 24 layers x 2000 tokens
	//   = 2506752000. Logits: 2000 x 151936 x 12 = 3646464000.
	e, err := EstimateMemory(MemoryPlan{Model: m, MicroBatch: 2, SeqLen: 1000})
	if err != nil {
		t.Fatal(err)
	}
	want := MemoryEstimate{
		TotalParams: 494032768, TrainableParams: 494032768,
		Params: 1976131072, Grads: 1976131072, Optimizer: 3952262144,
		Activations: 2506752000, Logits: 3646464000,
	}
	want.Total = want.Params + want.Grads + want.Optimizer + want.Activations + want.Logits
	if e != want {
		t.Errorf("estimate\n got %+v\nwant %+v", e, want)
	}
	// Gradient checkpointing: 2000 x (24 x 896 x 2 + 52224) = 2000 x 95232 = 190464000.
	e2, _ := EstimateMemory(MemoryPlan{Model: m, MicroBatch: 2, SeqLen: 1000, GradientCheckpointing: true})
	if e2.Activations != 190464000 {
		t.Errorf("checkpointed activations %d, want 190464000", e2.Activations)
	}
	// 4 shards, critic and reference: weights (2·4P + 2P)/4 = 10P/4 = 1235081920,
	// grads 2·4P/4 = 2P = 988065536, AdamW 2·8P/4 = 4P = 1976131072.
	e3, _ := EstimateMemory(MemoryPlan{Model: m, MicroBatch: 1, SeqLen: 10, Shards: 4, Critic: true, Reference: true})
	if e3.Params != 1235081920 || e3.Grads != 988065536 || e3.Optimizer != 1976131072 {
		t.Errorf("sharded %+v", e3)
	}
	// LoRA rank 8: weights 2P + 4·4399104 = 988065536 + 17596416 = 1005661952; grads 4T =
	// 17596416; AdamW 8T = 35192832; the reference is the adapter-free actor (no extra).
	e4, _ := EstimateMemory(MemoryPlan{Model: m, MicroBatch: 1, SeqLen: 10, LoRARank: 8, Reference: true})
	if e4.TrainableParams != 4399104 || e4.Params != 1005661952 || e4.Grads != 17596416 || e4.Optimizer != 35192832 {
		t.Errorf("lora %+v", e4)
	}

	if err := e.Fits(e.Total); err != nil {
		t.Errorf("exact budget must fit: %v", err)
	}
	// Total 14057740288 bytes = 13.09 GiB.
	err = e.Fits(8 << 30)
	wantErr(t, err, "needs about 13.09 GiB per GPU", "weights 1.84 GiB, grads 1.84 GiB, AdamW 3.68 GiB, activations 2.33 GiB, logits 3.40 GiB", "budget is 8.00 GiB")
	if !strings.Contains(e.String(), "494032768 parameters") {
		t.Errorf("String: %s", e)
	}
	_, err = EstimateMemory(MemoryPlan{Model: m})
	wantErr(t, err, "micro batch >= 1")
	_, err = EstimateMemory(MemoryPlan{MicroBatch: 1, SeqLen: 1})
	wantErr(t, err, "model shape must be positive")
}

func TestMemoryPlanFromTree(t *testing.T) {
	tr := mustLoad(t, "_7_lean", []string{"model_path=Qwen/Qwen2.5-0.5B-Instruct"}, shipped())
	p, err := MemoryPlanFromTree(tr)
	if err != nil {
		t.Fatal(err)
	}
	if p.MicroBatch != 1 || p.SeqLen != 8096 || p.Shards != 4 || !p.GradientCheckpointing || !p.Critic || !p.Reference || p.LoRARank != 0 {
		t.Errorf("plan %+v", p)
	}
	// GRPO has no critic.
	tr = mustLoad(t, "base", []string{"algorithm.adv_estimator=grpo", "lora.rank=16"}, shipped())
	if p, _ := MemoryPlanFromTree(tr); p.Critic || p.LoRARank != 16 || p.Model.Hidden != 2048 {
		t.Errorf("plan %+v", p)
	}
	tr = mustLoad(t, "base", []string{"model_path=my/model"}, shipped())
	_, err = MemoryPlanFromTree(tr)
	wantErr(t, err, `unknown model "my/model"`)
}
