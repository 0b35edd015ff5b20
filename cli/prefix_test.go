package cli

import (
	"testing"

	"github.com/stretchr/testify/require"

	"ragen/config"
)

// actor_rollout_ref.rollout.enable_prefix_caching reaches the rollout
// config: on by default, off when overridden, and no longer listed as inert.
func TestEnablePrefixCachingKey(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{nil, true},
		{[]string{"actor_rollout_ref.rollout.enable_prefix_caching=False"}, false},
		{[]string{"actor_rollout_ref.rollout.enable_prefix_caching=True"}, true},
	} {
		tr, _, err := loadTree(c.args, "base")
		require.NoError(t, err)
		rc, err := rolloutConfig(tr)
		require.NoError(t, err)
		require.Equal(t, c.want, rc.Rollout.EnablePrefixCaching, "%v", c.args)
	}
	_, _, err := loadTree([]string{"actor_rollout_ref.rollout.enable_prefix_caching=maybe"}, "base")
	if err == nil {
		tr, _, _ := loadTree([]string{"actor_rollout_ref.rollout.enable_prefix_caching=maybe"}, "base")
		_, err = rolloutConfig(tr)
	}
	require.Error(t, err)
	_, inert := config.Inert("actor_rollout_ref.rollout.enable_prefix_caching")
	require.False(t, inert)
}
