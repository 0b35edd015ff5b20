// Package lean is the Lean 4 theorem-proving environment (upstream
// env_type "lean", shared spec envs.md §11).
//
// An episode is one theorem (a formal_statement record); each action is a
// tactic. The tactic is appended to the accepted ones and the whole proof
// is checked by a Kimina Lean server over HTTP ([Client]: POST
// /api/check). A tactic is accepted when Lean reports no error other than
// "unsolved goals" and no sorry; the proof succeeds when Lean reports no
// error at all. Rewards, step limit, info keys (accepted, messages,
// message_objects, diagnostics) and the rendered proof view follow
// upstream (shared spec service-envs.md §3): a request that fails after
// max_retries attempts, or a reply that breaks the schema, is scored as a
// rejected tactic, not returned as an error. [Env.ResetIndex] resets to a
// theorem by index.
//
// Nothing here runs Lean: a server must be started separately (see
// project-numina/kimina-lean-server). New checks GET /health and fails,
// naming the URL, when no server answers. Datasets are read from local
// .jsonl or .parquet files (Hugging Face names are not downloaded).
package lean
