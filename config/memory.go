package config

import (
	"fmt"
	"path"
	"ragen/config/rule"
	"sort"
	"strings"
)

// ModelSpec is the shape of a decoder-only transformer of the Qwen2 / Llama family.
type ModelSpec struct {
	Name         string
	Vocab        int  // V
	Hidden       int  // H
	Layers       int  // L
	Heads        int  // query heads
	KVHeads      int  // key/value heads (GQA)
	HeadDim      int  // 0 means Hidden/Heads
	Intermediate int  // I: MLP width (gate/up/down)
	TiedEmbed    bool // lm_head shares the embedding matrix
	QKVBias      bool // q/k/v projections have biases (Qwen2)
}

// knownModels holds the shapes of the models RAGEN's scripts use (from their config.json).
var knownModels = map[string]ModelSpec{
	"qwen2.5-0.5b": {Vocab: 151936, Hidden: 896, Layers: 24, Heads: 14, KVHeads: 2, Intermediate: 4864, TiedEmbed: true, QKVBias: true},
	"qwen2.5-1.5b": {Vocab: 151936, Hidden: 1536, Layers: 28, Heads: 12, KVHeads: 2, Intermediate: 8960, TiedEmbed: true, QKVBias: true},
	"qwen2.5-3b":   {Vocab: 151936, Hidden: 2048, Layers: 36, Heads: 16, KVHeads: 2, Intermediate: 11008, TiedEmbed: true, QKVBias: true},
	"qwen2.5-7b":   {Vocab: 152064, Hidden: 3584, Layers: 28, Heads: 28, KVHeads: 4, Intermediate: 18944, QKVBias: true},
	"llama-3.2-1b": {Vocab: 128256, Hidden: 2048, Layers: 16, Heads: 32, KVHeads: 8, Intermediate: 8192, TiedEmbed: true},
	"llama-3.2-3b": {Vocab: 128256, Hidden: 3072, Layers: 28, Heads: 24, KVHeads: 8, Intermediate: 8192, TiedEmbed: true},
	"llama-3.1-8b": {Vocab: 128256, Hidden: 4096, Layers: 32, Heads: 32, KVHeads: 8, Intermediate: 14336},
}

// KnownModel returns the shape of a model named by a hub id or path such as
// "Qwen/Qwen2.5-3B-Instruct" (the -Instruct suffix and case are ignored).
func KnownModel(modelPath string) (ModelSpec, error) {
	base := strings.ToLower(path.Base(strings.TrimRight(modelPath, "/")))
	base = strings.TrimSuffix(base, "-instruct")
	base = strings.TrimPrefix(base, "meta-")
	if m, ok := knownModels[base]; ok {
		m.Name = modelPath
		return m, nil
	}
	names := make([]string, 0, len(knownModels))
	for k := range knownModels {
		names = append(names, k)
	}
	sort.Strings(names)
	return ModelSpec{}, fmt.Errorf("config: memory: unknown model %q%s; known: %s (or give a ModelSpec)", modelPath, rule.DidYouMean(base, names), strings.Join(names, ", "))
}

func (m ModelSpec) headDim() int {
	if m.HeadDim > 0 {
		return m.HeadDim
	}
	return m.Hidden / m.Heads
}

func (m ModelSpec) kvDim() int { return m.KVHeads * m.headDim() }

// Params counts all parameters: embedding V·H (+ lm_head V·H if untied), per layer
// q H·qd(+qd), k,v H·kvd(+kvd), o qd·H, MLP 3·H·I, two RMSNorms 2·H, and the final norm H.
func (m ModelSpec) Params() int64 {
	h, i, kvd, qd := int64(m.Hidden), int64(m.Intermediate), int64(m.kvDim()), int64(m.Heads*m.headDim())
	layer := h*qd + 2*h*kvd + qd*h + 3*h*i + 2*h
	if m.QKVBias {
		layer += qd + 2*kvd
	}
	emb := int64(m.Vocab) * h
	if !m.TiedEmbed {
		emb *= 2
	}
	return emb + int64(m.Layers)*layer + h
}

