package llm

import (
	"errors"
	"fmt"
	"math"

	"ragen/internal/torch/fused"
	"ragen/torch"
)

// Options choose where and how a model lives. The zero value is float32 on
// the CPU (torch.Float32 and torch.CPU are both zero).
type Options struct {
	DType  torch.DType  // Float32 (default when zero is given through DefaultOptions) or BFloat16/Float16
	Device torch.Device // torch.CPU or torch.CUDA(i)
	Seed   uint64       // seed of the random initialisation (New)
	// GradientCheckpointing recomputes each decoder layer in backward instead
	// of keeping its activations (SetGradientCheckpointing; checkpoint.go).
	GradientCheckpointing bool
	// ComputeDType, when BFloat16 or Float16 with Float32 (or Float64)
	// parameters, is mixed precision as FSDP's param_dtype runs it: the
	// training and scoring forward (and so the backward) compute on copies
	// of the weights in that dtype, made at every forward, while the
	// parameters, their gradients and the optimizer state stay in DType (the
	// master weights). Generation computes in bf16 too (bf16 copies made
	// once per Generate call, bf16 KV caches), as veRL's rollouts; with
	// Float16 it keeps DType. Any other value: no mixing.
	ComputeDType torch.DType
	// AutoCompute, when set, replaces ComputeDType by AutoComputeDType's
	// choice for the model's size and device when the model is built (New,
	// Load, NewCritic): bfloat16 mixed precision where GPU runs use it and
	// where it measures faster on this CPU, else none. The CLI sets it
	// unless actor_rollout_ref.model.compute_dtype names a dtype.
	AutoCompute bool
}

// AutoComputeParams is the least parameter count for which AutoComputeDType
// picks bfloat16 on a CPU.
const AutoComputeParams = 100_000_000

// AutoComputeDType is the training compute dtype of a model that does not
// choose one (Options.AutoCompute; the CLI's default): bfloat16 mixed
// precision where GPU runs use it and where it measures faster on the CPU,
// else opt.DType (no mixing).
//   - CUDA: bfloat16, as veRL's FSDP mixed precision (param_dtype) is by
//     default.
//   - CPU: bfloat16 when the CPU multiplies bfloat16 natively
//     (torch.NativeBF16Matmul: AMX or AVX512-BF16) and the model has at
//     least AutoComputeParams parameters. On the AMX test machine a
//     training step at Qwen2.5's shapes was then 1.7-2.2x faster than in
//     float32 (make bench, the bf16 columns). Smaller models (the demo's, the tests') keep float32,
//     the precision their recipes and reference results were made in.
//   - float32 parameters only: other parameter dtypes do not mix.
func AutoComputeDType(cfg Config, opt Options) torch.DType {
	opt = opt.norm()
	if opt.DType != torch.Float32 {
		return opt.DType
	}
	if opt.Device != torch.CPU || (torch.NativeBF16Matmul() && cfg.ParamCount() >= AutoComputeParams) {
		return torch.BFloat16
	}
	return opt.DType
}

// ComputeDType is the dtype the training and scoring forward computes in:
// Options.ComputeDType when it makes mixed precision, else the parameters'.
func (m *Model) ComputeDType() torch.DType {
	c := m.opt.ComputeDType
	if (c == torch.BFloat16 || c == torch.Float16) && (m.opt.DType == torch.Float32 || m.opt.DType == torch.Float64) {
		return c
	}
	return m.opt.DType
}

// DefaultOptions is float32 on the CPU with seed 0.
func DefaultOptions() Options { return Options{DType: torch.Float32, Device: torch.CPU} }

// NamedParam is a parameter under its Hugging Face name. For the fused
// projections (q/k/v and gate/up) T is a view into the fused tensor that
// Trainable returns; it shares storage with it.
type NamedParam struct {
	Name string
	T    *torch.Tensor
}

