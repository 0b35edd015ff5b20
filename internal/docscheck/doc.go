// Package docscheck holds the test that keeps README.md and doc/ honest:
// every command block a reader would run is run (in a quick form) or marked
// as needing what a plain machine lacks, and every relative link resolves.
//
// A fenced block with no language, or sh, bash, shell or console, is a
// command block. The test runs its lines:
//
//   - `ragen ARGS` (or `go run ./cmd/ragen ARGS`) with a ragen binary it
//     builds; train, eval, sft and demo get `--cfg job`, so the command line
//     and the config it composes are checked without training; dash,
//     serve-envs, visualize and launch get `--help` (they serve or spawn);
//   - `make TARGET...`: each target must be a rule of the Makefile (the test
//     does not run them).
//
// Any other line fails the test unless the block is marked, on the line
// before it, with
//
//	<!-- needs: WHAT -->
//
// where WHAT is one of gpu (a CUDA GPU), model (a Hugging Face model folder),
// network (a server to talk to), root, or minutes (it trains, benchmarks or
// builds for minutes). Marked blocks are not run.
package docscheck
