package llm

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"ragen/torch"
)

// LoRA target module names, in the order the fused forward takes them.
var loraTargets = []string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}

// LoRAConfig configures low-rank adapters (PEFT's LoraConfig).
type LoRAConfig struct {
	Rank  int     // r
	Alpha float64 // lora_alpha; the update is scaled by Alpha/Rank
	// Targets are module names (q_proj, k_proj, v_proj, o_proj, gate_proj,
	// up_proj, down_proj) or the single entry "all-linear" (all seven; the
	// LM head is never adapted).
	Targets []string
	Seed    uint64 // seed of the A initialisation
}

// Validate reports every problem of the config at once.
func (c LoRAConfig) Validate() error {
	var errs []error
	if c.Rank < 1 {
		errs = append(errs, fmt.Errorf("llm: lora: rank must be >= 1, got %d", c.Rank))
	}
	if !(c.Alpha > 0) {
		errs = append(errs, fmt.Errorf("llm: lora: alpha must be > 0, got %g", c.Alpha))
	}
	if len(c.Targets) == 0 {
		errs = append(errs, errors.New("llm: lora: no target modules"))
	}
	for _, t := range c.Targets {
		if t != "all-linear" && targetIndex(t) < 0 {
			errs = append(errs, fmt.Errorf("llm: lora: unknown target module %q (valid: %s, all-linear)", t, strings.Join(loraTargets, ", ")))
		}
	}
	return errors.Join(errs...)
}

func targetIndex(name string) int {
	for i, t := range loraTargets {
		if t == name {
			return i
		}
	}
	return -1
}

// ParseTargets splits "q_proj,v_proj" or "all-linear" into a target list.
func ParseTargets(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

type loraState struct {
	cfg    LoRAConfig
	scale  float64
	layers [][14]*torch.Tensor // (A,B) per target; nil when off
	on     [7]bool
}

func (l *loraState) params() []*torch.Tensor {
	var out []*torch.Tensor
	for _, ab := range l.layers {
		for _, t := range ab {
			if t != nil {
				out = append(out, t)
			}
		}
	}
	return out
}

func (l *loraState) close() {
	for _, t := range l.params() {
		t.Free()
	}
}

// targetDims returns (in, out) features of target i.
func (m *Model) targetDims(i int) (int64, int64) {
	E, I := int64(m.cfg.HiddenSize), int64(m.cfg.IntermediateSize)
	switch loraTargets[i] {
	case "q_proj":
		return E, int64(m.q())
	case "k_proj", "v_proj":
		return E, int64(m.kv())
	case "o_proj":
		return int64(m.q()), E
	case "gate_proj", "up_proj":
		return E, I
	default: // down_proj
		return I, E
	}
}

// EnableLoRA adds adapters to the target projections of every layer and
// freezes the base weights: Trainable then returns only the adapters. A is
// initialised like PEFT (Kaiming-uniform, a=√5: U(−1/√in, 1/√in)), B with
// zeros, so the model's outputs are unchanged until B trains.
func (m *Model) EnableLoRA(c LoRAConfig) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if err := m.alive(); err != nil {
		return err
	}
	if m.lora != nil {
		return errors.New("llm: lora: already enabled")
	}
	st := &loraState{cfg: c, scale: c.Alpha / float64(c.Rank)}
	for _, t := range c.Targets {
		if t == "all-linear" {
			for i := range st.on {
				st.on[i] = true
			}
		} else {
			st.on[targetIndex(t)] = true
		}
	}
	g, err := torch.NewGenerator(c.Seed, torch.CPU)
	if err != nil {
		return fmt.Errorf("llm: lora: %w", err)
	}
	defer g.Close()
	s := torch.NewScope()
	defer s.Close()
	r := int64(c.Rank)
	for range m.layers {
		var ab [14]*torch.Tensor
		for i, on := range st.on {
			if !on {
				continue
			}
			in, out := m.targetDims(i)
			bound := 1 / math.Sqrt(float64(in))
			a := s.AddS(s.MulS(s.Rand(g, []int64{r, in}, torch.Float32, torch.CPU), 2*bound), -bound)
			ab[2*i] = s.Escape(s.To(a, m.opt.DType, m.opt.Device))
			ab[2*i+1] = s.Escape(s.Zeros([]int64{out, r}, m.opt.DType, m.opt.Device))
		}
		st.layers = append(st.layers, ab)
	}
	if err := s.Err(); err != nil {
		st.close()
		return fmt.Errorf("llm: lora: %w", err)
	}
	for _, t := range st.params() {
		if err := t.SetRequiresGrad(true); err != nil {
			st.close()
			return fmt.Errorf("llm: lora: %w", err)
		}
	}
	for _, t := range m.base() {
		if err := t.SetRequiresGrad(false); err != nil {
			st.close()
			return fmt.Errorf("llm: lora: %w", err)
		}
	}
	m.lora = st
	return nil
}

// LoRAParams returns the adapters under PEFT-style names
// (model.layers.N.self_attn.q_proj.lora_A.weight, ...), sorted.
func (m *Model) LoRAParams() []NamedParam {
	if m.lora == nil {
		return nil
	}
	var out []NamedParam
	for li, ab := range m.lora.layers {
		for i, t := range loraTargets {
			if ab[2*i] == nil {
				continue
			}
			mod := "self_attn."
			if i >= 4 {
				mod = "mlp."
			}
			p := fmt.Sprintf("model.layers.%d.%s%s.", li, mod, t)
			out = append(out, NamedParam{p + "lora_A.weight", ab[2*i]}, NamedParam{p + "lora_B.weight", ab[2*i+1]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// mergedParams returns the HF-named parameters with LoRA merged
// (W + scale·B·A), as tensors owned by s.
func (m *Model) mergedParams(s *torch.Scope) []NamedParam {
	if m.lora == nil {
		return m.Params()
	}
	out := make([]NamedParam, 0, len(m.named))
	for _, p := range m.named {
		t := p.T
		for li := range m.layers {
			pre := fmt.Sprintf("model.layers.%d.", li)
			if !strings.HasPrefix(p.Name, pre) || !strings.HasSuffix(p.Name, "_proj.weight") {
				continue
			}
			rest := strings.TrimSuffix(p.Name[len(pre):], ".weight")
			rest = rest[strings.IndexByte(rest, '.')+1:]
			i := targetIndex(rest)
			ab := m.lora.layers[li]
			if i >= 0 && ab[2*i] != nil {
				d := s.MulS(s.MatMul(s.Cast(ab[2*i+1], torch.Float32), s.Cast(ab[2*i], torch.Float32)), m.lora.scale)
				t = s.Cast(s.Add(s.Cast(p.T, torch.Float32), d), p.T.DType())
			}
		}
		out = append(out, NamedParam{p.Name, t})
	}
	return out
}

// MergeLoRA folds the adapters into the base weights and turns LoRA off;
// the base weights become trainable again.
func (m *Model) MergeLoRA() error {
	if m.lora == nil {
		return nil
	}
	s := torch.NewScope()
	defer s.Close()
	merged := m.mergedParams(s)
	for i, p := range merged {
		if p.T != m.named[i].T {
			s.CopyInto(m.named[i].T, p.T)
		}
	}
	if err := s.Err(); err != nil {
		return fmt.Errorf("llm: merge lora: %w", err)
	}
	m.lora.close()
	m.lora = nil
	for _, t := range m.base() {
		if err := t.SetRequiresGrad(true); err != nil {
			return fmt.Errorf("llm: merge lora: %w", err)
		}
	}
	return nil
}