// Model is a decoder-only causal language model of one of the supported
// families (Families: qwen2, llama, qwen3). It is used by one goroutine at a
// time; Clone gives another goroutine its own copy.
type Model struct {
	cfg    Config
	opt    Options
	fam    *family
	embed  *torch.Tensor // (V,E)
	layers []layer
	norm   *torch.Tensor // (E)
	head   *torch.Tensor // (V,E); nil when tied to embed
	named  []NamedParam  // HF-named views
	cos    *torch.Tensor // (P,D) float32 rotary tables
	sin    *torch.Tensor
	lora   *loraState
	// genConfig is generation_config.json as loaded (nil: derived from cfg).
	genConfig []byte
	// referenceOps makes the Go forward compose RMSNorm, RoPE, attention and
	// SwiGLU from elementary ops instead of the fused ones: the reference
	// the tests hold the fused ops to.
	referenceOps bool
}

func (m *Model) q() int  { return m.cfg.NumAttentionHeads * m.cfg.HeadDimension() }
func (m *Model) kv() int { return m.cfg.NumKeyValueHeads * m.cfg.HeadDimension() }

// NamedShape is a parameter name with its shape.
type NamedShape struct {
	Name  string
	Shape []int64
}

// ParamCount is the number of parameters (tied embeddings counted once).
func (c Config) ParamCount() int64 {
	var n int64
	for _, p := range c.paramShapes() {
		k := int64(1)
		for _, d := range p.Shape {
			k *= d
		}
		n += k
	}
	return n
}

func (o Options) norm() Options {
	if o.DType != torch.Float32 && o.DType != torch.BFloat16 && o.DType != torch.Float16 && o.DType != torch.Float64 {
		o.DType = torch.Float32
	}
	return o
}

// alloc builds a model of zeros (norms ones) with the fused layout and views.
func alloc(cfg Config, opt Options) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	opt = opt.norm()
	if opt.AutoCompute {
		opt.ComputeDType, opt.AutoCompute = AutoComputeDType(cfg, opt), false
	}
	if opt.Device != torch.CPU && !torch.CUDAAvailable() {
		return nil, fmt.Errorf("llm: device %s requested but this build has no usable CUDA (Options{Device: torch.CPU} for the CPU)", opt.Device)
	}
	fam, err := familyOf(cfg)
	if err != nil {
		return nil, err
	}
	m := &Model{cfg: cfg, opt: opt, fam: fam}
	E, V := int64(cfg.HiddenSize), int64(cfg.VocabSize)
	mk := func(v float64, shape ...int64) *torch.Tensor {
		if err != nil {
			return nil
		}
		var t *torch.Tensor
		t, err = torch.Full(shape, v, opt.DType, opt.Device)
		return t
	}
	// the weights on huge pages: a decode step reads them all
	err = torch.OnHugePages(func() error {
		m.embed = mk(0, V, E)
		for i := 0; i < cfg.NumHiddenLayers; i++ {
			var l layer
			for _, r := range fam.roles() {
				v := 0.0
				if r.isNorm() {
					v = 1
				}
				l[r] = mk(v, r.shape(cfg)...)
			}
			m.layers = append(m.layers, l)
		}
		m.norm = mk(1, E)
		if !cfg.TieWordEmbeddings {
			m.head = mk(0, V, E)
		}
		return err
	})
	if err == nil {
		err = m.makeRope()
	}
	if err == nil {
		err = m.makeViews()
	}
	if err == nil {
		for _, t := range m.base() {
			if err = t.SetRequiresGrad(true); err != nil {
				break
			}
		}
	}
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("llm: allocating the model: %w", err)
	}
	return m, nil
}

// initialRope bounds the rotary table built up front; longer sequences grow it.
const initialRope = 4096

func (m *Model) makeRope() error { return m.buildRope(min(m.cfg.MaxPositionEmbeddings, initialRope)) }

// ensureRope grows the rotary tables to cover positions < n (at most
// max_position_embeddings).
func (m *Model) ensureRope(n int) error {
	n = min(n, m.cfg.MaxPositionEmbeddings)
	if !m.cos.Valid() {
		return torch.ErrFreed
	}
	if int(m.cos.Size(0)) >= n {
		return nil
	}
	old := [2]*torch.Tensor{m.cos, m.sin}
	if err := m.buildRope(max(n, 2*int(m.cos.Size(0)))); err != nil {
		return err
	}
	old[0].Free()
	old[1].Free()
	return nil
}

