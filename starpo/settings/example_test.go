package settings_test

import (
	"fmt"

	"ragen/starpo/settings"
)

// CheckMiniBatch is upstream train.py's check of one role's batch sizes;
// its error names the nearest mini batches that fit.
func ExampleCheckMiniBatch() {
	fmt.Println(settings.CheckMiniBatch("actor_rollout_ref.actor", 32, 4, 2))
	fmt.Println(settings.CheckMiniBatch("actor_rollout_ref.actor", 30, 4, 2))
	// Output:
	// <nil>
	// config: actor_rollout_ref.actor.ppo_mini_batch_size: 30 is not a multiple of ppo_micro_batch_size_per_gpu x n_gpus_per_node = 4 x 2 = 8; nearest fitting: 24 or 32
}
