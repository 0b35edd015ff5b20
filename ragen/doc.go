// Package ragen is the rollout core of the RAGEN port: it turns text
// environments and a language-model policy into multi-turn trajectories and
// training batches (shared spec context-and-rollout.md).
//
//   - EnvStateManager owns the envs of one mode (train or val): it builds
//     env_groups × group_size envs from tags, resets every group from one
//     seed, executes parsed actions on a bounded goroutine pool with a
//     per-call timeout, applies the per-episode action cap and the format
//     penalty, records histories and computes upstream's per-env metrics.
//   - ContextManager renders system and per-turn prompts in the three
//     context-window modes (full, limited_multi_turn, single_turn), parses
//     <think>…</think><answer>…</answer> responses into actions and builds
//     the training sequences: input ids, attention mask, position ids, loss
//     and response masks, token-level scores, reward normalisation.
//   - AgentProxy runs the turn loop against a Policy and returns a Batch of
//     plain Go slices; with agent_proxy.pipeline_parts > 1 envs of one part
//     step while the model generates for another. With
//     rollout.enable_prefix_caching (on by default) every request carries
//     its trajectory's PrefixKey, so that a policy with a prefix cache
//     prefills only what a turn adds to the history; a RolloutScoped
//     policy's EndRollout frees that cache when the rollout's turns end.
//   - Policy has two implementations here: ScriptedPolicy for tests and
//     benchmarks and OpenAIPolicy for OpenAI-compatible chat-completions
//     servers.
//   - WriteJSONL / WriteTrajectoryText export trajectories; Evaluate runs
//     the validation env set end to end.
//
// Where upstream has a bug the default is the corrected behaviour and
// Config.Compat switches upstream's back on; doc/divergences/rollout.md
// lists every divergence.
package ragen