// buildRope fills the rotary tables for P positions: angle(p, j) = p *
// invFreq[j], invFreq from the family (1/theta^(2j/D), scaled for llama3).
func (m *Model) buildRope(P int) error {
	P = min(P, m.cfg.MaxPositionEmbeddings)
	D := m.cfg.HeadDimension()
	cs := make([]float32, P*D)
	sn := make([]float32, P*D)
	inv := m.fam.invFreq(m.cfg)
	for p := 0; p < P; p++ {
		for j, f := range inv {
			a := float64(p) * f
			c, s := float32(math.Cos(a)), float32(math.Sin(a))
			cs[p*D+j], cs[p*D+j+D/2] = c, c
			sn[p*D+j], sn[p*D+j+D/2] = s, s
		}
	}
	c, err := upload(cs, m.opt.Device, int64(P), int64(D))
	if err != nil {
		return err
	}
	sn2, err := upload(sn, m.opt.Device, int64(P), int64(D))
	if err != nil {
		c.Free()
		return err
	}
	m.cos, m.sin = c, sn2
	return nil
}

func upload[T torch.Elem](data []T, dev torch.Device, shape ...int64) (*torch.Tensor, error) {
	t, err := torch.From(data, shape...)
	if err != nil || dev == torch.CPU {
		return t, err
	}
	s := torch.NewScope()
	defer s.Close()
	d := s.Escape(s.To(t, t.DType(), dev))
	t.Free()
	return d, s.Err()
}

// makeViews creates the HF-named views (without autograd history).
func (m *Model) makeViews() error {
	s := torch.NewScope()
	defer s.Close()
	return torch.NoGrad(func() error {
		add := func(name string, t *torch.Tensor) {
			if t != nil {
				m.named = append(m.named, NamedParam{name, s.Escape(t)})
			}
		}
		same := func(t *torch.Tensor) *torch.Tensor { return s.Narrow(t, 0, 0, t.Size(0)) }
		add(nameEmbed, same(m.embed))
		for i, l := range m.layers {
			for _, w := range m.fam.weights {
				t := l[w.role]
				n0, n := w.part.rows(m.cfg, t.Size(0))
				add(fmt.Sprintf("model.layers.%d.%s", i, w.name), s.Narrow(t, 0, n0, n))
			}
		}
		add(nameNorm, same(m.norm))
		if m.head != nil {
			add(nameHead, same(m.head))
		}
		return s.Err()
	})
}