// LoRAParams counts LoRA adapter parameters of rank r on all linear layers
// (target_modules all-linear): r·(in+out) for q, k, v, o, gate, up, down per layer.
func (m ModelSpec) LoRAParams(r int) int64 {
	h, i, kvd, qd := int64(m.Hidden), int64(m.Intermediate), int64(m.kvDim()), int64(m.Heads*m.headDim())
	perLayer := (h + qd) + 2*(h+kvd) + (qd + h) + 2*(h+i) + (i + h)
	return int64(r) * perLayer * int64(m.Layers)
}

// MemoryPlan describes one training step on one GPU (veRL FSDP layout: fp32 master
// weights, gradients and AdamW moments sharded over the data-parallel GPUs, bf16 compute).
type MemoryPlan struct {
	Model                 ModelSpec
	MicroBatch            int  // sequences per forward/backward (ppo_micro_batch_size_per_gpu)
	SeqLen                int  // tokens per sequence (a full-mode trajectory is <= max_model_len)
	Shards                int  // FSDP world size (nnodes · n_gpus_per_node); 0 means 1
	LoRARank              int  // > 0: frozen bf16 base, trainable fp32 adapters
	GradientCheckpointing bool // keep only layer inputs, recompute one layer in backward
	Critic                bool // a second model of the same shape with its own optimiser
	Reference             bool // a bf16 reference model (not needed with LoRA: adapters off)
}

// MemoryEstimate is the per-GPU byte count of a training step.
type MemoryEstimate struct {
	TotalParams     int64 // parameters of one model
	TrainableParams int64 // parameters with gradients and optimiser state
	Params          int64 // weights of actor (+ critic, + reference), sharded
	Grads           int64 // fp32 gradients, sharded
	Optimizer       int64 // AdamW first and second moments, fp32, sharded
	Activations     int64 // saved activations of one micro batch
	Logits          int64 // vocabulary-sized tensors of one micro batch
	Total           int64
}

// Bytes per element of the tensors counted below.
const (
	bytesFP32 = 4
	bytesBF16 = 2
	// Logits per token: bf16 logits, their fp32 copy, fp32 log-softmax (or softmax for the
	// entropy) and the bf16 gradient flowing back: 2 + 4 + 4 + 2.
	logitBytesPerEntry = 12
)

// EstimateMemory estimates the bytes one GPU needs for a training step.
//
// Per model with P parameters (T trainable) over S shards: weights 4·P/S (2·P/S + 4·T/S
// with LoRA), gradients 4·T/S, AdamW 8·T/S; reference 2·P/S. Activations per token and
// layer (bf16, flash attention): norm in/out 2H, q k v H+2kvd, rotated q k H+kvd, attention
// output H, second norm in/out 2H, MLP gate/up/act/product 4I, i.e. (7H + 3kvd + 4I)·2
// bytes; with gradient checkpointing only each layer's input (H·2 bytes) is kept plus one
// layer's full set during recomputation. Logits: B·T·V·12 bytes. Not included: the rollout
// engine's KV cache, CUDA context and allocator fragmentation.
func EstimateMemory(p MemoryPlan) (MemoryEstimate, error) {
	m := p.Model
	if m.Vocab <= 0 || m.Hidden <= 0 || m.Layers <= 0 || m.Heads <= 0 || m.KVHeads <= 0 || m.Intermediate <= 0 {
		return MemoryEstimate{}, fmt.Errorf("config: memory: model shape must be positive: %+v", m)
	}
	if p.MicroBatch < 1 || p.SeqLen < 1 || p.Shards < 0 || p.LoRARank < 0 {
		return MemoryEstimate{}, fmt.Errorf("config: memory: need micro batch >= 1, sequence length >= 1, shards >= 0, LoRA rank >= 0 (got %d, %d, %d, %d)", p.MicroBatch, p.SeqLen, p.Shards, p.LoRARank)
	}
	shards := int64(max(p.Shards, 1))
	var e MemoryEstimate
	e.TotalParams = m.Params()
	e.TrainableParams = e.TotalParams
	weights := bytesFP32 * e.TotalParams
	if p.LoRARank > 0 {
		e.TrainableParams = m.LoRAParams(p.LoRARank)
		weights = bytesBF16*e.TotalParams + bytesFP32*e.TrainableParams
	}
	models := int64(1)
	if p.Critic {
		models = 2
	}
	e.Params = models * weights / shards
	e.Grads = models * bytesFP32 * e.TrainableParams / shards
	e.Optimizer = models * 2 * bytesFP32 * e.TrainableParams / shards
	if p.Reference && p.LoRARank == 0 {
		e.Params += bytesBF16 * e.TotalParams / shards
	}
	tokens := int64(p.MicroBatch) * int64(p.SeqLen)
	h, kvd, i := int64(m.Hidden), int64(m.kvDim()), int64(m.Intermediate)
	perLayer := (7*h + 3*kvd + 4*i) * bytesBF16
	if p.GradientCheckpointing {
		e.Activations = tokens * (int64(m.Layers)*h*bytesBF16 + perLayer)
	} else {
		e.Activations = tokens * int64(m.Layers) * perLayer
	}
	e.Logits = tokens * int64(m.Vocab) * logitBytesPerEntry
	e.Total = e.Params + e.Grads + e.Optimizer + e.Activations + e.Logits
	return e, nil
}

