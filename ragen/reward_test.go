package ragen

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRewardString: envs.md §0.3. A turn reward is 0 (int) + r1 + r2 + …;
// it prints as an int while every summand was an int, else as Python's
// repr(float).
func TestRewardString(t *testing.T) {
	type add struct {
		x     float64
		isInt bool
	}
	tests := []struct {
		adds []add
		want string
	}{
		{nil, "0"},                                    // no action executed
		{[]add{{1, true}}, "1"},                       // FrozenLake goal (int)
		{[]add{{0, true}, {0, true}}, "0"},            // two int zeros
		{[]add{{1, false}}, "1.0"},                    // float 1.0
		{[]add{{-0.1, false}}, "-0.1"},                // Sokoban step
		{[]add{{-0.1, false}, {-0.1, false}}, "-0.2"}, // two Sokoban steps
		{[]add{{-0.1, false}, {10, false}}, "9.9"},    // step + box on target
		{[]add{{0.9, false}}, "0.9"},
		{[]add{{-0.1, false}, {11, false}}, "10.9"},
		{[]add{{-0.1, false}, {-0.2, false}}, "-0.30000000000000004"},
		{[]add{{0.00001, false}}, "1e-05"},
		{[]add{{1e16, false}}, "1e+16"},
		{[]add{{1, true}, {0.5, false}}, "1.5"}, // one float summand makes it a float
	}
	for _, tc := range tests {
		r := Reward{IsInt: true}
		for _, a := range tc.adds {
			r = r.Add(a.x, a.isInt)
		}
		assert.Equal(t, tc.want, r.String(), "%v", tc.adds)
		assert.Equal(t, "Reward:\n"+tc.want+"\n", rewardMessage(r))
	}
}
