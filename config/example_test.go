package config_test

import (
	"errors"
	"fmt"
	"testing/fstest"

	"ragen/config"
)

// Load an experiment with command-line overrides, as `ragen train --config-name
// _2_sokoban ...` does.
func ExampleLoad() {
	t, err := config.Load("_2_sokoban", []string{
		"trainer.total_training_steps=50",
		"algorithm.adv_estimator=grpo",
		"+trainer.note='first try'",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	steps, _ := t.Int("trainer.total_training_steps")
	est, _ := t.String("algorithm.adv_estimator")
	dir, _ := t.String("trainer.default_local_dir") // ${trainer.project_name}/${...} resolved
	note, _ := t.String("trainer.note")
	fmt.Println(steps, est, dir, note)
	// Output: 50 grpo checkpoints/ragen/sokoban-main first try
}

// A mistyped key is rejected with the nearest valid key.
func ExampleLoad_unknownKey() {
	_, err := config.Load("base", []string{"actor_rollout_ref.actor.ppo_mini_batch=16"})
	fmt.Println(err)
	// Output: config: could not override actor_rollout_ref.actor.ppo_mini_batch: key does not exist (did you mean actor_rollout_ref.actor.ppo_mini_batch_size?); to add it use +actor_rollout_ref.actor.ppo_mini_batch=16
}

// Composition with a defaults list and _self_, from any fs.FS.
func ExampleWithFS() {
	fsys := fstest.MapFS{
		"common.yaml": {Data: []byte("lr: 1e-6\nname: common\n")},
		"exp.yaml":    {Data: []byte("defaults: [_self_, common]\nname: exp\nrun: ${name}-${lr}\n")},
	}
	t, err := config.Load("exp", nil, config.WithFS(fsys))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(t.YAML())
	// Output:
	// name: common
	// run: common-1e-06
	// lr: 1.0e-06
}

// Validate reports every inconsistency at once.
func ExampleValidate() {
	t, _ := config.Load("base", []string{
		"micro_batch_size_per_gpu=3",
		"es_manager.train.env_configs.n_groups=[4]",
	})
	err := config.Validate(t)
	var p config.Problem
	fmt.Println(errors.As(err, &p))
	fmt.Println(err)
	// Output:
	// true
	// config: actor_rollout_ref.actor.ppo_mini_batch_size: 32 is not a multiple of ppo_micro_batch_size_per_gpu x n_gpus_per_node = 3 x 1 = 3; nearest fitting: 30 or 33
	// config: critic.ppo_mini_batch_size: 32 is not a multiple of ppo_micro_batch_size_per_gpu x n_gpus_per_node = 3 x 1 = 3; nearest fitting: 30 or 33
	// config: es_manager.train.env_configs.n_groups: [4] sums to 4 but env_groups=8; make them agree (set env_groups=4 or change n_groups)
}

// Decode a section into a package's own config struct; unknown keys are errors.
func ExampleTree_Decode() {
	t, _ := config.Load("_1_bandit", nil)
	var val struct {
		EnvGroups  int `yaml:"env_groups"`
		GroupSize  int `yaml:"group_size"`
		EnvConfigs struct {
			Tags    []string `yaml:"tags"`
			NGroups []int    `yaml:"n_groups"`
		} `yaml:"env_configs"`
	}
	if err := t.Decode("es_manager.val", &val); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(val.EnvGroups, val.GroupSize, val.EnvConfigs.Tags, val.EnvConfigs.NGroups)

	var wrong struct {
		EnvGroups int `yaml:"env_groups"`
	}
	fmt.Println(t.Decode("es_manager.val", &wrong) != nil)
	// Output:
	// 512 1 [Bandit BanditTest] [256 256]
	// true
}

// Typed getters name the path and the type found.
func ExampleTree_Int() {
	t, _ := config.Load("base", nil)
	_, err := t.Int("model_path")
	fmt.Println(err)
	// Output: config: model_path: want int, found string Qwen/Qwen2.5-3B-Instruct: wrong type
}

func ExampleParseOverride() {
	for _, s := range []string{"a.b=1e-4", "+x=[1, two]", "++y={k: null}", "~z"} {
		ov, _ := config.ParseOverride(s)
		fmt.Printf("%s %s %v\n", ov.Kind, ov.Key, ov.Value)
	}
	// Output:
	// set a.b 0.0001
	// add x [1 two]
	// force-add y {k: null}
	// delete z <nil>
}

// Estimate a training step's memory from a config before starting.
func ExampleEstimateMemory() {
	t, _ := config.Load("base", []string{"model_path=Qwen/Qwen2.5-0.5B-Instruct"})
	plan, err := config.MemoryPlanFromTree(t)
	if err != nil {
		fmt.Println(err)
		return
	}
	est, _ := config.EstimateMemory(plan)
	fmt.Println(est.TotalParams, est.Fits(80<<30) == nil, est.Fits(8<<30) == nil)
	// Output: 494032768 true false
}

// Parse a `ragen train` command line the way Hydra does.
func ExampleParseArgs() {
	a, err := config.ParseArgs([]string{"--config-name", "_1_bandit", "trainer.total_training_steps=20", "--cfg", "job", "--resolve"})
	if err != nil {
		fmt.Println(err)
		return
	}
	t, err := a.Load()
	if err != nil {
		fmt.Println(err)
		return
	}
	steps, _ := t.Int("trainer.total_training_steps")
	fmt.Println(a.ConfigName, a.Cfg, a.Resolve, steps)
	// Output: _1_bandit job true 20
}