// New builds a model with HF's random initialisation, seeded by opt.Seed:
// every linear weight and the embedding ~ N(0, initializer_range²), biases
// zero, norm weights one.
func New(cfg Config, opt Options) (*Model, error) {
	if cfg.InitializerRange == 0 {
		cfg.InitializerRange = 0.02
	}
	m, err := alloc(cfg, opt)
	if err != nil {
		return nil, err
	}
	g, err := torch.NewGenerator(opt.Seed, torch.CPU)
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("llm: %w", err)
	}
	defer g.Close()
	err = torch.NoGrad(func() error {
		for _, p := range m.named {
			if isNormOrBias(p.Name) {
				continue
			}
			// a scope per parameter: the temporaries of one at a time (a 0.5B
			// model's init peaked at 3x its size with one scope for all)
			s := torch.NewScope()
			r := s.MulS(s.Randn(g, p.T.Shape(), torch.Float32, torch.CPU), cfg.InitializerRange)
			s.CopyInto(p.T, r)
			if err := s.Close(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("llm: initialising: %w", err)
	}
	return m, nil
}

func isNormOrBias(name string) bool {
	return hasSuffix(name, ".bias") || hasSuffix(name, "norm.weight")
}

func hasSuffix(s, suf string) bool { return len(s) >= len(suf) && s[len(s)-len(suf):] == suf }

// Config returns the model's configuration.
func (m *Model) Config() Config { return m.cfg }

// Options returns the dtype, device and seed the model was built with.
func (m *Model) Options() Options { return m.opt }

// Params returns the parameters under their HF names (views; see NamedParam).
// With LoRA on, the base weights are returned unmerged.
func (m *Model) Params() []NamedParam { return append([]NamedParam(nil), m.named...) }

// base lists the underlying (fused) parameter tensors.
func (m *Model) base() []*torch.Tensor {
	out := []*torch.Tensor{m.embed}
	for _, l := range m.layers {
		for _, t := range l {
			if t != nil {
				out = append(out, t)
			}
		}
	}
	out = append(out, m.norm)
	if m.head != nil {
		out = append(out, m.head)
	}
	return out
}

// Trainable returns the tensors an optimiser updates: every (fused) base
// parameter, or only the LoRA adapters when LoRA is on.
func (m *Model) Trainable() []*torch.Tensor {
	if m.lora != nil {
		return m.lora.params()
	}
	return m.base()
}

// alive reports torch.ErrFreed once the model is closed.
func (m *Model) alive() error {
	if !m.embed.Valid() {
		return fmt.Errorf("llm: model is closed: %w", torch.ErrFreed)
	}
	return nil
}

// Close frees every tensor of the model. Using the model afterwards fails
// with torch.ErrFreed.
func (m *Model) Close() {
	for _, p := range m.named {
		p.T.Free()
	}
	m.named = nil
	for _, t := range m.base() {
		t.Free()
	}
	m.cos.Free()
	m.sin.Free()
	if m.lora != nil {
		m.lora.close()
		m.lora = nil
	}
}

// Clone returns a deep copy (its own tensors, same LoRA state).
func (m *Model) Clone() (*Model, error) {
	if err := m.alive(); err != nil {
		return nil, err
	}
	c, err := alloc(m.cfg, m.opt)
	if err != nil {
		return nil, err
	}
	c.genConfig = append([]byte(nil), m.genConfig...)
	if m.lora != nil {
		if err := c.EnableLoRA(m.lora.cfg); err != nil {
			c.Close()
			return nil, err
		}
	}
	if err := c.CopyWeightsFrom(m); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// CopyWeightsFrom copies o's parameters (and LoRA adapters, when both have
// the same LoRA setup) into m. The configs must have the same shapes.
func (m *Model) CopyWeightsFrom(o *Model) error {
	if err := errors.Join(m.alive(), o.alive()); err != nil {
		return err
	}
	a, b := m.base(), o.base()
	if len(a) != len(b) {
		return fmt.Errorf("llm: copy weights: %d parameters vs %d", len(a), len(b))
	}
	if (m.lora == nil) != (o.lora == nil) {
		return fmt.Errorf("llm: copy weights: LoRA on one model only")
	}
	if m.lora != nil {
		a = append(a, m.lora.params()...)
		b = append(b, o.lora.params()...)
		if len(a) != len(b) {
			return fmt.Errorf("llm: copy weights: LoRA setups differ")
		}
	}
	for i := range a {
		if !sameShape(a[i].Shape(), b[i].Shape()) {
			return fmt.Errorf("llm: copy weights: parameter %d has shape %v vs %v", i, a[i].Shape(), b[i].Shape())
		}
	}
	s := torch.NewScope()
	defer s.Close()
	for i := range a {
		s.CopyInto(a[i], b[i])
	}
	if err := s.Err(); err != nil {
		return fmt.Errorf("llm: copy weights: %w", err)
	}
	return nil
}

func sameShape(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// weights assembles the fused-forward argument.
func (m *Model) weights(withHead bool) *fused.Weights {
	w := &fused.Weights{Embed: m.embed, Layers: fusedLayers(m.layers), Norm: m.norm}
	if withHead {
		w.Head = m.head
		if w.Head == nil {
			w.Head = m.embed
		}
	}
	if m.lora != nil {
		w.LoRA = m.lora.layers
		w.LoRAScale = m.lora.scale
	}
	return w
}

// computeWeights is weightsIn the compute dtype.
func (m *Model) computeWeights(s *torch.Scope) (*fused.Weights, *torch.Tensor) {
	return m.weightsIn(s, m.ComputeDType())
}

// genDType is the dtype generation computes in: the compute dtype when it
// is bf16 (veRL's rollout dtype), else the parameters' (a float16 rollout
// risks overflow, and CPU libtorch has no float16 matmul).
func (m *Model) genDType() torch.DType {
	if dt := m.ComputeDType(); dt == torch.BFloat16 {
		return dt
	}
	return m.opt.DType
}

// weightsIn is weights(false) and the LM head in dt: casts made in s where
// dt differs from the parameters' dtype (mixed precision), the parameters
// themselves otherwise.
func (m *Model) weightsIn(s *torch.Scope, dt torch.DType) (*fused.Weights, *torch.Tensor) {
	w, head := m.weights(false), m.headIn(s, dt)
	if dt == m.opt.DType {
		return w, head
	}
	if m.head == nil {
		w.Embed = head // tied: one cast serves both
	} else {
		w.Embed = s.Cast(m.embed, dt)
	}
	w.Norm = s.Cast(m.norm, dt)
	for i := range m.layers {
		w.Layers[i] = fusedLayers([]layer{*castLayer(s, &m.layers[i], dt)})[0]
	}
	for i := range w.LoRA {
		w.LoRA[i] = *castLoRA(s, &m.lora.layers[i], dt)
	}
	return w, head
}

func (m *Model) shape() fused.Shape {
	return fused.Shape{Heads: m.cfg.NumAttentionHeads, KVHeads: m.cfg.NumKeyValueHeads,
		HeadDim: m.cfg.HeadDimension(), Eps: m.cfg.RMSNormEps}
}

// Forward runs teacher forcing. ids, positions: (B,T) int64; attn: (B,T)
// 0/1 (left or right padding). It returns (B,T,V) logits in the model's
// dtype, with gradients unless grad mode is off (torch.NoGrad).
func (m *Model) Forward(s *torch.Scope, ids, positions, attn *torch.Tensor) *torch.Tensor {
	return m.forward(s, ids, positions, attn, true)
}

// Hidden returns the final normalised hidden states (B,T,E).
func (m *Model) Hidden(s *torch.Scope, ids, positions, attn *torch.Tensor) *torch.Tensor {
	return m.forward(s, ids, positions, attn, false)
}

// forward is the Go forward (the family's file), for training and
// scoring; generation (prefill with the KV cache, decode) calls the fused
// C++ forward, faster there. Both agree to float32 rounding
// (TestFusedMatchesGo); BenchmarkForwardPaths compares their speed on
// teacher-forced batches, where they measure alike.
func (m *Model) forward(s *torch.Scope, ids, positions, attn *torch.Tensor, head bool) *torch.Tensor {
	return m.goForward(s, ids, positions, attn, head)
}

// logProbChunk is the time chunk of the LM head and log-softmax over n
// rows: about 32M logits on a CPU (a chunk stays in cache-friendly sizes),
// 512M (2 GiB of float32) on a GPU, where small chunks leave the head's
// matmul too few rows to fill the device.
func (m *Model) logProbChunk(n int64) int64 {
	elems := int64(1 << 25)
	if m.opt.Device.IsCUDA() {
		elems = 1 << 29
	}
	return max(elems/max(1, n*int64(m.cfg.VocabSize)), 1)
}

// TokenLogProbs returns logp[b,t] = log softmax(logits[b,t-1]/temperature)[ids[b,t]]
// for t >= 1 and 0 at t = 0, as float32 (B,T); entropy likewise (nil unless
// withEntropy). The LM head and log-softmax run over time chunks of about
// 32M logits (512M on a GPU), so the full (B,T,V) logits never exist at once (without
// gradients; with gradients autograd keeps each chunk for the backward
// pass). With gradients unless called inside torch.NoGrad.
func (m *Model) TokenLogProbs(s *torch.Scope, ids, positions, attn *torch.Tensor, temperature float64, withEntropy bool) (logp, entropy *torch.Tensor) {
	if !(temperature > 0) {
		s.Errorf("llm_token_logprobs", "temperature must be > 0, got %g", temperature)
		return nil, nil
	}
	h := m.Hidden(s, ids, positions, attn)
	if h == nil {
		return nil, nil
	}
	head := m.computeHead(s)
	return s.HeadLogProbs(h, head, ids, temperature, withEntropy, m.logProbChunk(h.Size(0)))
}
