package llmpolicy

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"ragen/llm"
	"ragen/llm/tokenizer"
	"ragen/ragen"
)

// Options configure New.
type Options struct {
	// MaxBatch bounds the prompts decoded together (0: all in one batch).
	MaxBatch int
	// Seed seeds sampling; call k of Generate uses Seed + k so that
	// successive calls differ but a run is reproducible. Requests that
	// carry their own stream seed (GenRequest.Seeded, as the rollout sets
	// them) sample from that stream instead, so their tokens do not depend
	// on the batch they share, the call, or the rank that decodes them.
	Seed uint64
	// NoPrefixCaching prefills every prompt in full. By default requests
	// that carry a prefix key (GenRequest.PrefixKey, which the rollout sets
	// when rollout.enable_prefix_caching is on) reuse the KV their
	// trajectory's earlier turns computed, and identical prompts of one
	// batch are prefilled once (llm.PrefixCache); the policy frees the
	// cache when the rollout ends (ragen.RolloutScoped).
	NoPrefixCaching bool
	// PrefixCacheTokens caps the tokens of KV the cache keeps (0:
	// llm.DefaultPrefixCacheTokens), the least recently used going first.
	PrefixCacheTokens int
}

// Metric keys of a rollout's generation (ragen.Batch.GenMetrics, this
// rank's), which the trainer logs with its step.
const (
	MetricPrefillTime   = "timing_s/gen_prefill"      // prefill wall time, KV reuse included
	MetricDecodeTime    = "timing_s/gen_decode"       // decode wall time
	MetricPromptTokens  = "perf/gen_prompt_tokens"    // prompt tokens generated from
	MetricPrefillTokens = "perf/gen_prefill_tokens"   // token slots the prefill computed
	MetricReusedTokens  = "perf/gen_prefix_reused"    // prompt tokens whose KV an earlier turn computed
	MetricSharedTokens  = "perf/gen_prefix_shared"    // prompt tokens copied from an identical prompt of the batch
	MetricEvictions     = "perf/gen_prefix_evictions" // cache entries dropped to stay under the cap
)

type policy struct {
	m   *llm.Model
	tok tokenizer.Tokenizer
	opt Options
	mu  sync.Mutex
	n   uint64
	// cache holds the current rollout's trajectories (nil until a keyed
	// request); stats count the rollout's generation, total all of them
	cache        *llm.PrefixCache
	stats, total llm.PrefixStats
}

// New adapts a model to ragen.Policy: requests with the same sampling
// parameters are decoded together (in batches of at most MaxBatch), greedy
// when DoSample is false or the temperature is 0, TopK −1 meaning off.
// Requests without IDs are encoded from Prompt.
func New(m *llm.Model, tok tokenizer.Tokenizer, opt Options) ragen.Policy {
	return &policy{m: m, tok: tok, opt: opt}
}

func genOptions(sp ragen.SamplingParams, seed uint64) llm.GenOptions {
	o := llm.GenOptions{MaxNewTokens: sp.MaxNewTokens, Temperature: sp.Temperature, TopP: sp.TopP,
		TopK: sp.TopK, StopStrings: sp.Stop, Seed: seed, AllowedIDs: sp.AllowedTokenIDs}
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
			o := genOptions(sp, seed+uint64(1000*gi+start))
			o.RowSeeds = rowSeeds(reqs, part)
			o.NoPrefixCaching = p.opt.NoPrefixCaching
			for _, i := range part {
				o.NoPrefixCaching = o.NoPrefixCaching || reqs[i].PrefixKey == ""
			}
			var stats *llm.PrefixCache // without keys: a call's own counters
			if !o.NoPrefixCaching {
				if p.cache == nil {
					p.cache = llm.NewPrefixCache(p.opt.PrefixCacheTokens)
				}
				o.Prefix, o.PrefixKeys, stats = p.cache, make([]string, len(part)), p.cache
				for j, i := range part {
					o.PrefixKeys[j] = reqs[i].PrefixKey
				}
			} else {
				stats = llm.NewPrefixCache(1)
				o.Prefix = stats
			}
			before := stats.Stats()
			res, err := p.m.Generate(ctx, p.tok, prompts, o)
			p.stats = addStats(p.stats, stats.Stats(), before)
			if o.Prefix != p.cache {
				stats.Close()
			}
			if err != nil {
				return nil, fmt.Errorf("llmpolicy: %w", err)
			}
			for j, i := range part {
				out[i] = ragen.Generation{Text: res[j].Text, IDs: res[j].IDs, LogProbs: res[j].LogProbs, FinishReason: res[j].FinishReason}
			}
		}
	}
	return out, nil
}

// EndRollout frees the prefix cache of the rollout that ended and returns
// its generation metrics (ragen.RolloutScoped).
func (p *policy) EndRollout() map[string]float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cache != nil {
		p.cache.Close()
		p.cache = nil
	}
	st := p.stats
	p.total = addStats(p.total, st, llm.PrefixStats{})
	p.stats = llm.PrefixStats{}
	return map[string]float64{
		MetricPrefillTime: st.Prefill.Seconds(), MetricDecodeTime: st.Decode.Seconds(),
		MetricPromptTokens: float64(st.PromptTokens), MetricPrefillTokens: float64(st.PrefilledTokens),
		MetricReusedTokens: float64(st.ReusedTokens), MetricSharedTokens: float64(st.SharedTokens),
		MetricEvictions: float64(st.Evictions),
	}
}

// Stats returns the generation counters of every rollout p ran so far
// (the ones ended) when p is a policy of New.
func Stats(p ragen.Policy) (llm.PrefixStats, bool) {
	q, ok := p.(*policy)
	if !ok {
		return llm.PrefixStats{}, false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.total, true
}

// addStats returns acc plus (now - before).
func addStats(acc, now, before llm.PrefixStats) llm.PrefixStats {
	acc.Prompts += now.Prompts - before.Prompts
	acc.PromptTokens += now.PromptTokens - before.PromptTokens
	acc.ReusedTokens += now.ReusedTokens - before.ReusedTokens
	acc.SharedTokens += now.SharedTokens - before.SharedTokens
	acc.PrefilledTokens += now.PrefilledTokens - before.PrefilledTokens
	acc.Evictions += now.Evictions - before.Evictions
	acc.Prefill += now.Prefill - before.Prefill
	acc.Decode += now.Decode - before.Decode
	return acc
}

// rowSeeds returns the requests' own stream seeds when every request of
// the part carries one (else nil: the call's shared generator).
func rowSeeds(reqs []ragen.GenRequest, part []int) []uint64 {
	out := make([]uint64, len(part))
	for j, i := range part {
		if !reqs[i].Seeded {
			return nil
		}
		out[j] = reqs[i].Seed
	}
	return out
}

// policyState is what a checkpoint needs to continue a policy's sampling
// stream exactly: the number of Generate calls made so far.
type policyState struct {
	Calls uint64 `json:"calls"`
}

// MarshalState returns the policy's sampling position (starpo.Stateful).
func (p *policy) MarshalState() ([]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return json.Marshal(policyState{Calls: p.n})
}

// UnmarshalState restores a position written by MarshalState.
func (p *policy) UnmarshalState(b []byte) error {
	var st policyState
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("llmpolicy: state: %w", err)
	}
	p.mu.Lock()
	p.n = st.Calls
	p.mu.Unlock()
	return nil
}
