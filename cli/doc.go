// Package cli is the ragen command line as a library: cmd/ragen is a
// one-line main over Main, and a research program that registers its own
// environments (env.Register), advantage estimators
// (algo.RegisterEstimator) or memories and then calls Main is a ragen
// binary that knows them, driven by the same YAML configs and overrides.
//
// ragen trains and evaluates LLM agents in multi-turn text environments
// with StarPO, driven by upstream RAGEN's YAML configs:
//
//	ragen train --config-name _2_sokoban key=value +new_key=value
//	ragen eval  --config-name eval [--policy model|api|oracle|random] key=value
//	ragen sft   --config-name demo
//	ragen demo
//	ragen view  trajectories.jsonl
//	ragen serve-envs --addr 127.0.0.1:8111
//	ragen dash runs/demo
//
// Configs are upstream's key tree (config/base.yaml and one file per
// experiment, embedded in the binary); --config-path DIR adds a directory of
// your own. Every key is validated before any work starts.
package cli
