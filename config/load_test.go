package config

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
)

// shipped returns the search path of the shipped configs (the embedded files).
func shipped() Option { return WithFS(Embedded()) }

func mapFS(files map[string]string) fs.FS {
	m := fstest.MapFS{}
	for k, v := range files {
		m[k] = &fstest.MapFile{Data: []byte(v)}
	}
	return m
}

func mustLoad(t *testing.T, name string, ov []string, opts ...Option) *Tree {
	t.Helper()
	tr, err := Load(name, ov, opts...)
	if err != nil {
		t.Fatalf("Load(%q, %q): %v", name, ov, err)
	}
	return tr
}

func wantErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want an error containing %q, got nil", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("error %q does not contain %q", err, p)
		}
	}
}

func TestComposeDefaultsOrder(t *testing.T) {
	files := map[string]string{
		"a.yaml": "x: a\nonly_a: 1\n",
		"b.yaml": "x: b\nonly_b: 2\n",
		// _self_ implicit (last): own x wins over a and b.
		"last.yaml": "defaults: [a, b]\nx: self\n",
		// _self_ first: b, merged last, wins.
		"first.yaml": "defaults: [_self_, a, b]\nx: self\n",
		// _self_ between: b wins over self, self over a.
		"mid.yaml": "defaults: [a, _self_, b]\nx: self\ny: self\n",
		// order of a and b decides.
		"ba.yaml": "defaults: [b, a]\n",
	}
	opt := WithFS(mapFS(files))
	cases := []struct{ name, want string }{
		{"last", "self"}, {"first", "b"}, {"mid", "b"}, {"ba", "a"},
	}
	for _, c := range cases {
		tr := mustLoad(t, c.name, nil, opt)
		got, err := tr.String("x")
		if err != nil || got != c.want {
			t.Errorf("%s: x = %q, %v; want %q", c.name, got, err, c.want)
		}
		// Keys of every included config survive.
		if !tr.Has("only_a") || !tr.Has("only_b") {
			t.Errorf("%s: keys of a or b missing: %v", c.name, tr.Keys())
		}
		if tr.Has("defaults") {
			t.Errorf("%s: defaults key leaked into the config", c.name)
		}
	}
	if y, _ := mustLoad(t, "mid", nil, opt).String("y"); y != "self" {
		t.Errorf("mid: y = %q, want self", y)
	}
}

func TestComposeNestedGroupsAndPackages(t *testing.T) {
	files := map[string]string{
		"base.yaml":         "defaults: [inner]\nlevel: base\nm: {a: 1, b: 2}\n",
		"inner.yaml":        "level: inner\nm: {a: 0, c: 3}\n",
		"exp.yaml":          "defaults: [base, {model: small}, {optional opt: missing}, {head@heads.first: linear}, {skip: null}]\nm: {b: 20}\n",
		"model/small.yaml":  "defaults: [common]\nlayers: 2\n",
		"model/common.yaml": "act: gelu\nlayers: 1\n",
		"head/linear.yaml":  "kind: linear\n",
		"glob.yaml":         "# @package _global_\ntop: 1\n",
		"g/x.yaml":          "defaults: [/glob]\nv: 1\n",
		"useg.yaml":         "defaults: [{g: x}]\n",
		"lst.yaml":          "l: [1, 2, 3]\n",
		"lst2.yaml":         "defaults: [lst]\nl: [9]\n",
	}
	opt := WithFS(mapFS(files))
	tr := mustLoad(t, "exp", nil, opt)
	// base's own content (merged after inner) wins over inner; exp wins over base.
	checks := map[string]any{
		"level": "base", "m.a": 1, "m.b": 20, "m.c": 3,
		"model.layers": 2, "model.act": "gelu", "heads.first.kind": "linear",
	}
	for k, want := range checks {
		got, err := tr.Get(k)
		if err != nil || !equalValues(got, want) {
			t.Errorf("%s = %v (%v), want %v", k, got, err, want)
		}
	}
	if tr.Has("skip") || tr.Has("opt") {
		t.Errorf("null / missing optional groups must add nothing: %v", tr.Keys())
	}
	// "# @package _global_" places a config at the root even when included from a group.
	tr = mustLoad(t, "useg", nil, opt)
	if v, _ := tr.Int("top"); v != 1 {
		t.Errorf("global package: top = %v, keys %v", v, tr.Keys())
	}
	if v, _ := tr.Int("g.v"); v != 1 {
		t.Errorf("group package: g.v = %v", v)
	}
	// Lists are replaced, not merged (OmegaConf).
	l, _ := mustLoad(t, "lst2", nil, opt).IntSlice("l")
	if !reflect.DeepEqual(l, []int{9}) {
		t.Errorf("list merge: %v, want [9]", l)
	}
}

