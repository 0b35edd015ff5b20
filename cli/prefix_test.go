package cli

import (
	"testing"

	"github.com/stretchr/testify/require"

	"ragen/config"
	"ragen/env"
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

// actor_rollout_ref.rollout.allowed_token_ids (vLLM's sampling parameter,
// which veRL passes on) reaches the rollout config: absent or null means
// every id; a list is kept; a negative id or a non-list names the key.
func TestAllowedTokenIDsKey(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []int
	}{
		{nil, nil},
		{[]string{"+actor_rollout_ref.rollout.allowed_token_ids=null"}, nil},
		{[]string{"+actor_rollout_ref.rollout.allowed_token_ids=[10,32,126]"}, []int{10, 32, 126}},
	} {
		tr, _, err := loadTree(c.args, "base")
		require.NoError(t, err)
		rc, err := rolloutConfig(tr)
		require.NoError(t, err)
		require.Equal(t, c.want, rc.Rollout.AllowedTokenIDs, "%v", c.args)
		require.Equal(t, c.want, rc.Sampling(env.ModeTrain).AllowedTokenIDs, "%v", c.args)
		require.Equal(t, c.want, rc.Sampling(env.ModeVal).AllowedTokenIDs, "%v", c.args)
	}
	for _, bad := range []string{"+actor_rollout_ref.rollout.allowed_token_ids=[1,-2]", "+actor_rollout_ref.rollout.allowed_token_ids=abc"} {
		tr, _, err := loadTree([]string{bad}, "base")
		if err == nil {
			_, err = rolloutConfig(tr)
		}
		require.ErrorContains(t, err, "allowed_token_ids", bad)
	}
}
