package cli

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"ragen/env/webshop/bridgetest"
)

// WebShop trains one step from its upstream experiment config against the
// simulator bridge (scripts/envbridge.py over the fake simulator), on the
// tiny model with room for WebShop's ~1.8k-token byte-level prompt.
func TestTrainWebShopThroughBridge(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the Python simulator bridge")
	}
	url := bridgetest.Start(t, false)
	dir := t.TempDir()
	err := run(context.Background(), []string{"train", "--config-name", "_6_webshop", "model_path=tiny",
		"+demo.model.max_position_embeddings=8192", "trainer.total_training_steps=1",
		"es_manager.train.env_groups=1", "es_manager.train.group_size=2", "es_manager.train.env_configs.n_groups=[1]",
		"es_manager.val.env_groups=1", "es_manager.val.group_size=1", "es_manager.val.env_configs.n_groups=[1]",
		"agent_proxy.max_turn=1", "actor_rollout_ref.rollout.response_length=16", "ppo_mini_batch_size=2", "micro_batch_size_per_gpu=1",
		"trainer.val_before_train=False", "trainer.test_freq=0", "trainer.save_freq=0", "trainer.n_gpus_per_node=1",
		"trainer.logger=[console]", "+custom_envs.WebShop.env_config.bridge_url=" + url, "trainer.default_local_dir=" + dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "final", "config.json")); err != nil {
		t.Fatal(err)
	}
}
