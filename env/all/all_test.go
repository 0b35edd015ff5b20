package all

import (
	"slices"
	"testing"

	"ragen/env"
)

func TestCoreEnvsRegistered(t *testing.T) {
	types := env.Types()
	for _, want := range []string{"bandit", "frozen_lake", "sokoban"} {
		if !slices.Contains(types, want) {
			t.Errorf("env type %q not registered (have %v)", want, types)
		}
	}
}
