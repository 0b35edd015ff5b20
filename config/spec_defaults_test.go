package config

import (
	"reflect"
	"testing"
)

// Every default of starpo.md §9 (RAGEN base.yaml over veRL's ppo_trainer),
// read from the composed, resolved base tree. Values are as YAML decodes
// them (ints, floats, strings, bools, nil, lists).
func TestBaseTreeMatchesSpecDefaults(t *testing.T) {
	tr := mustLoad(t, "base", nil, shipped())
	if err := Derive(tr); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		key  string
		want any
	}{
		{"system.CUDA_VISIBLE_DEVICES", "0"},
		{"seed.train", 10000},
		{"seed.val", 123},
		{"model_path", "Qwen/Qwen2.5-3B-Instruct"},
		{"enable_response_mask", true},
		{"grpo_advantage_length_weight", false},
		{"micro_batch_size_per_gpu", 1},
		{"log_prob_micro_batch_size_per_gpu", 1},
		{"ppo_mini_batch_size", 32},
		{"lora.rank", 0},
		{"lora.alpha", 64},
		{"lora.target_modules", "all-linear"},
		{"actor_rollout_ref.actor.ppo_mini_batch_size", 32},
		{"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", 1},
		{"actor_rollout_ref.actor.use_ref", true},
		{"actor_rollout_ref.actor.entropy_coeff", 0.001},
		{"actor_rollout_ref.actor.use_kl_loss", false},
		{"actor_rollout_ref.actor.kl_loss_coef", 0.0},
		{"actor_rollout_ref.actor.kl_loss_type", "kl"},
		{"actor_rollout_ref.actor.clip_ratio", 0.2},
		{"actor_rollout_ref.actor.clip_ratio_low", 0.2},
		{"actor_rollout_ref.actor.clip_ratio_high", 0.28},
		{"actor_rollout_ref.actor.clip_ratio_c", 3.0},
		{"actor_rollout_ref.actor.loss_agg_mode", "token-mean"},
		{"actor_rollout_ref.actor.filter_loss_scaling", "none"},
		{"actor_rollout_ref.actor.ppo_epochs", 1},
		{"actor_rollout_ref.actor.shuffle", false},
		{"actor_rollout_ref.actor.grad_clip", 1.0},
		{"actor_rollout_ref.actor.use_dynamic_bsz", false},
		{"actor_rollout_ref.actor.optim.lr", 1e-6},
		{"actor_rollout_ref.actor.optim.betas", []any{0.9, 0.999}},
		{"actor_rollout_ref.actor.optim.weight_decay", 0.01},
		{"actor_rollout_ref.actor.optim.lr_warmup_steps_ratio", 0.0},
		{"actor_rollout_ref.actor.optim.warmup_style", "constant"},
		{"actor_rollout_ref.rollout.name", "vllm"},
		{"actor_rollout_ref.rollout.temperature", 1},
		{"actor_rollout_ref.rollout.top_p", 1},
		{"actor_rollout_ref.rollout.top_k", -1},
		{"actor_rollout_ref.rollout.response_length", 400},
		{"actor_rollout_ref.rollout.max_model_len", 3600},
		{"actor_rollout_ref.rollout.tensor_model_parallel_size", 1},
		{"actor_rollout_ref.rollout.gpu_memory_utilization", 0.3},
		{"actor_rollout_ref.rollout.max_num_batched_tokens", 8192},
		{"actor_rollout_ref.rollout.enforce_eager", true},
		{"actor_rollout_ref.rollout.free_cache_engine", true},
		{"actor_rollout_ref.rollout.n", 1},
		{"actor_rollout_ref.rollout.val_kwargs.do_sample", true},
		{"actor_rollout_ref.rollout.val_kwargs.temperature", 0.5},
		{"actor_rollout_ref.rollout.val_kwargs.top_p", 1.0},
		{"actor_rollout_ref.rollout.val_kwargs.top_k", -1},
		{"actor_rollout_ref.rollout.val_kwargs.n", 1},
		{"actor_rollout_ref.rollout.rollout_filter_value", 1.0},
		{"actor_rollout_ref.rollout.rollout_filter_strategy", "top_p"},
		{"actor_rollout_ref.rollout.rollout_filter_type", "largest"},
		{"actor_rollout_ref.rollout.rollout_filter_include_zero", true},
		{"actor_rollout_ref.rollout.rollout_filter_top_p_prob_mode", "linear"},
		{"actor_rollout_ref.rollout.rollout_filter_selection_eps", 0.01},
		{"actor_rollout_ref.rollout.rollout_filter_empty_stop_steps", 5},
		{"actor_rollout_ref.rollout.rollout_filter_metric", "reward_variance"},
		{"actor_rollout_ref.rollout.gradient_analysis_num_buckets", 6},
		{"actor_rollout_ref.rollout.gradient_analysis_bucket_mode", "quantile"},
		{"critic.ppo_mini_batch_size", 32},
		{"critic.ppo_micro_batch_size_per_gpu", 1},
		{"critic.optim.lr", 1e-5},
		{"critic.cliprange_value", 0.5},
		{"critic.enable", nil},
		{"critic.model.path", "Qwen/Qwen2.5-3B-Instruct"},
		{"algorithm.gamma", 1.0},
		{"algorithm.lam", 1.0},
		{"algorithm.high_level_gamma", 0.95},
		{"algorithm.adv_estimator", "gae"},
		{"algorithm.bi_level_gae", false},
		{"algorithm.zero_task_advantage", false},
		{"algorithm.norm_adv_by_std_in_grpo", true},
		{"algorithm.soft_advantage_reweight", false},
		{"algorithm.use_kl_in_reward", false},
		{"algorithm.kl_penalty", "kl"},
		{"algorithm.kl_ctrl.type", "fixed"},
		{"algorithm.kl_ctrl.kl_coef", 0.0},
		{"algorithm.kl_ctrl.target_kl", 0.1},
		{"algorithm.kl_ctrl.horizon", 10000},
		{"trainer.project_name", "ragen"},
		{"trainer.experiment_name", "test"},
		{"trainer.total_training_steps", 200},
		{"trainer.save_freq", 100},
		{"trainer.test_freq", 10},
		{"trainer.validation_steps", 1},
		{"trainer.val_before_train", true},
		{"trainer.n_gpus_per_node", 1},
		{"trainer.nnodes", 1},
		{"trainer.logger", []any{"console", "wandb"}},
		{"trainer.generations_to_log_to_wandb.val", 20},
		{"trainer.max_actor_ckpt_to_keep", 1},
		{"trainer.max_critic_ckpt_to_keep", 1},
		{"trainer.balance_batch", true},
		{"trainer.critic_warmup", 0},
		{"trainer.resume_mode", "auto"},
		{"trainer.default_local_dir", "checkpoints/ragen/test"},
		{"trainer.local_log_dir", "results/"},
		{"trainer.log_group_rv_table", false},
		{"trainer.gradient_analysis_mode", false},
		{"trainer.gradient_analysis_every", 50},
		{"trainer.gradient_analysis_env_groups", nil},
		{"trainer.gradient_analysis_group_size", nil},
		{"trainer.gradient_analysis_log_prefilter", false},
		{"trainer.gradient_analysis_only", false},
		{"trainer.exit_after_gradient_analysis", false},
		{"agent_proxy.context_window_mode", "full"},
		{"agent_proxy.max_context_window", -1},
		{"agent_proxy.batch_adjust_mode", "copy"},
		{"agent_proxy.max_turn", 5},
		{"agent_proxy.action_sep", "||"},
		{"agent_proxy.max_actions_per_turn", 2},
		{"agent_proxy.use_turn_scores", false},
		{"agent_proxy.enable_think", true},
		{"agent_proxy.reward_normalization.grouping", "state"},
		{"agent_proxy.reward_normalization.method", "identity"},
		{"collapse_detection.compute_freq", 5},
		{"collapse_detection.micro_batch_size", 128},
		{"collapse_detection.first_turn_enabled", true},
		{"collapse_detection.multi_turn_enabled", true},
		{"collapse_detection.num_samples", 64},
		{"es_manager.format_penalty", -0.1},
		{"es_manager.train.env_groups", 8},
		{"es_manager.train.group_size", 16},
		{"es_manager.train.env_configs.tags", []any{"CoordSokoban"}},
		{"es_manager.train.env_configs.n_groups", []any{8}},
		{"es_manager.val.env_groups", 512},
		{"es_manager.val.group_size", 1},
		{"es_manager.val.env_configs.tags", []any{"CoordSokoban"}},
		{"es_manager.val.env_configs.n_groups", []any{512}},
		// derived at start-up: env_groups x group_size
		{"data.train_batch_size", 128},
	}
	for _, c := range cases {
		got, err := tr.Get(c.key)
		if err != nil {
			t.Errorf("%s: %v", c.key, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.key, got, c.want)
		}
	}
}

