package ragen

import (
	"context"
	"fmt"
	"time"

	"ragen/llm/tokenizer"
)

// SamplingParams are the generation settings of one request.
type SamplingParams struct {
	DoSample     bool
	Temperature  float64
	TopP         float64
	TopK         int // −1 = off
	MaxNewTokens int
	Stop         []string // extra stop strings (EOS always stops)
	// AllowedTokenIDs, if set, restricts every generated token to these
	// ids (vLLM's allowed_token_ids); policies that cannot restrict
	// tokens (API models) pass it on or refuse it.
	AllowedTokenIDs []int
}

// GenRequest is one prompt for the model.
type GenRequest struct {
	EnvID    int
	Turn     int                 // 0-based turn of the episode
	Messages []tokenizer.Message // chat messages (API models)
	Prompt   string              // rendered prompt incl. the forced prefix
	IDs      []int               // token ids of Prompt
	Sampling SamplingParams
	// Seed, when Seeded, is this request's own sampling stream: the
	// rollout derives it from the env's reset seed, env id and turn
	// (StreamSeed), so a trajectory samples the same tokens whichever rank,
	// batch or batch row decodes it. Policies that cannot seed per request
	// ignore it.
	Seed   uint64
	Seeded bool
	// PrefixKey names the trajectory the request continues (the same for
	// every turn of one env in one rollout, distinct otherwise), so that
	// a policy with a prefix cache reuses the KV of the trajectory's
	// earlier turns. The rollout sets it when rollout.enable_prefix_caching
	// is on; empty, a policy prefills the prompt in full.
	PrefixKey string
}

// Generation is the model's answer to one request.
type Generation struct {
	Text         string    // decoded response, special tokens skipped, without the forced prefix
	IDs          []int     // response token ids (empty for API models)
	LogProbs     []float64 // per-token sampling log-probs (may be empty)
	FinishReason string    // "stop", "length", ... when known
}

// Policy generates responses for a batch of requests; the result has one
// Generation per request, in order. Implementations batch as they like.
type Policy interface {
	Generate(ctx context.Context, reqs []GenRequest) ([]Generation, error)
}

// RolloutScoped is implemented by policies that keep state over the turns
// of a rollout, such as the KV caches of its trajectories (prefix caching).
// The agent proxy calls EndRollout once a rollout's turns are done, failed
// or not: the policy frees that state and returns its own metrics of the
// rollout (this rank's: timings and cache counters; may be nil), which the
// batch carries as Batch.GenMetrics.
type RolloutScoped interface {
	EndRollout() map[string]float64
}

// ScriptFunc returns the response of env envID at turn turn.
type ScriptFunc func(envID, turn int, req GenRequest) (string, error)

// ScriptedPolicy is a deterministic Policy for tests and benchmarks: it
// answers from per-env scripts or a function, with optional latency per
// Generate call to stand in for a model.
type ScriptedPolicy struct {
	// Scripts[envID][turn] is the response; used when Func is nil. A turn
	// past the end of a script repeats the last response.
	Scripts map[int][]string
	// Func, if set, computes every response.
	Func ScriptFunc
	// Latency is slept once per Generate call (honouring ctx).
	Latency time.Duration
	// PerRequest is slept additionally per request of the call.
	PerRequest time.Duration
}

// Generate implements Policy.
func (p *ScriptedPolicy) Generate(ctx context.Context, reqs []GenRequest) ([]Generation, error) {
	if d := p.Latency + time.Duration(len(reqs))*p.PerRequest; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("ragen: scripted policy: %w", ctx.Err())
		case <-t.C:
		}
	}
	out := make([]Generation, len(reqs))
	for i, r := range reqs {
		var text string
		switch {
		case p.Func != nil:
			s, err := p.Func(r.EnvID, r.Turn, r)
			if err != nil {
				return nil, fmt.Errorf("ragen: scripted policy: env %d turn %d: %w", r.EnvID, r.Turn, err)
			}
			text = s
		default:
			sc := p.Scripts[r.EnvID]
			if len(sc) == 0 {
				return nil, fmt.Errorf("ragen: scripted policy: no script for env %d", r.EnvID)
			}
			text = sc[min(r.Turn, len(sc)-1)]
		}
		out[i] = Generation{Text: text, FinishReason: "stop"}
	}
	return out, nil
}
