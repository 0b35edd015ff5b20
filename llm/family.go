package llm

import (
	"fmt"
	"math"
	"sort"

	"ragen/internal/torch/fused"
	"ragen/torch"
)

// A family is one decoder architecture (config.json's model_type). Each
// lives in its own file (qwen2.go, llama.go, qwen3.go): its HF weight table,
// its config defaults and checks, its rotary frequencies and its layer
// forward in Go. Everything else (load/save, generation, scoring, LoRA,
// critic, the fused C++ fast path) works on weight roles and serves every
// family unchanged. doc/design.md has the checklist for adding one.
type family struct {
	modelType string
	arch      string     // architectures[0] written by TinyConfigFor
	weights   []hfWeight // per-layer table, HF state_dict order, names under "model.layers.N."
	// defaults sets HF's defaults for keys config.json may omit.
	defaults func(*Config)
	// check returns the family's own config problems.
	check func(Config) []string
	// invFreq returns the D/2 rotary inverse frequencies (RoPE scaling included).
	invFreq func(Config) []float64
	// layer is one decoder layer of the Go forward: x (B,T,E) -> (B,T,E).
	layer func(b *block, x *torch.Tensor) *torch.Tensor
}

var families = map[string]*family{}

func register(f *family) { families[f.modelType] = f }

// Families returns the supported model_type values, sorted.
func Families() []string {
	out := make([]string, 0, len(families))
	for k := range families {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// familyOf returns the family of cfg ("" is qwen2).
func familyOf(cfg Config) (*family, error) {
	mt := cfg.ModelType
	if mt == "" {
		mt = "qwen2"
	}
	f, ok := families[mt]
	if !ok {
		return nil, fmt.Errorf("llm: config: model_type %q is not supported (valid: %v)", cfg.ModelType, Families())
	}
	return f, nil
}

// The non-layer HF parameters, shared by every family.
const (
	nameEmbed = "model.embed_tokens.weight"
	nameNorm  = "model.norm.weight"
	nameHead  = "lm_head.weight"
)

// role is what a layer weight does; the fused forward takes the same roles
// (fused.Layer). q/k/v and gate/up are stored stacked: one matmul each.
type role int

const (
	rLn1     role = iota // (E) input RMSNorm
	rQKV                 // (Q+2K,E) q, k, v projections stacked
	rQKVBias             // (Q+2K)
	rQNorm               // (D) per-head RMSNorm of q
	rKNorm               // (D) per-head RMSNorm of k
	rO                   // (E,Q)
	rLn2                 // (E) post-attention RMSNorm
	rGateUp              // (2I,E) gate and up projections stacked
	rDown                // (E,I)
	nRoles
)

// part is the rows of a role's tensor one HF parameter covers.
type part int

const (
	pAll part = iota
	pQ
	pK
	pV
	pGate
	pUp
)

// hfWeight maps one per-layer HF parameter onto a role (and rows of it).
type hfWeight struct {
	name string
	role role
	part part
}

// layer holds one decoder layer's weights by role (nil: the family has none).
type layer [nRoles]*torch.Tensor

func (r role) isNorm() bool { return r == rLn1 || r == rLn2 || r == rQNorm || r == rKNorm }

// shape of role r's tensor under cfg.
func (r role) shape(c Config) []int64 {
	E, I, D := int64(c.HiddenSize), int64(c.IntermediateSize), int64(c.HeadDimension())
	Q, K := int64(c.NumAttentionHeads)*D, int64(c.NumKeyValueHeads)*D
	switch r {
	case rLn1, rLn2:
		return []int64{E}
	case rQKV:
		return []int64{Q + 2*K, E}
	case rQKVBias:
		return []int64{Q + 2*K}
	case rQNorm, rKNorm:
		return []int64{D}
	case rO:
		return []int64{E, Q}
	case rGateUp:
		return []int64{2 * I, E}
	default: // rDown
		return []int64{E, I}
	}
}

// rows returns the first row and the row count of part p on dim 0.
func (p part) rows(c Config, full int64) (int64, int64) {
	D := int64(c.HeadDimension())
	Q, K, I := int64(c.NumAttentionHeads)*D, int64(c.NumKeyValueHeads)*D, int64(c.IntermediateSize)
	switch p {
	case pQ:
		return 0, Q
	case pK:
		return Q, K
	case pV:
		return Q + K, K
	case pGate:
		return 0, I
	case pUp:
		return I, I
	}
	return 0, full
}

// roles lists the roles f's table uses, in role order.
func (f *family) roles() []role {
	var has [nRoles]bool
	for _, w := range f.weights {
		has[w.role] = true
	}
	var out []role
	for r := role(0); r < nRoles; r++ {
		if has[r] {
			out = append(out, r)
		}
	}
	return out
}

// paramShapes lists the HF parameters with their shapes, in the order HF's
// state_dict has them.
func (c Config) paramShapes() []NamedShape {
	f, err := familyOf(c)
	if err != nil {
		return nil
	}
	E, V := int64(c.HiddenSize), int64(c.VocabSize)
	out := []NamedShape{{nameEmbed, []int64{V, E}}}
	for i := 0; i < c.NumHiddenLayers; i++ {
		for _, w := range f.weights {
			sh := w.role.shape(c)
			_, n := w.part.rows(c, sh[0])
			sh = append([]int64{n}, sh[1:]...)
			out = append(out, NamedShape{fmt.Sprintf("model.layers.%d.%s", i, w.name), sh})
		}
	}
	out = append(out, NamedShape{nameNorm, []int64{E}})
	if !c.TieWordEmbeddings {
		out = append(out, NamedShape{nameHead, []int64{V, E}})
	}
	return out
}

// fusedLayers gives the fused forward the layers by role.
func fusedLayers(ls []layer) []fused.Layer {
	out := make([]fused.Layer, len(ls))
	for i, l := range ls {
		out[i] = fused.Layer{Ln1: l[rLn1], QKV: l[rQKV], QKVBias: l[rQKVBias], QNorm: l[rQNorm], KNorm: l[rKNorm],
			O: l[rO], Ln2: l[rLn2], GateUp: l[rGateUp], Down: l[rDown]}
	}
	return out
}

// ropeInvFreq is the plain rotary frequency table: 1 / theta^(2j/D).
func ropeInvFreq(c Config) []float64 {
	D := c.HeadDimension()
	inv := make([]float64, D/2)
	for j := range inv {
		inv[j] = 1 / math.Pow(c.RopeTheta, float64(2*j)/float64(D))
	}
	return inv
}

// noRopeScaling is the check of families that take no rope_scaling.
func noRopeScaling(c Config) []string {
	if c.RopeScaling != nil {
		return []string{fmt.Sprintf("rope_scaling is not supported for %s (got %v)", c.ModelType, c.RopeScaling)}
	}
	return nil
}