// Fits returns nil if the estimate fits in budget bytes, else an error naming each part
// and what would shrink it.
func (e MemoryEstimate) Fits(budget int64) error {
	if e.Total <= budget {
		return nil
	}
	return fmt.Errorf("config: memory: a training step needs about %s per GPU (%s) but the budget is %s; shrink it with LoRA (lora.rank > 0), more GPUs (FSDP shards), a smaller micro batch or max_model_len",
		gib(e.Total), e.parts(), gib(budget))
}

func (e MemoryEstimate) parts() string {
	return fmt.Sprintf("weights %s, grads %s, AdamW %s, activations %s, logits %s",
		gib(e.Params), gib(e.Grads), gib(e.Optimizer), gib(e.Activations), gib(e.Logits))
}

// String summarises the estimate in GiB.
func (e MemoryEstimate) String() string {
	return fmt.Sprintf("%s total: %s (%d parameters, %d trainable)", gib(e.Total), e.parts(), e.TotalParams, e.TrainableParams)
}

func gib(b int64) string { return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30)) }

// MemoryPlanFromTree builds the plan of a training step from a config: model_path, the
// actor micro batch, max_model_len (full mode) or response_length plus room for one turn's
// prompt (turn-level modes, bounded by max_model_len), FSDP shards, LoRA rank, gradient
// checkpointing, whether a critic and a reference model exist.
func MemoryPlanFromTree(t *Tree) (MemoryPlan, error) {
	var p MemoryPlan
	mp, err := t.String("model_path")
	if err != nil {
		return p, err
	}
	if p.Model, err = KnownModel(mp); err != nil {
		return p, err
	}
	if p.MicroBatch, err = t.Int("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"); err != nil {
		return p, err
	}
	if p.SeqLen, err = t.Int("actor_rollout_ref.rollout.max_model_len"); err != nil {
		return p, err
	}
	g, err := t.Int("trainer.n_gpus_per_node")
	if err != nil {
		return p, err
	}
	n := 1
	if t.Has("trainer.nnodes") {
		if n, err = t.Int("trainer.nnodes"); err != nil {
			return p, err
		}
	}
	p.Shards = g * n
	if t.Has("lora.rank") {
		if p.LoRARank, err = t.Int("lora.rank"); err != nil {
			return p, err
		}
	}
	if t.Has("actor_rollout_ref.model.enable_gradient_checkpointing") {
		if p.GradientCheckpointing, err = t.Bool("actor_rollout_ref.model.enable_gradient_checkpointing"); err != nil {
			return p, err
		}
	}
	v := &validator{t: t}
	p.Critic = v.criticEnabled()
	if t.Has("actor_rollout_ref.actor.use_ref") {
		if p.Reference, err = t.Bool("actor_rollout_ref.actor.use_ref"); err != nil {
			return p, err
		}
	}
	return p, nil
}
