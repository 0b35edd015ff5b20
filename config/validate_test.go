package config

import (
	"errors"
	"strings"
	"testing"

	"ragen/filter"
	"ragen/ragen"
	"ragen/starpo/algo"
	"ragen/track"
)

func TestValidateMessages(t *testing.T) {
	cases := []struct {
		name  string
		cfg   string
		ov    []string
		parts []string // all must appear in one error
	}{
		// RAGEN train.py assertion 1: micro x n_gpus divides mini.
		// 30 % (4 x 1) != 0; multiples of 4 around 30: 28, 32.
		{"micro does not divide mini", "base", []string{"ppo_mini_batch_size=30", "micro_batch_size_per_gpu=4"},
			[]string{"actor_rollout_ref.actor.ppo_mini_batch_size: 30 is not a multiple of ppo_micro_batch_size_per_gpu x n_gpus_per_node = 4 x 1 = 4; nearest fitting: 28 or 32"}},
		// micro 8 x 2 GPUs = 16 > mini 8; the nearest multiple of 16 is 16.
		{"micro x gpus exceeds mini", "base", []string{"ppo_mini_batch_size=8", "micro_batch_size_per_gpu=8", "trainer.n_gpus_per_node=2", "system.CUDA_VISIBLE_DEVICES='0,1'"},
			[]string{"8 is not a multiple of ppo_micro_batch_size_per_gpu x n_gpus_per_node = 8 x 2 = 16; nearest fitting: 16"}},
		// Critic (on with gae) is checked too: critic mini 20 with micro 8.
		{"critic batch", "base", []string{"critic.ppo_mini_batch_size=20", "critic.ppo_micro_batch_size_per_gpu=8"},
			[]string{"critic.ppo_mini_batch_size: 20 is not a multiple", "nearest fitting: 16 or 24"}},
		// 2 nodes x 4 GPUs: mini 36 passes RAGEN's check (36 % 4 == 0) but 36 / 8 = 4.5 per GPU.
		{"per-GPU mini across nodes", "base", []string{"ppo_mini_batch_size=36", "trainer.n_gpus_per_node=4", "trainer.nnodes=2", "system.CUDA_VISIBLE_DEVICES='0,1,2,3'"},
			[]string{"36 x rollout.n 1 over 8 GPUs (nnodes 2 x 4) gives a per-GPU mini batch of 4", "nearest fitting: 32 or 40"}},
		{"both micro keys", "base", []string{"actor_rollout_ref.actor.ppo_micro_batch_size=4"},
			[]string{"set only one of ppo_micro_batch_size (4, deprecated) and ppo_micro_batch_size_per_gpu (1)"}},
		{"no micro", "base", []string{"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=null"},
			[]string{"set ppo_micro_batch_size_per_gpu"}},
		// assertion 2
		{"response mask model", "base", []string{"model_path=mistralai/Mistral-7B"},
			[]string{"enable_response_mask: needs a Qwen or Llama-3 model", "Mistral-7B", "not a folder here either"}},
		// assertion 3
		{"cuda devices", "base", []string{"trainer.n_gpus_per_node=2"},
			[]string{`system.CUDA_VISIBLE_DEVICES: lists 1 device(s) ("0") but trainer.n_gpus_per_node=2`}},
		// assertion 4: 8 x 16 x 0.25 = 32 rows < 64.
		{"filter capacity", "base", []string{"actor_rollout_ref.rollout.rollout_filter_value=0.25", "ppo_mini_batch_size=64"},
			[]string{"64 exceeds the rows the filter can keep: 8 groups x 16 x filter ratio 0.25 = 32", "at most 32"}},
		// top_k_abs: ratio = 2/8; 8 x 16 x 0.25 = 32 < 40 (40 = multiple of micro 1).
		{"filter capacity top_k_abs", "base", []string{"actor_rollout_ref.rollout.rollout_filter_strategy=top_k_abs", "actor_rollout_ref.rollout.rollout_filter_value=2", "ppo_mini_batch_size=40"},
			[]string{"filter ratio 0.25 = 32"}},
		// single_turn multiplies by max_turn: 2 x 4 x 1 x 5 = 40 >= 32 passes, 2 x 2 x 5 = 20 fails.
		{"filter capacity single turn", "base", []string{"agent_proxy.context_window_mode=single_turn", "es_manager.train.env_groups=2", "es_manager.train.group_size=2", "es_manager.train.env_configs.n_groups=[2]"},
			[]string{"2 groups x 2 x filter ratio 1 x max_turn 5 = 20"}},
		// assertion 5
		{"bi-level gae estimator", "base", []string{"algorithm.bi_level_gae=true", "algorithm.adv_estimator=grpo"},
			[]string{"algorithm.bi_level_gae: requires algorithm.adv_estimator=gae (found grpo)"}},
		{"bi-level gae turn scores", "base", []string{"algorithm.bi_level_gae=true", "agent_proxy.use_turn_scores=true"},
			[]string{"requires agent_proxy.use_turn_scores=False"}},
		// es_manager bookkeeping
		{"n_groups sum", "base", []string{"es_manager.train.env_configs.n_groups=[6]"},
			[]string{"es_manager.train.env_configs.n_groups: [6] sums to 6 but env_groups=8"}},
		{"n_groups length", "_1_bandit", []string{"es_manager.val.env_configs.n_groups=[512]"},
			[]string{"es_manager.val.env_configs.n_groups: has 1 entries but tags has 2 ([Bandit, BanditTest])"}},
		{"unknown tag", "base", []string{"es_manager.train.env_configs.tags=[CoordSokoba]"},
			[]string{`unknown env tag "CoordSokoba" (did you mean CoordSokoban?)`}},
		{"tags not strings", "base", []string{"es_manager.val.env_configs.tags=[1]"},
			[]string{"es_manager.val.env_configs.tags[0]: want a string, found int 1"}},
		{"group size zero", "base", []string{"es_manager.val.group_size=0"},
			[]string{"es_manager.val.group_size: must be >= 1, got 0"}},
		{"unknown env type", "base", []string{"custom_envs.CoordSokoban.env_type=sokobann"},
			[]string{`custom_envs.CoordSokoban.env_type: unknown env type "sokobann" (did you mean sokoban?)`}},
		{"unregistered spatial", "base", []string{"custom_envs.CoordSokoban.env_type=spatial"},
			[]string{`unknown env type "spatial"`}},
		{"max actions per traj", "base", []string{"custom_envs.CoordSokoban.max_actions_per_traj=0"},
			[]string{"custom_envs.CoordSokoban.max_actions_per_traj: 0 is out of range: want >= 1"}},
		{"pipeline parts", "base", []string{"+agent_proxy.pipeline_parts=-1"},
			[]string{"agent_proxy.pipeline_parts: -1 is out of range: want >= 0"}},
		{"response length", "base", []string{"actor_rollout_ref.rollout.response_length=0"},
			[]string{"actor_rollout_ref.rollout.response_length: 0 is out of range: want >= 1"}},
		{"step timeout", "base", []string{"+es_manager.step_timeout=-5"},
			[]string{"es_manager.step_timeout: -5s is out of range: want >= 0"}},
		{"success rate", "_3_frozen_lake", []string{"custom_envs.CoordFrozenLake.env_config.success_rate=1.5"},
			[]string{"success_rate: must be a probability in [0, 1], got 1.5"}},
		// names
		{"estimator", "base", []string{"algorithm.adv_estimator=grop"},
			[]string{`algorithm.adv_estimator: unknown advantage estimator "grop" (did you mean grpo?); valid: gae, grpo, reinforce_plus_plus, reinforce_plus_plus_baseline, rloo`}},
		{"remax", "base", []string{"algorithm.adv_estimator=remax"},
			[]string{"algorithm.adv_estimator: remax is not supported by the trainer", "valid: gae, grpo,"}},
		{"loss agg", "base", []string{"actor_rollout_ref.actor.loss_agg_mode=token_mean"},
			[]string{`unknown value "token_mean" (did you mean token-mean?); valid: seq-mean-token-mean, seq-mean-token-sum, seq-mean-token-sum-norm, token-mean`}},
		{"kl type with dashes", "base", []string{"actor_rollout_ref.actor.use_kl_loss=true", "actor_rollout_ref.actor.kl_loss_type=low-var-kl"},
			[]string{`unknown KL type "low-var-kl" (did you mean low_var_kl?)`}},
		{"kl full", "base", []string{"algorithm.use_kl_in_reward=true", "algorithm.kl_penalty=full"},
			[]string{`algorithm.kl_penalty: unknown KL type "full"`, "low_var_kl", "each also with a + suffix"}},
		{"kl typo with suffix", "base", []string{"actor_rollout_ref.actor.use_kl_loss=true", "actor_rollout_ref.actor.kl_loss_type=k33+"},
			[]string{`actor_rollout_ref.actor.kl_loss_type: unknown KL type "k33+" (did you mean k3?)`}},
		{"empty filter metric", "base", []string{"actor_rollout_ref.rollout.rollout_filter_metric=''"},
			[]string{`actor_rollout_ref.rollout.rollout_filter_metric: unknown value ""`}},
		{"empty filter strategy", "base", []string{"actor_rollout_ref.rollout.rollout_filter_strategy=''"},
			[]string{`actor_rollout_ref.rollout.rollout_filter_strategy: unknown value ""; valid: min_p, top_k, top_k_abs, top_p`}},
		{"zero buckets", "base", []string{"actor_rollout_ref.rollout.gradient_analysis_num_buckets=0"},
			[]string{"actor_rollout_ref.rollout.gradient_analysis_num_buckets: 0 is out of range: want >= 1"}},
		{"negative buckets", "base", []string{"actor_rollout_ref.rollout.gradient_analysis_num_buckets=-2"},
			[]string{"actor_rollout_ref.rollout.gradient_analysis_num_buckets: -2 is out of range: want >= 1"}},
		{"kl loss coef without the kl loss", "base", []string{"actor_rollout_ref.actor.kl_loss_coef=-1"},
			[]string{"actor_rollout_ref.actor.kl_loss_coef: -1 is out of range: want >= 0"}},
		{"critic betas without a critic", "base", []string{"algorithm.adv_estimator=grpo", "critic.optim.betas=[0.9,1.5]"},
			[]string{"critic.optim.betas[1]: 1.5 is out of range: want 0 <= beta < 1"}},
		{"selection eps", "base", []string{"actor_rollout_ref.rollout.rollout_filter_selection_eps=-0.1"},
			[]string{"actor_rollout_ref.rollout.rollout_filter_selection_eps: -0.1 is out of range: want >= 0"}},
		{"empty stop steps", "base", []string{"actor_rollout_ref.rollout.rollout_filter_empty_stop_steps=-1"},
			[]string{"actor_rollout_ref.rollout.rollout_filter_empty_stop_steps: -1 is out of range: want >= 0"}},
		{"top_p mode under top_k", "base", []string{"actor_rollout_ref.rollout.rollout_filter_strategy=top_k", "actor_rollout_ref.rollout.rollout_filter_value=0.5", "actor_rollout_ref.rollout.rollout_filter_top_p_prob_mode=cubic"},
			[]string{`rollout_filter_top_p_prob_mode: unknown value "cubic"`}},
		{"batch adjust", "base", []string{"agent_proxy.batch_adjust_mode=pad"},
			[]string{`agent_proxy.batch_adjust_mode: unknown value "pad"; valid: copy, delete`}},
		{"trackio is newer veRL's", "base", []string{"trainer.logger=[trackio]"},
			[]string{"trainer.logger[0]: unknown logger trackio"}},
		{"kl ctrl", "base", []string{"algorithm.use_kl_in_reward=true", "algorithm.kl_ctrl.type=adaptiv"},
			[]string{`algorithm.kl_ctrl.type: unknown value "adaptiv" (did you mean adaptive?)`}},
		{"filter strategy", "base", []string{"actor_rollout_ref.rollout.rollout_filter_strategy=topp"},
			[]string{`unknown value "topp"`, "valid: min_p, top_k, top_k_abs, top_p"}},
		{"filter type", "base", []string{"actor_rollout_ref.rollout.rollout_filter_type=std"},
			[]string{`rollout_filter_type: unknown value "std"`, "valid: largest, smallest"}},
		{"filter mode", "base", []string{"actor_rollout_ref.rollout.rollout_filter_top_p_prob_mode=exp"},
			[]string{"valid: linear, softmax"}},
		{"filter metric", "base", []string{"actor_rollout_ref.rollout.rollout_filter_metric=rewards"},
			[]string{`unknown value "rewards" (did you mean reward?)`}},
		{"loss scaling", "base", []string{"actor_rollout_ref.actor.filter_loss_scaling=log"},
			[]string{"valid: linear, none, sqrt"}},
		{"window mode", "base", []string{"agent_proxy.context_window_mode=limited"},
			[]string{"valid: full, limited_multi_turn, single_turn"}},
		{"normalisation", "base", []string{"agent_proxy.reward_normalization.method=zscore"},
			[]string{"valid: asym_clip, identity, mean, mean_std"}},
		{"num samples", "base", []string{"collapse_detection.num_samples=some"},
			[]string{`must be a positive integer or "all", got "some"`}},
		{"num samples zero", "base", []string{"collapse_detection.num_samples=0.5"},
			[]string{`collapse_detection.num_samples: must be a positive integer or "all", got 0.5`}},
		{"logger", "base", []string{"trainer.logger=[console,wandbb]"},
			[]string{"trainer.logger[1]: unknown logger wandbb"}},
		// ranges
		{"top_p", "base", []string{"actor_rollout_ref.rollout.top_p=1.5"},
			[]string{"actor_rollout_ref.rollout.top_p: 1.5 is out of range: want 0 < x <= 1"}},
		{"lr", "base", []string{"actor_rollout_ref.actor.optim.lr=0"},
			[]string{"actor_rollout_ref.actor.optim.lr: 0 is out of range: want > 0"}},
		{"critic lr", "base", []string{"critic.optim.lr=-1e-5"},
			[]string{"critic.optim.lr: -1e-05 is out of range: want > 0"}},
		{"temperature", "base", []string{"actor_rollout_ref.rollout.temperature=0"},
			[]string{"temperature: 0 is out of range: want > 0"}},
		{"gamma", "base", []string{"algorithm.gamma=1.1"},
			[]string{"algorithm.gamma: 1.1 is out of range: want 0 <= x <= 1"}},
		{"clip c", "base", []string{"actor_rollout_ref.actor.clip_ratio_c=1"},
			[]string{"actor_rollout_ref.actor.clip_ratio_c: 1 is out of range: want a finite value > 1"}},
		{"min_p value", "base", []string{"actor_rollout_ref.rollout.rollout_filter_strategy=min_p", "actor_rollout_ref.rollout.rollout_filter_value=2"},
			[]string{"rollout_filter_value: 2 is out of range: want 0 <= x <= 1"}},
		{"gpu memory", "base", []string{"actor_rollout_ref.rollout.gpu_memory_utilization=0"},
			[]string{"gpu_memory_utilization: 0 is out of range"}},
		{"betas", "base", []string{"actor_rollout_ref.actor.optim.betas=[0.9,1.0]"},
			[]string{"actor_rollout_ref.actor.optim.betas[1]: 1 is out of range: want 0 <= beta < 1"}},
		{"tp", "base", []string{"actor_rollout_ref.rollout.tensor_model_parallel_size=2"},
			[]string{"tensor_model_parallel_size: 2 does not divide the 1 GPU(s)", "fitting: 1"}},
		{"max turn", "base", []string{"agent_proxy.max_turn=0"},
			[]string{"agent_proxy.max_turn: 0 is out of range: want >= 1"}},
		{"type", "base", []string{"agent_proxy.max_turn=five"},
			[]string{"agent_proxy.max_turn: want a number, found string five"}},
		{"steps", "base", []string{"trainer.total_training_steps=null"},
			[]string{"trainer.total_training_steps: want a number, found null"}},
		{"action sep", "base", []string{"agent_proxy.action_sep=''"},
			[]string{"agent_proxy.action_sep: must not be empty"}},
		{"critic enable", "base", []string{"critic.enable=yes"},
			[]string{"critic.enable: want true, false or null", `found string "yes"`}},
		{"lora alpha", "base", []string{"lora.rank=8", "lora.alpha=0"},
			[]string{"lora.alpha: must be > 0 when lora.rank=8"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := mustLoad(t, c.cfg, c.ov, shipped())
			err := Validate(tr)
			if err == nil {
				t.Fatalf("Validate passed; want %q", c.parts)
			}
			var found bool
			for _, p := range Check(tr) {
				all := !p.Warning
				for _, part := range c.parts {
					all = all && strings.Contains(p.Error(), part)
				}
				found = found || all
			}
			if !found {
				t.Fatalf("no error contains all of %q; got:\n%v", c.parts, err)
			}
			var pr Problem
			if !errors.As(err, &pr) {
				t.Fatalf("errors must be Problems: %T", err)
			}
		})
	}
}

