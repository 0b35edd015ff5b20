package config

import (
	"fmt"
	"sort"
	"strings"
)

// Inert keys are upstream (RAGEN or veRL) keys that mean nothing in ragen:
// they configure machinery ragen does not have (Ray, FSDP, vLLM, HDFS,
// PyTorch kernel switches). Upstream's run scripts set them, so a plain
// `key=value` override of one is accepted even where the key is not in the
// composed config (Hydra would say "key does not exist"), and InertKeys
// lists the ones a run carries so that it can say once, at start-up, that
// they have no effect and why.

// InertReason is why a group of keys has no effect.
type InertReason struct {
	Name     string   // short label: "ray", "vllm", ...
	Why      string   // one sentence for the start-up notice
	Patterns []string // dotted key patterns: "*" is one segment, "**" any number (zero included)
}

// InertReasons are the groups of upstream keys without effect here.
var InertReasons = []InertReason{
	{"ray", "ragen runs in one process, there is no Ray cluster to configure",
		[]string{"ray_kwargs.**", "ray_init.**"}},
	{"fsdp", "there is no FSDP: each process holds the whole model (data parallelism is ragen's dist package), so wrapping, sharding and CPU offload settings do not apply",
		[]string{"**.fsdp_config.**", "**.enable_activation_offload", "**.strategy"}},
	{"vllm", "generation runs in-process on the training weights with a KV cache, there is no vLLM engine to size or configure",
		[]string{"actor_rollout_ref.rollout.gpu_memory_utilization", "actor_rollout_ref.rollout.enforce_eager",
			"actor_rollout_ref.rollout.free_cache_engine", "actor_rollout_ref.rollout.max_num_batched_tokens",
			"actor_rollout_ref.rollout.max_num_seqs", "actor_rollout_ref.rollout.enable_chunked_prefill",
			"actor_rollout_ref.rollout.disable_log_stats", "actor_rollout_ref.rollout.load_format",
			"actor_rollout_ref.rollout.name", "actor_rollout_ref.rollout.mode", "actor_rollout_ref.rollout.dtype",
			"actor_rollout_ref.rollout.layered_summon",
			"actor_rollout_ref.rollout.swap_space", "actor_rollout_ref.rollout.engine_kwargs.**",
			"actor_rollout_ref.hybrid_engine"}},
	{"kernels", "a PyTorch/veRL kernel switch: libtorch computes the same quantities in one pass here (entropy, log-probs, padding-free batches are not separate code paths)",
		[]string{"**.entropy_from_logits_with_chunking", "**.entropy_checkpointing", "**.use_torch_compile",
			"**.use_liger", "**.use_fused_kernels", "**.use_remove_padding", "**.ulysses_sequence_parallel_size"}},
	{"checkpoint-contents", "checkpoints always hold model, optimizer and trainer state (exact resume); their contents are not selectable",
		[]string{"trainer.checkpoint.**", "actor_rollout_ref.actor.checkpoint.**", "critic.checkpoint.**"}},
	{"hdfs", "there is no HDFS client: checkpoints stay in trainer.default_local_dir",
		[]string{"trainer.default_hdfs_dir", "trainer.del_local_ckpt_after_load"}},
	{"data-files", "prompts come from the environment managers (es_manager), not from parquet prompt files or a reward model",
		[]string{"data.train_files", "data.val_files", "data.prompt_key", "data.reward_fn_key", "data.return_raw_input_ids",
			"data.return_raw_chat", "data.return_full_prompt", "data.shuffle", "data.filter_overlong_prompts",
			"data.truncation", "data.trust_remote_code", "data.val_batch_size", "data.tokenizer",
			"reward_model.**", "custom_reward_function.**"}},
	{"hf-loading", "Hugging Face model-loading switches: ragen reads safetensors and config.json itself, no remote code runs",
		[]string{"**.trust_remote_code", "**.external_lib", "**.override_config.**", "**.tokenizer_path"}},
}