func TestComposeErrors(t *testing.T) {
	files := map[string]string{
		"cyc1.yaml":    "defaults: [cyc2]\n",
		"cyc2.yaml":    "defaults: [cyc1]\n",
		"missing.yaml": "defaults: [nothere]\n",
		"badd.yaml":    "defaults: 3\n",
		"ovr.yaml":     "defaults: [{override model: x}]\n",
		"list.yaml":    "- 1\n- 2\n",
		"dup.yaml":     "a: 1\na: 2\n",
		"bad.yaml":     "a: [1\n",
		"base.yaml":    "a: 1\n",
	}
	opt := WithFS(mapFS(files))
	for name, want := range map[string]string{
		"cyc1":    "defaults cycle: cyc1 -> cyc2 -> cyc1",
		"missing": `cannot find config "nothere"`,
		"badd":    "defaults must be a list",
		"ovr":     "not supported",
		"list":    "want a map",
		"dup":     "duplicate key",
		"bad":     "bad.yaml",
		"bsae":    "did you mean base?",
	} {
		_, err := Load(name, nil, opt)
		wantErr(t, err, want)
	}
}

func TestShippedExperimentsLoadAndValidate(t *testing.T) {
	// Per-experiment expectations from the upstream files (starpo.md §9).
	type exp struct {
		maxTurn, actions, window, respLen, modelLen, trainGroups, groupSize, valGroups int
		trainTags, valTags                                                             []string
	}
	cases := map[string]exp{
		"base":             {5, 2, -1, 400, 3600, 8, 16, 512, []string{"CoordSokoban"}, []string{"CoordSokoban"}},
		"_1_bandit":        {1, 1, -1, 500, 3600, 8, 16, 512, []string{"Bandit"}, []string{"Bandit", "BanditTest"}},
		"_2_sokoban":       {5, 2, -1, 400, 3600, 8, 16, 512, []string{"CoordSokoban"}, []string{"CoordSokoban"}},
		"_3_frozen_lake":   {5, 2, -1, 400, 3600, 8, 16, 512, []string{"CoordFrozenLake"}, []string{"CoordFrozenLake"}},
		"_4_countdown":     {1, 1, -1, 400, 3600, 8, 16, 512, []string{"Countdown"}, []string{"Countdown"}},
		"_5_metamathqa":    {5, 2, -1, 400, 3600, 8, 16, 512, []string{"MetamathQA"}, []string{"MetamathQA"}},
		"_6_webshop":       {9, 1, -1, 400, 15000, 8, 16, 512, []string{"WebShop"}, []string{"WebShop"}},
		"_7_lean":          {15, 4, 5, 512, 8096, 8, 16, 512, []string{"Lean"}, []string{"Lean"}},
		"_8_sudoku":        {5, 2, -1, 400, 3600, 8, 16, 32, []string{"SimpleSudoku"}, []string{"SimpleSudoku"}},
		"_9_2048":          {800, 1, 5, 256, 8192, 8, 16, 512, []string{"game_2048"}, []string{"game_2048"}},
		"_9_search":        {5, 1, -1, 400, 5000, 16, 8, 256, []string{"SearchQA"}, []string{"SearchQA"}},
		"_10_deepcoder":    {1, 1, -1, 400, 3600, 8, 16, 512, []string{"DeepCoder"}, []string{"DeepCoder"}},
		"_10_rubikscube":   {25, 4, 5, 500, 3600, 8, 16, 512, []string{"rubikscube"}, []string{"rubikscube"}},
		"eval":             {5, 2, -1, 400, 3600, 8, 16, 32, []string{"CoordSokoban"}, []string{"CoordSokoban"}},
		"evaluate_api_llm": {5, 2, -1, 400, 3600, 8, 16, 256, []string{"CoordSokoban"}, []string{"CoordSokoban"}},
		"webshop_full":     {15, 1, -1, 400, 15000, 8, 16, 512, []string{"WebShopFull"}, []string{"WebShopFull"}},
		"stream":           {5, 2, -1, 400, 3600, 8, 16, 1, []string{"CoordSokoban"}, []string{"SimpleSokoban"}},
	}
	for name, e := range cases {
		t.Run(name, func(t *testing.T) {
			tr := mustLoad(t, name, nil, shipped())
			if tr.Has("hydra") {
				t.Error("the hydra key must be dropped")
			}
			ints := map[string]int{
				"agent_proxy.max_turn":                      e.maxTurn,
				"agent_proxy.max_actions_per_turn":          e.actions,
				"agent_proxy.max_context_window":            e.window,
				"actor_rollout_ref.rollout.response_length": e.respLen,
				"actor_rollout_ref.rollout.max_model_len":   e.modelLen,
				"es_manager.train.env_groups":               e.trainGroups,
				"es_manager.train.group_size":               e.groupSize,
				"es_manager.val.env_groups":                 e.valGroups,
			}
			for k, want := range ints {
				if got, err := tr.Int(k); err != nil || got != want {
					t.Errorf("%s = %d (%v), want %d", k, got, err, want)
				}
			}
			if got, _ := tr.StringSlice("es_manager.train.env_configs.tags"); !reflect.DeepEqual(got, e.trainTags) {
				t.Errorf("train tags %v, want %v", got, e.trainTags)
			}
			if got, _ := tr.StringSlice("es_manager.val.env_configs.tags"); !reflect.DeepEqual(got, e.valTags) {
				t.Errorf("val tags %v, want %v", got, e.valTags)
			}
			if err := Validate(tr); err != nil {
				t.Errorf("Validate: %v", err)
			}
			// No interpolation survives resolution.
			if strings.Contains(tr.YAML(), "${") {
				t.Errorf("unresolved interpolation in\n%s", tr.YAML())
			}
		})
	}
}