// The per-env experiment overrides named in starpo.md §9.
func TestExperimentConfigsMatchSpec(t *testing.T) {
	cases := []struct {
		cfg  string
		want map[string]any
	}{
		{"_1_bandit", map[string]any{"agent_proxy.max_turn": 1, "agent_proxy.max_actions_per_turn": 1,
			"es_manager.val.env_configs.tags": []any{"Bandit", "BanditTest"}, "es_manager.val.env_configs.n_groups": []any{256, 256}}},
		{"_6_webshop", map[string]any{"agent_proxy.max_turn": 9, "agent_proxy.max_actions_per_turn": 1,
			"actor_rollout_ref.rollout.max_model_len": 15000}},
		{"_7_lean", map[string]any{"agent_proxy.max_turn": 15, "agent_proxy.max_actions_per_turn": 4,
			"agent_proxy.max_context_window": 5, "trainer.n_gpus_per_node": 4}},
		{"_9_2048", map[string]any{"agent_proxy.max_turn": 800, "agent_proxy.max_context_window": 5}},
		{"_9_search", map[string]any{"agent_proxy.max_turn": 5, "es_manager.train.env_groups": 16,
			"es_manager.train.group_size": 8, "es_manager.val.env_groups": 256}},
		{"_10_rubikscube", map[string]any{"agent_proxy.max_turn": 25, "agent_proxy.max_actions_per_turn": 4,
			"agent_proxy.max_context_window": 5}},
	}
	for _, c := range cases {
		tr := mustLoad(t, c.cfg, nil, shipped())
		for key, want := range c.want {
			got, err := tr.Get(key)
			if err != nil {
				t.Errorf("%s %s: %v", c.cfg, key, err)
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s %s = %#v, want %#v", c.cfg, key, got, want)
			}
		}
		if err := Validate(tr); err != nil {
			t.Errorf("%s: %v", c.cfg, err)
		}
	}
}
