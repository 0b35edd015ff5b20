package all

import (
	"slices"
	"strings"
	"testing"

	"ragen/config"
	"ragen/env"
)

func validate(t *testing.T, overrides ...string) error {
	t.Helper()
	tree, err := config.Load("base", overrides)
	if err != nil {
		t.Fatal(err)
	}
	return config.Validate(tree)
}

// With the envs registered, config validation checks env_type against
// exactly the registered types (http included) and builds the selected
// tags' envs, so a misconfigured env fails before any model loads.
func TestConfigValidationUsesTheRegistry(t *testing.T) {
	if !slices.Contains(env.Types(), "http") || !slices.Contains(env.Types(), "deepcoder") {
		t.Fatalf("registry: %v", env.Types())
	}
	err := validate(t, "+custom_envs.Remote.env_type=http", "+custom_envs.Remote.max_actions_per_traj=5",
		"es_manager.train.env_configs.tags=[Remote]", "es_manager.train.env_configs.n_groups=[8]")
	if err == nil || !strings.Contains(err.Error(), "custom_envs.Remote.env_config") || !strings.Contains(err.Error(), "url is empty") {
		t.Errorf("http tag without url: %v", err)
	}
	err = validate(t, "custom_envs.CoordSokoban.env_type=sokobn")
	if err == nil || !strings.Contains(err.Error(), `unknown env type "sokobn" (did you mean sokoban?)`) || !strings.Contains(err.Error(), "http") {
		t.Errorf("unknown type: %v", err)
	}
	err = validate(t, "es_manager.train.env_configs.tags=[DeepCoder]", "es_manager.train.env_configs.n_groups=[8]",
		"+custom_envs.DeepCoder.env_config.python_path=/missing/python3")
	if err == nil || !strings.Contains(err.Error(), "/missing/python3") || !strings.Contains(err.Error(), "custom_envs.DeepCoder.env_config") {
		t.Errorf("deepcoder without python: %v", err)
	}
	err = validate(t, "es_manager.train.env_configs.tags=[WebShop]", "es_manager.train.env_configs.n_groups=[8]",
		"+custom_envs.WebShop.env_config.bridge_url=http://127.0.0.1:9")
	if err == nil || !strings.Contains(err.Error(), "scripts/envbridge.py") {
		t.Errorf("webshop without bridge: %v", err)
	}
	if err := validate(t, "es_manager.train.env_configs.tags=[SearchQA]", "es_manager.train.env_configs.n_groups=[8]",
		"es_manager.val.env_configs.tags=[SearchQAMock]", "es_manager.val.env_configs.n_groups=[512]"); err != nil {
		t.Errorf("search tags (embedded BM25, mock): %v", err)
	}
}

// CheckEnvs (for `ragen eval`) checks the selected tags only, once each.
func TestCheckEnvs(t *testing.T) {
	tree, err := config.Load("eval", []string{"es_manager.val.env_configs.tags=[DeepCoder]", "es_manager.val.env_configs.n_groups=[32]",
		"+custom_envs.DeepCoder.env_config.python_path=/missing/python3"})
	if err != nil {
		t.Fatal(err)
	}
	err = config.CheckEnvs(tree, "val")
	if err == nil || strings.Count(err.Error(), "the env cannot be built") != 1 || !strings.Contains(err.Error(), "/missing/python3") {
		t.Errorf("%v", err)
	}
	tree, err = config.Load("eval", []string{"es_manager.val.env_configs.tags=[SearchQAMock, Nope]", "es_manager.val.env_configs.n_groups=[16, 16]"})
	if err != nil {
		t.Fatal(err)
	}
	if err := config.CheckEnvs(tree, "val"); err == nil || !strings.Contains(err.Error(), `unknown env tag "Nope"`) || strings.Contains(err.Error(), "SearchQAMock") {
		t.Errorf("%v", err)
	}
}