func TestValidateReportsAll(t *testing.T) {
	tr := mustLoad(t, "base", []string{"algorithm.gamma=2", "algorithm.lam=-1", "agent_proxy.max_turn=0"}, shipped())
	err := Validate(tr)
	for _, k := range []string{"algorithm.gamma", "algorithm.lam", "agent_proxy.max_turn"} {
		if err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("missing %s in %v", k, err)
		}
	}
}

func TestCheckWarnings(t *testing.T) {
	// 8 groups x 15 = 120 rows; mini 32 does not divide 120. lcm(8, 32, 1) = 32, so copy pads
	// to 128 (8 duplicates), delete drops to 96 (24 rows). Mini batches m near 32 with
	// 120 % lcm(8, m) == 0: 30 (lcm 120) below, 40 (lcm 40) above; 31 and 33..39 fail.
	tr := mustLoad(t, "base", []string{"es_manager.train.group_size=15"}, shipped())
	if err := Validate(tr); err != nil {
		t.Fatalf("a warning must not fail Validate: %v", err)
	}
	ps := Check(tr)
	want := "ppo_mini_batch_size=32 does not divide train batch 120 (= 8 groups x 15); batch_adjust_mode=copy pads every step with 8 duplicate rows (to 128); nearest fitting: 30 or 40"
	if len(ps) != 1 || !ps[0].Warning || !strings.Contains(ps[0].Msg, want) {
		t.Fatalf("Check = %v, want one warning %q", ps, want)
	}
	tr = mustLoad(t, "base", []string{"es_manager.train.group_size=15", "agent_proxy.batch_adjust_mode=delete"}, shipped())
	if ps := Check(tr); len(ps) != 1 || !strings.Contains(ps[0].Msg, "drops 24 rows every step (to 96)") {
		t.Fatalf("Check = %v", ps)
	}
	// use_kl_loss without a reference model is forced off upstream.
	tr = mustLoad(t, "base", []string{"actor_rollout_ref.actor.use_kl_loss=true", "actor_rollout_ref.actor.use_ref=false"}, shipped())
	if ps := Check(tr); len(ps) != 1 || !ps[0].Warning || !strings.Contains(ps[0].Error(), "forced off") {
		t.Fatalf("Check = %v", ps)
	}
	// Warnings are listed after errors.
	tr = mustLoad(t, "base", []string{"es_manager.train.group_size=15", "algorithm.gamma=3"}, shipped())
	if ps := Check(tr); len(ps) != 2 || ps[0].Warning || !ps[1].Warning {
		t.Fatalf("Check order = %v", ps)
	}
}

