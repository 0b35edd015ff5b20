// Package llmpolicy adapts an in-process [llm.Model] to [ragen.Policy], so
// that package llm, below the rollout core, does not import it.
package llmpolicy
