package llm

import (
	"context"
	"fmt"
	"sync"

	"ragen/collapse"
	"ragen/llm/tokenizer"
	"ragen/ragen"
	"ragen/torch"
)

// PolicyOptions configure NewPolicy.
type PolicyOptions struct {
	// MaxBatch bounds the prompts decoded together (0: all in one batch).
	MaxBatch int
	// Seed seeds sampling; call k of Generate uses Seed + k so that
	// successive calls differ but a run is reproducible.
	Seed uint64
}

type policy struct {
	m   *Model
	tok tokenizer.Tokenizer
	opt PolicyOptions
	mu  sync.Mutex
	n   uint64
}

// NewPolicy adapts a model to ragen.Policy: requests with the same sampling
// parameters are decoded together (in batches of at most MaxBatch), greedy
// when DoSample is false or the temperature is 0, TopK −1 meaning off.
// Requests without IDs are encoded from Prompt.
func NewPolicy(m *Model, tok tokenizer.Tokenizer, opt PolicyOptions) ragen.Policy {
	return &policy{m: m, tok: tok, opt: opt}
}

func genOptions(sp ragen.SamplingParams, seed uint64) GenOptions {
	o := GenOptions{MaxNewTokens: sp.MaxNewTokens, Temperature: sp.Temperature, TopP: sp.TopP,
		TopK: sp.TopK, StopStrings: sp.Stop, Seed: seed}
	if !sp.DoSample {
		o.Temperature = 0
	}
	if o.TopK < 0 {
		o.TopK = 0
	}
	return o
}

func spKey(sp ragen.SamplingParams) string { return fmt.Sprintf("%#v", sp) }

// Generate implements ragen.Policy.
func (p *policy) Generate(ctx context.Context, reqs []ragen.GenRequest) ([]ragen.Generation, error) {
	p.mu.Lock() // one model, one caller at a time
	defer p.mu.Unlock()
	seed := p.opt.Seed + p.n
	p.n++
	out := make([]ragen.Generation, len(reqs))
	groups := map[string][]int{}
	var order []string
	for i, r := range reqs {
		k := spKey(r.Sampling)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	for gi, k := range order {
		idx := groups[k]
		bs := p.opt.MaxBatch
		if bs < 1 {
			bs = len(idx)
		}
		for start := 0; start < len(idx); start += bs {
			part := idx[start:min(start+bs, len(idx))]
			prompts := make([][]int, len(part))
			for j, i := range part {
				prompts[j] = reqs[i].IDs
				if len(prompts[j]) == 0 {
					prompts[j] = p.tok.Encode(reqs[i].Prompt)
				}
			}
			sp := reqs[part[0]].Sampling
			res, err := p.m.Generate(ctx, p.tok, prompts, genOptions(sp, seed+uint64(1000*gi+start)))
			if err != nil {
				return nil, fmt.Errorf("llm: policy: %w", err)
			}
			for j, i := range part {
				out[i] = ragen.Generation{Text: res[j].Text, IDs: res[j].IDs, LogProbs: res[j].LogProbs, FinishReason: res[j].FinishReason}
			}
		}
	}
	return out, nil
}

// Scorer scores reasoning under prompts with a model (collapse.Scorer).
type Scorer struct {
	M           *Model
	MicroBatch  int     // pairs per forward pass
	Temperature float64 // logits are divided by it (rollout temperature)
}

// NewScorer returns a collapse.Scorer over m with temperature 1.
func NewScorer(m *Model, microBatch int) collapse.Scorer {
	return NewScorerTemperature(m, microBatch, 1)
}

// NewScorerTemperature returns a collapse.Scorer dividing logits by temperature.
func NewScorerTemperature(m *Model, microBatch int, temperature float64) *Scorer {
	return &Scorer{M: m, MicroBatch: microBatch, Temperature: temperature}
}

// ScoreReasoning implements collapse.Scorer: for each pair, the sum of
// log p(z_t | x, z_<t) over the reasoning ids z given the prompt ids x,
// without gradients. Sequences [x ‖ z] are right-padded per micro-batch.
func (sc *Scorer) ScoreReasoning(ctx context.Context, pairs []collapse.Pair) ([]collapse.Score, error) {
	mb := max(sc.MicroBatch, 1)
	temp := sc.Temperature
	if temp == 0 {
		temp = 1
	}
	out := make([]collapse.Score, len(pairs))
	for i, p := range pairs {
		if len(p.Prompt) == 0 {
			return nil, fmt.Errorf("llm: scorer: pair %d has an empty prompt", i)
		}
		out[i].Tokens = len(p.Reasoning)
	}
	for start := 0; start < len(pairs); start += mb {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("llm: scorer: %w", err)
		}
		part := pairs[start:min(start+mb, len(pairs))]
		seqs := make([][]int, len(part))
		for j, p := range part {
			seqs[j] = append(append(make([]int, 0, len(p.Prompt)+len(p.Reasoning)), p.Prompt...), p.Reasoning...)
		}
		err := torch.NoGrad(func() error {
			s := torch.NewScope()
			defer s.Close()
			ids, pos, attn := PadBatch(s, seqs, 0, false, sc.M.opt.Device)
			lp, _ := sc.M.TokenLogProbs(s, ids, pos, attn, temp, false)
			vals := s.Float32s(lp)
			if err := s.Err(); err != nil {
				return err
			}
			T := len(vals) / len(part)
			for j, p := range part {
				sum := 0.0
				for t := len(p.Prompt); t < len(p.Prompt)+len(p.Reasoning); t++ {
					sum += float64(vals[j*T+t])
				}
				out[start+j].SumLogProb = sum
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("llm: scorer: %w", err)
		}
	}
	return out, nil
}
