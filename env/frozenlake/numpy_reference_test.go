package frozenlake

import (
	"testing"

	"ragen/env"
	"ragen/env/envtest"
)

// testdata/numpy_reference.json was produced with NumPy 1.24 (real PCG64
// Generator, Generator.choice/integers) by a transliteration of RAGEN's
// generate_random_map / FrozenLakeEnv.reset/step/render over gymnasium
// 1.2's FrozenLake transition table (success_rate, int rewards). It pins
// map generation, the slip draws and every render format byte for byte.
func TestMatchesNumPyReference(t *testing.T) {
	envtest.Replay(t, "testdata/numpy_reference.json", 80, func(cfg map[string]any, _ int) (env.BaseEnv, error) {
		return FromEnvConfig(cfg)
	})
}
