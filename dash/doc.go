// Package dash is ragen's web dashboard (`ragen dash RUN_DIR...`): one local
// HTTP server, every page and asset embedded, that shows
//
//   - runs: a run folder's metrics.jsonl as interactive charts (zoom, hover,
//     smoothing, metrics picked by upstream's keys), polled while a run
//     trains, and a sweep table when a folder holds several runs;
//   - trajectories: the rollout and validation JSONL a training run exports
//     (rollouts/train_step_N.jsonl, rollouts/val_step_N.jsonl) and any
//     trajectory JSONL of ragen eval in the folder, turn by turn, filtered by
//     step, env, group, success, reward and format errors;
//   - RAGEN-2: the rollout filter's per-group decision of every step
//     (rollouts/filter_step_N.json: reward variance, kept or dropped) and the
//     collapse metrics next to success;
//   - play: one episode of an env tag and seed played by a policy (the oracle,
//     a model folder, an OpenAI-compatible endpoint), each turn streamed token
//     by token over server-sent events, step by step or running on.
//
// Security: the server reads only the folders it was given; clients name runs
// and files by id and name, never by path. Bound to loopback it rejects
// requests whose Host is not a loopback name (DNS rebinding); bound anywhere
// else it requires a bearer token (header, or ?token= once, then a cookie).
package dash