func TestValidateAcceptsUpstreamVariants(t *testing.T) {
	// Settings used by upstream's scripts that must pass.
	sets := [][]string{
		{"algorithm.adv_estimator=grpo", "actor_rollout_ref.actor.loss_agg_mode=seq-mean-token-mean"},
		{"algorithm.adv_estimator=grpo", "algorithm.norm_adv_by_std_in_grpo=false", "actor_rollout_ref.actor.loss_agg_mode=seq-mean-token-sum"},
		// low-var-kl is harmless while use_kl_loss=false.
		{"actor_rollout_ref.actor.kl_loss_type=low-var-kl"},
		{"actor_rollout_ref.actor.use_kl_loss=true", "actor_rollout_ref.actor.kl_loss_type=k3+"},
		{"actor_rollout_ref.rollout.rollout_filter_strategy=top_k", "actor_rollout_ref.rollout.rollout_filter_value=0.25", "ppo_mini_batch_size=32"},
		{"actor_rollout_ref.rollout.rollout_filter_metric=Reward_STD"},
		{"collapse_detection.num_samples=ALL"},
		{"collapse_detection.num_samples=2.5"}, // upstream's int(): 2
		{"agent_proxy.context_window_mode=limited_multi_turn", "agent_proxy.max_context_window=2"},
		{"system.CUDA_VISIBLE_DEVICES='0,1'", "trainer.n_gpus_per_node=2", "ppo_mini_batch_size=32"},
		{"critic.optim.lr=0", "algorithm.adv_estimator=grpo"}, // no critic: its lr is unused
		{"model_path=meta-llama/Llama-3.2-3B-Instruct"},
		{"lora.rank=64"},
		{"actor_rollout_ref.rollout.max_model_len=null"},
		{"+es_manager.step_timeout=90s"},
		// train.py's filter-capacity assert reads the top-level ppo_mini_batch_size (32):
		// 8 x 16 x 0.25 = 32 >= 32 passes even though the actor's own key says 64.
		{"actor_rollout_ref.rollout.rollout_filter_value=0.25", "actor_rollout_ref.actor.ppo_mini_batch_size=64"},
	}
	for _, s := range sets {
		tr := mustLoad(t, "base", s, shipped())
		if ps := Check(tr); len(ps) != 0 {
			t.Errorf("%q: %v", s, ps)
		}
	}
}