func TestBaseDefaults(t *testing.T) {
	tr := mustLoad(t, "base", nil, shipped())
	// starpo.md §9 (and veRL defaults that RAGEN relies on).
	want := map[string]any{
		"system.CUDA_VISIBLE_DEVICES": "0", "seed.train": 10000, "seed.val": 123,
		"model_path": "Qwen/Qwen2.5-3B-Instruct", "enable_response_mask": true,
		"micro_batch_size_per_gpu": 1, "log_prob_micro_batch_size_per_gpu": 1, "ppo_mini_batch_size": 32,
		"lora.rank": 0, "lora.alpha": 64, "lora.target_modules": "all-linear",
		"actor_rollout_ref.model.path":                              "Qwen/Qwen2.5-3B-Instruct",
		"actor_rollout_ref.actor.ppo_mini_batch_size":               32,
		"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu":      1,
		"actor_rollout_ref.actor.use_ref":                           true,
		"actor_rollout_ref.actor.entropy_coeff":                     0.001,
		"actor_rollout_ref.actor.use_kl_loss":                       false,
		"actor_rollout_ref.actor.kl_loss_coef":                      0.0,
		"actor_rollout_ref.actor.kl_loss_type":                      "kl",
		"actor_rollout_ref.actor.clip_ratio":                        0.2,
		"actor_rollout_ref.actor.clip_ratio_low":                    0.2,
		"actor_rollout_ref.actor.clip_ratio_high":                   0.28,
		"actor_rollout_ref.actor.clip_ratio_c":                      3.0,
		"actor_rollout_ref.actor.loss_agg_mode":                     "token-mean",
		"actor_rollout_ref.actor.filter_loss_scaling":               "none",
		"actor_rollout_ref.actor.ppo_epochs":                        1,
		"actor_rollout_ref.actor.shuffle":                           false,
		"actor_rollout_ref.actor.grad_clip":                         1.0,
		"actor_rollout_ref.actor.use_dynamic_bsz":                   false,
		"actor_rollout_ref.actor.optim.lr":                          1e-6,
		"actor_rollout_ref.actor.optim.weight_decay":                0.01,
		"actor_rollout_ref.actor.optim.lr_warmup_steps_ratio":       0.0,
		"actor_rollout_ref.actor.optim.warmup_style":                "constant",
		"actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu":   1,
		"actor_rollout_ref.rollout.name":                            "vllm",
		"actor_rollout_ref.rollout.temperature":                     1,
		"actor_rollout_ref.rollout.top_p":                           1,
		"actor_rollout_ref.rollout.top_k":                           -1,
		"actor_rollout_ref.rollout.response_length":                 400,
		"actor_rollout_ref.rollout.max_model_len":                   3600,
		"actor_rollout_ref.rollout.tensor_model_parallel_size":      1,
		"actor_rollout_ref.rollout.gpu_memory_utilization":          0.3,
		"actor_rollout_ref.rollout.max_num_batched_tokens":          8192,
		"actor_rollout_ref.rollout.enforce_eager":                   true,
		"actor_rollout_ref.rollout.free_cache_engine":               true,
		"actor_rollout_ref.rollout.n":                               1,
		"actor_rollout_ref.rollout.val_kwargs.do_sample":            true,
		"actor_rollout_ref.rollout.val_kwargs.temperature":          0.5,
		"actor_rollout_ref.rollout.val_kwargs.top_p":                1.0,
		"actor_rollout_ref.rollout.val_kwargs.top_k":                -1,
		"actor_rollout_ref.rollout.val_kwargs.n":                    1,
		"actor_rollout_ref.rollout.rollout_filter_value":            1.0,
		"actor_rollout_ref.rollout.rollout_filter_strategy":         "top_p",
		"actor_rollout_ref.rollout.rollout_filter_type":             "largest",
		"actor_rollout_ref.rollout.rollout_filter_include_zero":     true,
		"actor_rollout_ref.rollout.rollout_filter_top_p_prob_mode":  "linear",
		"actor_rollout_ref.rollout.rollout_filter_selection_eps":    0.01,
		"actor_rollout_ref.rollout.rollout_filter_empty_stop_steps": 5,
		"actor_rollout_ref.rollout.rollout_filter_metric":           "reward_variance",
		"actor_rollout_ref.rollout.gradient_analysis_num_buckets":   6,
		"actor_rollout_ref.rollout.gradient_analysis_bucket_mode":   "quantile",
		"critic.ppo_mini_batch_size":                                32,
		"critic.ppo_micro_batch_size_per_gpu":                       1,
		"critic.optim.lr":                                           1e-5,
		"critic.cliprange_value":                                    0.5,
		"critic.enable":                                             nil,
		"critic.model.path":                                         "Qwen/Qwen2.5-3B-Instruct",
		"critic.loss_agg_mode":                                      "token-mean",
		"algorithm.gamma":                                           1.0,
		"algorithm.lam":                                             1.0,
		"algorithm.high_level_gamma":                                0.95,
		"algorithm.adv_estimator":                                   "gae",
		"algorithm.bi_level_gae":                                    false,
		"algorithm.zero_task_advantage":                             false,
		"algorithm.norm_adv_by_std_in_grpo":                         true,
		"algorithm.soft_advantage_reweight":                         false,
		"algorithm.use_kl_in_reward":                                false,
		"algorithm.kl_penalty":                                      "kl",
		"algorithm.kl_ctrl.type":                                    "fixed",
		"algorithm.kl_ctrl.kl_coef":                                 0.0,
		"algorithm.kl_ctrl.target_kl":                               0.1,
		"algorithm.kl_ctrl.horizon":                                 10000,
		"trainer.project_name":                                      "ragen",
		"trainer.experiment_name":                                   "test",
		"trainer.total_training_steps":                              200,
		"trainer.save_freq":                                         100,
		"trainer.test_freq":                                         10,
		"trainer.validation_steps":                                  1,
		"trainer.val_before_train":                                  true,
		"trainer.n_gpus_per_node":                                   1,
		"trainer.nnodes":                                            1,
		"trainer.generations_to_log_to_wandb.val":                   20,
		"trainer.max_actor_ckpt_to_keep":                            1,
		"trainer.max_critic_ckpt_to_keep":                           1,
		"trainer.balance_batch":                                     true,
		"trainer.critic_warmup":                                     0,
		"trainer.resume_mode":                                       "auto",
		"trainer.default_local_dir":                                 "checkpoints/ragen/test",
		"trainer.local_log_dir":                                     "results/",
		"trainer.log_group_rv_table":                                false,
		"trainer.gradient_analysis_mode":                            false,
		"trainer.gradient_analysis_every":                           50,
		"trainer.gradient_analysis_env_groups":                      nil,
		"trainer.gradient_analysis_group_size":                      nil,
		"trainer.gradient_analysis_log_prefilter":                   false,
		"trainer.gradient_analysis_only":                            false,
		"trainer.exit_after_gradient_analysis":                      false,
		"agent_proxy.context_window_mode":                           "full",
		"agent_proxy.max_context_window":                            -1,
		"agent_proxy.batch_adjust_mode":                             "copy",
		"agent_proxy.max_turn":                                      5,
		"agent_proxy.action_sep":                                    "||",
		"agent_proxy.max_actions_per_turn":                          2,
		"agent_proxy.use_turn_scores":                               false,
		"agent_proxy.enable_think":                                  true,
		"agent_proxy.reward_normalization.grouping":                 "state",
		"agent_proxy.reward_normalization.method":                   "identity",
		"collapse_detection.compute_freq":                           5,
		"collapse_detection.micro_batch_size":                       128,
		"collapse_detection.first_turn_enabled":                     true,
		"collapse_detection.multi_turn_enabled":                     true,
		"collapse_detection.num_samples":                            64,
		"es_manager.format_penalty":                                 -0.1,
		"es_manager.val.group_size":                                 1,
		"ctx_manager.generation.gen_config.response_length":         400,
		"data.train_batch_size":                                     nil,
	}
	for k, w := range want {
		got, err := tr.Get(k)
		if err != nil {
			t.Errorf("%s: %v", k, err)
			continue
		}
		if typeName(got) != typeName(w) || !equalValues(got, w) {
			t.Errorf("%s = %s, want %s", k, describe(got), describe(w))
		}
	}
	if l, _ := tr.StringSlice("trainer.logger"); !reflect.DeepEqual(l, []string{"console", "wandb"}) {
		t.Errorf("trainer.logger = %v", l)
	}
	if tr.Has("hydra") {
		t.Error("hydra key must be dropped")
	}
}

