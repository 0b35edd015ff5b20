// Package lean is the Lean 4 theorem-proving environment (upstream
// env_type "lean", shared spec envs.md §11).
//
// An episode is one theorem (a formal_statement record); each action is a
// tactic. The tactic is appended to the accepted ones and the whole proof
// is checked by a Kimina Lean server over HTTP ([Client]: POST
// /api/check). A tactic is accepted when Lean reports no error other than
// "unsolved goals" and no sorry; the proof succeeds when Lean reports no
// error at all. Rewards, step limit and the rendered proof view follow
// upstream.
//
// Nothing here runs Lean: a server must be started separately (see
// project-numina/kimina-lean-server). New checks GET /health and fails,
// naming the URL, when no server answers. Datasets are read from local
// .jsonl or .parquet files (Hugging Face names are not downloaded).
package lean
