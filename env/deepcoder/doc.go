// Package deepcoder is the DeepCoder code-generation environment
// (upstream env_type "deepcoder", shared spec envs.md §9).
//
// Each episode is one programming problem; the model answers with Python
// code, which runs against the problem's tests in the sandbox of
// subpackage sandbox (new user, PID, network and mount namespaces, a
// fresh tmpfs root, rlimits, a wall-clock limit). The reward is the
// fraction of tests passed; a timeout or crash counts as none passed.
//
// Problems come from a local JSON Lines or parquet file with upstream's
// preprocessed fields (question, ground_truth, starter_code, metadata;
// or the raw problem/tests) — see [LoadFile]. With no dataset_path the
// env serves upstream's fallback prompt, add(a, b), with no tests.
//
// The sandbox is checked when the env is built: a missing interpreter or
// a kernel that refuses user namespaces is an error then, naming the fix
// (or the opt-in sandbox_mode "unsafe_rlimits_only").
package deepcoder