// Every name a key's owning package accepts passes Validate, so the two
// cannot drift apart.
func TestValidateAcceptsOwnersNames(t *testing.T) {
	keys := []struct {
		key   string
		names []string
		extra []string
	}{
		{"algorithm.adv_estimator", algo.TrainerEstimators(), []string{"critic.enable=true"}},
		{"actor_rollout_ref.actor.loss_agg_mode", algo.LossAggModes(), nil},
		{"actor_rollout_ref.actor.kl_loss_type", algo.KLTypes(), []string{"actor_rollout_ref.actor.use_kl_loss=true"}},
		{"algorithm.kl_ctrl.type", algo.KLControlTypes(), []string{"algorithm.use_kl_in_reward=true"}},
		{"actor_rollout_ref.actor.filter_loss_scaling", algo.FilterScalings(), nil},
		{"actor_rollout_ref.rollout.rollout_filter_type", filter.Types(), nil},
		{"actor_rollout_ref.rollout.rollout_filter_top_p_prob_mode", filter.ProbModes(), nil},
		{"actor_rollout_ref.rollout.rollout_filter_metric", filter.Metrics(), nil},
		{"actor_rollout_ref.rollout.gradient_analysis_bucket_mode", filter.BucketModes(), nil},
		{"agent_proxy.batch_adjust_mode", ragen.BatchAdjustModes(), nil},
		{"agent_proxy.reward_normalization.grouping", ragen.RewardGroupings(), nil},
		{"agent_proxy.reward_normalization.method", ragen.RewardNormMethods(), nil},
	}
	for _, k := range keys {
		for _, n := range k.names {
			tr := mustLoad(t, "base", append([]string{k.key + "=" + n}, k.extra...), shipped())
			if ps := Check(tr); len(ps) != 0 {
				t.Errorf("%s=%s: %v", k.key, n, ps)
			}
		}
	}
	for _, n := range track.LoggerNames() {
		if ps := Check(mustLoad(t, "base", []string{"trainer.logger=[" + n + "]"}, shipped())); len(ps) != 0 {
			t.Errorf("trainer.logger=[%s]: %v", n, ps)
		}
	}
}

// custom_envs lists every tag upstream knows; only the entries the env sets
// use are checked (an unused one is never built).
func TestValidateChecksUsedEnvEntriesOnly(t *testing.T) {
	tr := mustLoad(t, "_1_bandit", []string{"custom_envs.CoordSokoban.max_actions_per_traj=0"}, shipped())
	if ps := Check(tr); len(ps) != 0 {
		t.Fatalf("unused entry: %v", ps)
	}
	tr = mustLoad(t, "base", []string{"custom_envs.CoordSokoban.max_actions_per_traj=0"}, shipped())
	if err := Validate(tr); err == nil || !strings.Contains(err.Error(), "custom_envs.CoordSokoban.max_actions_per_traj: 0 is out of range") {
		t.Fatalf("used entry: %v", err)
	}
}
