package starpo

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ragen/config"
)

// The CLI decodes the whole composed key tree onto DefaultConfig(). For the
// shipped base config that must change nothing (every yaml tag names the
// key upstream's tree uses, every default equals base.yaml + veRL's
// defaults), except critic.loss_agg_mode, which the tree spells out as the
// actor's mode ("" means the same here).
func TestBaseTreeDecodesToDefaultConfig(t *testing.T) {
	tr, err := config.Load("base", nil)
	require.NoError(t, err)
	require.NoError(t, config.Derive(tr))
	c := DefaultConfig()
	require.NoError(t, tr.DecodeLoose("", &c))
	want := DefaultConfig()
	want.Critic.LossAggMode = want.ActorRolloutRef.Actor.LossAggMode
	assert.Equal(t, want, c)

	// Overrides reach the fields through the tags.
	tr, err = config.Load("base", []string{"algorithm.adv_estimator=grpo", "agent_proxy.context_window_mode=single_turn",
		"actor_rollout_ref.rollout.rollout_filter_empty_stop_steps=0", "trainer.val_only=true", "ppo_mini_batch_size=16",
		"algorithm.kl_ctrl.horizon=500", "critic.enable=false", "+ragen_global_token_mean=true", "+ragen_upstream_frozen_lr=false"})
	require.NoError(t, err)
	c = DefaultConfig()
	require.NoError(t, tr.DecodeLoose("", &c))
	assert.Equal(t, "grpo", c.Algorithm.AdvEstimator)
	assert.True(t, c.AgentProxy.TurnLevel())
	assert.Equal(t, 0, c.ActorRolloutRef.Rollout.EmptyStopSteps)
	assert.True(t, c.Trainer.ValOnly)
	assert.Equal(t, 16, c.ActorRolloutRef.Actor.PPOMiniBatchSize)
	assert.Equal(t, 16, c.Critic.PPOMiniBatchSize)
	assert.Equal(t, 500.0, c.Algorithm.KLCtrl.Horizon)
	assert.False(t, c.CriticEnabled())
	assert.True(t, c.GlobalTokenMean)
	assert.False(t, c.UpstreamFrozenLR)
}

// es_manager and agent_proxy decode onto package ragen's types; a
// step_timeout in seconds (as the CLI reads it) must not fail the decode.
func TestTreeDecodesRolloutBlocks(t *testing.T) {
	tr, err := config.Load("base", []string{"+es_manager.step_timeout=300", "agent_proxy.batch_adjust_mode=delete", "agent_proxy.max_turn=3"})
	require.NoError(t, err)
	c := DefaultConfig()
	require.NoError(t, tr.DecodeLoose("", &c))
	assert.Equal(t, 300*time.Second, c.ESManager.StepTimeout)
	assert.Equal(t, AdjustDelete, c.AgentProxy.BatchAdjustMode)
	assert.Equal(t, 3, c.AgentProxy.MaxTurn)
	assert.Equal(t, 8, c.ESManager.Train.EnvGroups)
	require.NoError(t, c.Validate())
}
