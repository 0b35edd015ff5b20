package bandit

import (
	"testing"

	"ragen/env"
	"ragen/env/envtest"
)

// testdata/numpy_reference.json was produced with NumPy 1.24 (real
// Generator(PCG64(SeedSequence(seed + internal_seed))), as gymnasium's
// reset(seed=...) builds it) by a transliteration of RAGEN's BanditEnv:
// episode i of a set is the env with internal_seed i reset with the listed
// seed, then one pull. It pins the pair/order draws, the reward coin, the
// rules text and the "{arm}: {reward} points" text byte for byte.
func TestMatchesNumPyReference(t *testing.T) {
	envtest.Replay(t, "testdata/numpy_reference.json", 80, func(envConfig map[string]any, episode int) (env.BaseEnv, error) {
		// episode i of a set is the env whose process-wide instance counter is i
		cfg := DefaultConfig()
		if err := env.DecodeConfig(envConfig, &cfg); err != nil {
			return nil, err
		}
		return NewWithInternalSeed(cfg, int64(episode))
	})
}