// InertKey is one inert key present in a tree.
type InertKey struct {
	Key     string
	Value   any
	Reason  string // InertReason.Name
	Default bool   // the value the base config gives (not set by the experiment or the command line)
}

// Inert returns the reason a key has no effect here, if it is one of
// InertReasons' keys.
func Inert(key string) (InertReason, bool) {
	segs := strings.Split(key, ".")
	for _, r := range InertReasons {
		for _, p := range r.Patterns {
			if matchSegs(strings.Split(p, "."), segs) {
				return r, true
			}
		}
	}
	return InertReason{}, false
}

func matchSegs(pat, segs []string) bool {
	if len(pat) == 0 {
		return len(segs) == 0
	}
	if pat[0] == "**" {
		for i := 0; i <= len(segs); i++ {
			if matchSegs(pat[1:], segs[i:]) {
				return true
			}
		}
		return false
	}
	if len(segs) == 0 || (pat[0] != "*" && pat[0] != segs[0]) {
		return false
	}
	return matchSegs(pat[1:], segs[1:])
}

// InertKeys lists the inert keys of t (leaves; a map under an inert
// prefix counts once per leaf), sorted. Default marks those whose value
// equals the one the embedded base config gives, so that a notice can
// name what the experiment or the command line set and only count the rest.
func InertKeys(t *Tree) []InertKey {
	var leaves []string
	leafKeys("", t.root, false, &leaves)
	base, _ := Load("base", nil)
	var out []InertKey
	for _, k := range leaves {
		r, ok := Inert(k)
		if !ok {
			continue
		}
		v, _ := t.Get(k)
		ik := InertKey{Key: k, Value: v, Reason: r.Name}
		if base != nil {
			same := false
			if bv, err := base.Get(k); err == nil && equalValues(bv, v) {
				same = true
			}
			// an interpolation left as the base config writes it
			// (tokenizer_path: ${actor_rollout_ref.model.path}) is a default too
			if segs, err := splitPath(k); err == nil {
				rv, ok1 := lookup(t.raw, segs)
				bv, ok2 := lookup(base.raw, segs)
				if ok1 && ok2 && equalValues(rv, bv) {
					if s, isStr := rv.(string); isStr && strings.Contains(s, "${") {
						same = true
					}
				}
			}
			if same {
				ik.Default = true
			}
		}
		out = append(out, ik)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// InertNotice is the one start-up notice for t's inert keys: the keys the
// experiment or the command line (overrides, as given to Load) set, named
// with their values and grouped by reason, then a count of those left at
// upstream's defaults. It is "" when there is nothing to say.
func InertNotice(t *Tree, overrides ...string) string {
	keys := InertKeys(t)
	byReason := map[string][]string{}
	defaults := 0
	given := func(key string) bool {
		for _, o := range overrides {
			k, _, _ := strings.Cut(strings.TrimLeft(o, "+~"), "=")
			if k == key || strings.HasPrefix(key, k+".") {
				return true
			}
		}
		return false
	}
	for _, k := range keys {
		if k.Default && !given(k.Key) {
			defaults++
			continue
		}
		byReason[k.Reason] = append(byReason[k.Reason], k.Key+"="+flowString(k.Value))
	}
	var b strings.Builder
	for _, r := range InertReasons {
		if ks := byReason[r.Name]; len(ks) > 0 {
			fmt.Fprintf(&b, "  %s: %s\n", strings.Join(ks, ", "), r.Why)
		}
	}
	if b.Len() == 0 && defaults == 0 {
		return ""
	}
	head := "these keys have no effect in ragen:\n"
	if b.Len() == 0 {
		head = ""
	}
	tail := ""
	if defaults > 0 {
		tail = fmt.Sprintf("  (%d more upstream keys at their defaults have no effect either: vLLM, FSDP, Ray and kernel settings; --cfg job shows them)\n", defaults)
	}
	return head + b.String() + tail
}
