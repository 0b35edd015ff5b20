// Package config loads RAGEN's experiment configurations: upstream's YAML files with
// upstream's key tree (base.yaml composing veRL's ppo_trainer.yaml and the env registry
// envs.yaml, one _N_<env>.yaml per experiment, eval.yaml, evaluate_api_llm.yaml), embedded
// in the binary so `ragen train --config-name _2_sokoban key=value` works like upstream's
// `python train.py --config-name _2_sokoban key=value`.
//
// Loading follows Hydra and OmegaConf:
//
//   - Composition: a config's `defaults` list names other configs (plain names, `group:
//     option` entries placed under the group's key, `optional`, `@package`, `/absolute`
//     paths, `# @package _global_` headers); `_self_` marks where the config's own keys are
//     merged (last when absent). Maps merge key by key, lists and scalars are replaced.
//   - Overrides: `a.b=v` (the key must exist; otherwise the error names the nearest valid
//     key), `+a.b=v` (add; error if present), `++a.b=v` (add or override), `~a.b` and
//     `~a.b=v` (delete). Values are typed as Hydra types them: ints, floats (1e-6, inf),
//     bools (any case), null, quoted strings, lists [1,2], dicts {k: v}, the casts
//     int()/float()/str()/bool(); anything else is a string.
//   - Interpolation, after overrides: `${a.b}` (absolute), `${.x}` / `${..x}` (relative),
//     embedded in text ("ckpt/${trainer.project_name}") with Python str() formatting,
//     `${oc.env:VAR,default}`, `${oc.select:key,default}`, `${oc.decode:text}`; cycles and
//     missing targets are errors naming the key.
//
// A Tree gives typed access (Int, Float, String, Bool, StringSlice, IntSlice) with errors
// naming the path and the type found, Decode into a package's own config struct (unknown
// keys are errors), Keys, YAML for printing, and a stable Hash.
//
// Validate checks, before any work starts, what upstream's train.py and veRL's workers
// assert (batch-size divisibility, filter capacity, CUDA device count, response-mask model,
// bi-level GAE) and what would otherwise fail late (env-group bookkeeping, unknown names,
// value ranges); it reports every problem at once, each saying which numbers disagree and
// what would fit. Check also returns warnings (for example a mini batch that does not
// divide the train batch, which upstream silently pads with duplicated rows).
// Derive then applies train.py's adjustments (data.train_batch_size, use_kl_loss without
// a reference model). ParseArgs reads a Hydra-style command line (--config-name,
// --config-path, --cfg job, --resolve, overrides).
// EstimateMemory (with MemoryPlanFromTree) sizes weights, gradients, AdamW state,
// activations and logits of a training step against a per-GPU byte budget.
package config