func TestOverrides(t *testing.T) {
	files := map[string]string{
		"c.yaml": "a:\n  b: 1\n  s: text\n  n: null\n  l: [1, 2]\n  m: {x: 1, y: 2}\ntop: 5\n",
	}
	opt := WithFS(mapFS(files))
	cases := []struct {
		name string
		ov   []string
		key  string
		want any
	}{
		{"set int", []string{"a.b=7"}, "a.b", 7},
		{"set float exp", []string{"a.b=1e-6"}, "a.b", 1e-6},
		{"set float", []string{"a.b=0.25"}, "a.b", 0.25},
		{"set neg", []string{"a.b=-3"}, "a.b", -3},
		{"set bool any case", []string{"a.b=True"}, "a.b", true},
		{"set null", []string{"a.b=NULL"}, "a.b", nil},
		{"set string", []string{"a.s=Qwen/Qwen2.5-0.5B-Instruct"}, "a.s", "Qwen/Qwen2.5-0.5B-Instruct"},
		{"set quoted number stays string", []string{"a.s='0,1'"}, "a.s", "0,1"},
		{"set double quoted", []string{`a.s="a b"`}, "a.s", "a b"},
		{"unquoted spaces trimmed", []string{"a.s=  hello world  "}, "a.s", "hello world"},
		{"empty string", []string{"a.s="}, "a.s", ""},
		{"set list", []string{"a.l=[3, 'x', 1.5]"}, "a.l", []any{3, "x", 1.5}},
		{"set empty list", []string{"a.l=[]"}, "a.l", []any{}},
		{"set nested list", []string{"a.l=[[1],[2,3]]"}, "a.l", []any{[]any{1}, []any{2, 3}}},
		{"set null value key", []string{"a.n=3"}, "a.n", 3},
		{"dict merges", []string{"a.m={y: 20, z: 30}"}, "a.m.x", 1},
		{"dict merges 2", []string{"a.m={y: 20, z: 30}"}, "a.m.z", 30},
		{"list index", []string{"a.l.1=9"}, "a.l", []any{1, 9}},
		{"list index brackets", []string{"a.l[0]=8"}, "a.l", []any{8, 2}},
		{"add new", []string{"+a.new=1"}, "a.new", 1},
		{"add deep new", []string{"+x.y.z=ok"}, "x.y.z", "ok"},
		{"add over null", []string{"+a.n=4"}, "a.n", 4},
		{"add dict over existing merges", []string{"+a.m={w: 0}"}, "a.m.w", 0},
		{"force add new", []string{"++p.q=1"}, "p.q", 1},
		{"force add existing", []string{"++a.b=2"}, "a.b", 2},
		{"later override wins", []string{"a.b=2", "a.b=3"}, "a.b", 3},
		{"int cast", []string{"a.s=int(3.7)"}, "a.s", 3},
		{"str cast", []string{"a.s=str(12)"}, "a.s", "12"},
		{"float cast", []string{"a.s=float(2)"}, "a.s", 2.0},
		{"escaped comma", []string{`a.s=a\,b`}, "a.s", "a,b"},
		{"interpolation value", []string{"a.s=${top}"}, "a.s", 5},
		{"inf", []string{"a.b=-inf"}, "a.b", math.Inf(-1)},
		{"int underscore", []string{"a.b=1_000"}, "a.b", 1000},
		{"leading zeros are text", []string{"a.s=007"}, "a.s", "007"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := mustLoad(t, "c", c.ov, opt)
			got, err := tr.Get(c.key)
			if err != nil {
				t.Fatal(err)
			}
			if typeName(got) != typeName(c.want) || !equalValues(got, c.want) {
				t.Fatalf("%s = %s, want %s", c.key, describe(got), describe(c.want))
			}
		})
	}

	// Deletion.
	tr := mustLoad(t, "c", []string{"~a.m", "~a.l.0", "~top=5"}, opt)
	if tr.Has("a.m") || tr.Has("top") {
		t.Errorf("delete failed: %v", tr.Keys())
	}
	if l, _ := tr.IntSlice("a.l"); !reflect.DeepEqual(l, []int{2}) {
		t.Errorf("delete list element: %v", l)
	}

	errCases := []struct {
		ov    string
		parts []string
	}{
		{"a.bb=1", []string{"could not override a.bb", "did you mean a.b?", "+a.bb=1"}},
		{"s=1", []string{"did you mean a.s?"}},
		{"+a.b=1", []string{"could not add a.b", "a.b=1", "++a.b=1"}},
		{"~a.zz", []string{"could not delete a.zz", "does not exist"}},
		{"~a.b=2", []string{"its value is 1, not 2"}},
		{"a.b", []string{"missing '='"}},
		{"a.b=1,2", []string{"ambiguous value"}},
		{"a.b=[1,2", []string{"missing ']'"}},
		{"a.b={x 1}", []string{"missing ':'"}},
		{"a.b='abc", []string{"unterminated"}},
		{"=1", []string{"empty key"}},
		{"a..b=1", []string{"empty segment"}},
		{"a@p=1", []string{"package overrides"}},
		{"a.b=choice(1,2)", []string{"sweep"}},
		{"a.b=int(x)", []string{"cannot cast"}},
		{"+a.b.c=1", []string{"a.b is a int"}},
		{"a.l.5=1", []string{"could not override a.l.5"}},
		{"a.b=${nothere}", []string{"refers to missing key nothere"}},
	}
	for _, c := range errCases {
		_, err := Load("c", []string{c.ov}, opt)
		wantErr(t, err, c.parts...)
	}
	// All problems are reported at once.
	_, err := Load("c", []string{"a.bb=1", "a.cc=2"}, opt)
	wantErr(t, err, "a.bb", "a.cc")
	if !errors.Is(mustErr(Load("c", []string{"a.b"}, opt)), ErrOverride) {
		t.Error("malformed override must wrap ErrOverride")
	}
}

