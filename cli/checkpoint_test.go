package cli

import (
	"testing"

	"github.com/stretchr/testify/require"

	"ragen/config"
)

// TestGradientCheckpointingKeys: actor_rollout_ref.model and critic.model
// enable_gradient_checkpointing reach the actor and the critic trunk
// separately (upstream's default: both on), and are no longer named in the
// start-up notice of keys without effect.
func TestGradientCheckpointingKeys(t *testing.T) {
	for _, tc := range []struct {
		args          []string
		actor, critic bool
	}{
		{nil, false, false}, // demo.yaml turns both off (a tiny model)
		{[]string{"actor_rollout_ref.model.enable_gradient_checkpointing=true"}, true, false},
		{[]string{"critic.model.enable_gradient_checkpointing=true"}, false, true},
	} {
		args := append([]string{"--config-name", "demo", "algorithm.adv_estimator=gae"}, tc.args...)
		tr, _, err := loadTree(args, "base")
		require.NoError(t, err)
		actor, _, err := loadModel(tr, "cpu")
		require.NoError(t, err)
		c, err := loadCritic(tr, actor, "cpu")
		require.NoError(t, err)
		require.Equal(t, tc.actor, actor.GradientCheckpointing(), "actor, %v", tc.args)
		require.Equal(t, tc.critic, c.Trunk().GradientCheckpointing(), "critic, %v", tc.args)
		c.Close()
		actor.Close()
		for _, k := range config.InertKeys(tr) {
			require.NotContains(t, k.Key, "enable_gradient_checkpointing")
		}
	}
	tr, _, err := loadTree([]string{"--config-name", "demo", "critic.model.enable_gradient_checkpointing=maybe"}, "base")
	if err == nil {
		_, err = checkpointingKey(tr, "critic.model.enable_gradient_checkpointing")
	}
	require.ErrorContains(t, err, "enable_gradient_checkpointing")
}
