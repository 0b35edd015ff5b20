// Package llmpolicy adapts an in-process [llm.Model] to [ragen.Policy], so
// that package llm, below the rollout core, does not import it.
//
// The policy keeps one llm.PrefixCache per rollout: requests with a
// ragen.GenRequest.PrefixKey reuse the KV of their trajectory's earlier
// turns and share a group's identical first prompts; EndRollout frees the
// cache and reports the rollout's prefill and decode time and token counts
// (Metric* keys), which the trainer logs with its step.
package llmpolicy
