// Package countdown is the Countdown numbers-game environment (upstream
// env_type "countdown", shared spec envs.md §4).
//
// Each episode is one puzzle — reach a target with a list of numbers — and
// one answer: an arithmetic expression. [Score] reproduces upstream's
// scoring: 0 (int) when the numbers in the answer are not exactly the
// puzzle's, 0.1 when they are but the value misses (or the expression does
// not evaluate), 1 (int) when it hits the target within 1e-5. Answers are
// parsed and evaluated by [Evaluate], a Python-compatible arithmetic
// evaluator; nothing is ever executed.
//
// Tasks come from upstream's data files, read by [LoadTasks]: parquet
// (through the small pure-Go reader in subpackage parquet: PLAIN and
// dictionary encodings, UNCOMPRESSED/SNAPPY/GZIP; other codecs and
// encodings are reported as errors), JSON Lines or a JSON array. As
// upstream, only the first max_instances rows are read and rows that no
// ± sign assignment solves are dropped; reset picks row seed mod N.
// With env_config generate: true (ours), reset instead generates a solvable
// puzzle from the seed ([GenerateTask], checked with the solver [Solve]).
package countdown