func mustErr(_ *Tree, err error) error { return err }

func TestParseOverrideKinds(t *testing.T) {
	cases := []struct {
		in       string
		kind     OverrideKind
		key      string
		hasValue bool
	}{
		{"a.b=1", Set, "a.b", true},
		{"+a.b=1", Add, "a.b", true},
		{"++a.b=1", ForceAdd, "a.b", true},
		{"~a.b", Delete, "a.b", false},
		{"~a.b=1", Delete, "a.b", true},
	}
	for _, c := range cases {
		ov, err := ParseOverride(c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if ov.Kind != c.kind || ov.Key != c.key || ov.HasValue != c.hasValue || ov.Input != c.in {
			t.Errorf("%s: got %+v", c.in, ov)
		}
	}
}

func TestInterpolation(t *testing.T) {
	files := map[string]string{
		"i.yaml": `
micro: 4
name: run
sec:
  a: ${micro}
  rel: ${.a}
  up: ${..name}
  text: "ckpt/${name}/${micro}"
  f: 1e-6
  ftext: "lr=${.f}"
  b: true
  btext: "flag ${.b} ${.none}"
  none: null
  lst: ['it''s a\b', "tab\t"]
  ltext: "l=${.lst}"
  env: ${oc.env:RAGEN_TEST_VAR,fallback}
  envnum: ${oc.env:RAGEN_TEST_UNSET,10}
  envnull: ${oc.env:RAGEN_TEST_UNSET,null}
  set: ${oc.env:RAGEN_TEST_VAR}
  sel: ${oc.select:sec.nothere,7}
  nested: ${oc.env:RAGEN_TEST_UNSET,${name}}
  esc: \${micro}
  chain: ${sec.a}
  copy: ${sub}
sub:
  x: ${micro}
  l: ["${micro}", 2]
`,
		"cycle.yaml":    "a: ${b}\nb: ${c}\nc: ${a}\n",
		"self.yaml":     "a: ${a}\n",
		"miss.yaml":     "trainer:\n  project_name: p\n  dir: ${trainer.projct_name}\n",
		"noenv.yaml":    "a: ${oc.env:RAGEN_TEST_UNSET}\n",
		"badres.yaml":   "a: ${oc.nope:x}\n",
		"unterm.yaml":   "a: ${b\nb: 1\n",
		"above.yaml":    "a: ${...x}\n",
		"override.yaml": "base_lr: 1.0\nlr: ${base_lr}\n",
	}
	env := func(k string) (string, bool) {
		if k == "RAGEN_TEST_VAR" {
			return "from-env", true
		}
		return "", false
	}
	opt := []Option{WithFS(mapFS(files)), WithEnv(env)}
	tr := mustLoad(t, "i", nil, opt...)
	want := map[string]any{
		"sec.a": 4, "sec.rel": 4, "sec.up": "run", "sec.text": "ckpt/run/4",
		"sec.ftext": "lr=1e-06", "sec.btext": "flag True None", "sec.ltext": `l=["it's a\\b", 'tab\t']`,
		"sec.env": "from-env", "sec.envnum": "10", "sec.envnull": nil, "sec.set": "from-env",
		"sec.sel": 7, "sec.nested": "run", "sec.esc": "${micro}", "sec.chain": 4,
		"sec.copy.x": 4, "sub.l": []any{4, 2},
	}
	for k, w := range want {
		got, err := tr.Get(k)
		if err != nil || typeName(got) != typeName(w) || !equalValues(got, w) {
			t.Errorf("%s = %s (%v), want %s", k, describe(got), err, describe(w))
		}
	}
	// Overrides apply before resolution, so interpolations see overridden values.
	tr = mustLoad(t, "override", []string{"base_lr=0.5"}, opt...)
	if lr, _ := tr.Float("lr"); lr != 0.5 {
		t.Errorf("lr = %v, want 0.5 (override before resolution)", lr)
	}
	errs := map[string][]string{
		"cycle":  {"interpolation cycle", "a -> b -> c -> a"},
		"self":   {"interpolation cycle"},
		"miss":   {"trainer.dir", "missing key trainer.projct_name", "did you mean trainer.project_name?"},
		"noenv":  {"RAGEN_TEST_UNSET is not set"},
		"badres": {`unknown resolver "oc.nope"`},
		"unterm": {"unterminated interpolation"},
		"above":  {"climbs above the root"},
	}
	for name, parts := range errs {
		_, err := Load(name, nil, opt...)
		wantErr(t, err, parts...)
		if !errors.Is(err, ErrInterpolation) {
			t.Errorf("%s: error does not wrap ErrInterpolation: %v", name, err)
		}
	}
}

func TestYAMLParsing(t *testing.T) {
	// OmegaConf's YAML 1.1 loader rules (PyYAML + float fix).
	files := map[string]string{"y.yaml": `
f1: 1e-6
f2: 1.0e-5
f3: .5
f4: -.inf
i1: 0x1F
i2: 010
i3: -7
b1: yes
b2: Off
b3: True
n1: ~
n2:
s1: "1"
s2: '${x}'
s3: 1_000
s4: tRuE
s5: 1.2.3
s6: !!str 12
f5: !!float 3
anchor: &A {k: 1}
alias: *A
merged:
  <<: *A
  j: 2
x: 1
`}
	tr := mustLoad(t, "y", nil, WithFS(mapFS(files)))
	want := map[string]any{
		"f1": 1e-6, "f2": 1e-5, "f3": 0.5, "f4": math.Inf(-1), "i1": 31, "i2": 8, "i3": -7,
		"b1": true, "b2": false, "b3": true, "n1": nil, "n2": nil, "s1": "1", "s2": 1,
		"s3": 1000, "s4": "tRuE", "s5": "1.2.3", "s6": "12", "f5": 3.0, "alias.k": 1,
		"merged.k": 1, "merged.j": 2,
	}
	for k, w := range want {
		got, err := tr.Get(k)
		if err != nil || typeName(got) != typeName(w) || !equalValues(got, w) {
			t.Errorf("%s = %s (%v), want %s", k, describe(got), err, describe(w))
		}
	}
}

func TestGetters(t *testing.T) {
	files := map[string]string{"g.yaml": "i: 3\nf: 2.5\ns: hi\nb: false\nl: [a, b]\nli: [1, 2]\nmixed: [a, 1]\nn: null\nm: {k: 1}\nq: ???\n"}
	tr := mustLoad(t, "g", nil, WithFS(mapFS(files)))
	if v, err := tr.Int("i"); err != nil || v != 3 {
		t.Errorf("Int: %v %v", v, err)
	}
	if v, err := tr.Float("i"); err != nil || v != 3 {
		t.Errorf("Float(int): %v %v", v, err)
	}
	if v, err := tr.Float("f"); err != nil || v != 2.5 {
		t.Errorf("Float: %v %v", v, err)
	}
	if v, err := tr.String("s"); err != nil || v != "hi" {
		t.Errorf("String: %v %v", v, err)
	}
	if v, err := tr.Bool("b"); err != nil || v {
		t.Errorf("Bool: %v %v", v, err)
	}
	if v, err := tr.StringSlice("l"); err != nil || !reflect.DeepEqual(v, []string{"a", "b"}) {
		t.Errorf("StringSlice: %v %v", v, err)
	}
	if v, err := tr.IntSlice("li"); err != nil || !reflect.DeepEqual(v, []int{1, 2}) {
		t.Errorf("IntSlice: %v %v", v, err)
	}
	typeErrs := []struct {
		err   error
		parts []string
	}{
		{second(tr.Int("f")), []string{"f: want int, found float 2.5"}},
		{second(tr.Int("s")), []string{"s: want int, found string hi"}},
		{second(tr.Float("b")), []string{"b: want float, found bool false"}},
		{second(tr.String("n")), []string{"n: want string, found null"}},
		{second(tr.Bool("m")), []string{"m: want bool, found map"}},
		{second(tr.StringSlice("mixed")), []string{"mixed[1]: want string, found int 1"}},
		{second(tr.IntSlice("s")), []string{"s: want list of ints, found string hi"}},
	}
	for _, c := range typeErrs {
		wantErr(t, c.err, c.parts...)
		if !errors.Is(c.err, ErrType) {
			t.Errorf("%v does not wrap ErrType", c.err)
		}
	}
	_, err := tr.Int("ii")
	wantErr(t, err, "ii: key not found", "did you mean i?")
	if !errors.Is(err, ErrNotFound) {
		t.Error("missing key must wrap ErrNotFound")
	}
	_, err = tr.Get("q")
	wantErr(t, err, "missing mandatory value")
	// Get returns copies: mutating the result leaves the tree alone.
	m, _ := tr.Get("m")
	m.(*Map).set("k", 99)
	if v, _ := tr.Int("m.k"); v != 1 {
		t.Error("Get must return a copy")
	}
}

func second[T any](_ T, err error) error { return err }

func TestKeysYAMLHashSet(t *testing.T) {
	files := map[string]string{"k.yaml": "b: 1\na:\n  y: [1, 2]\n  x: {}\n  z: {w: 'yes'}\nf: 1e-6\ns: '010'\n"}
	opt := WithFS(mapFS(files))
	tr := mustLoad(t, "k", nil, opt)
	wantKeys := []string{"b", "a.y", "a.x", "a.z.w", "f", "s"}
	if got := tr.Keys(); !reflect.DeepEqual(got, wantKeys) {
		t.Errorf("Keys = %v, want %v", got, wantKeys)
	}
	// The printed YAML reads back to the same tree (strings that look like other types are
	// quoted, floats keep their type).
	back := mustLoad(t, "out", nil, WithFS(mapFS(map[string]string{"out.yaml": tr.YAML()})))
	if back.Hash() != tr.Hash() {
		t.Errorf("YAML round trip changed the config:\n%s", tr.YAML())
	}
	// Hash: independent of key order, sensitive to values and types.
	reordered := mustLoad(t, "r", nil, WithFS(mapFS(map[string]string{"r.yaml": "s: '010'\nf: 1.0e-6\na:\n  z: {w: 'yes'}\n  x: {}\n  y: [1, 2]\nb: 1\n"})))
	if reordered.Hash() != tr.Hash() {
		t.Error("hash depends on key order")
	}
	if mustLoad(t, "k", []string{"b=1.0"}, opt).Hash() == tr.Hash() {
		t.Error("hash must distinguish 1 from 1.0")
	}
	if mustLoad(t, "k", []string{"b=2"}, opt).Hash() == tr.Hash() {
		t.Error("hash must change with values")
	}
	if len(tr.Hash()) != 64 {
		t.Errorf("hash %q is not hex sha256", tr.Hash())
	}
	// Set adds derived keys.
	if err := tr.Set("data.train_batch_size", int64(128)); err != nil {
		t.Fatal(err)
	}
	if v, _ := tr.Int("data.train_batch_size"); v != 128 {
		t.Errorf("Set: %v", v)
	}
	wantErr(t, tr.Set("b.c", 1), "b is a int")
	wantErr(t, tr.Set("x", struct{}{}), "unsupported value type")
	if !strings.Contains(tr.RawYAML(), "train_batch_size: 128") {
		t.Error("Set must reach the raw tree too")
	}
}

func TestWithConfigPath(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/mine.yaml", []byte("defaults: [base]\ntrainer:\n  experiment_name: mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The user directory is searched first; base (and envs) come from the shipped files.
	tr, err := Load("mine", nil, WithConfigPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := tr.String("trainer.experiment_name"); v != "mine" {
		t.Errorf("experiment_name = %q", v)
	}
	if v, _ := tr.Int("ppo_mini_batch_size"); v != 32 {
		t.Errorf("base not composed: ppo_mini_batch_size = %d", v)
	}
}

// Every embedded config that is not a fragment (envs.yaml, ppo_trainer.yaml) loads and
// validates, including experiment files added later.
func TestEveryEmbeddedConfigValidates(t *testing.T) {
	names, err := fs.Glob(Embedded(), "*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range names {
		name := strings.TrimSuffix(f, ".yaml")
		if name == "envs" || name == "ppo_trainer" {
			continue
		}
		n++
		tr, err := Load(name, nil)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if err := Validate(tr); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if n < 17 {
		t.Errorf("only %d experiment configs embedded: %v", n, names)
	}
}
