package ragen

import "ragen/env"

// Reward is a turn reward as upstream computes it: 0 (a Python int) plus the
// rewards of the executed actions. IsInt stays true while every summand was
// an integer, which decides how the reward is printed (envs.md §0.3).
type Reward struct {
	Value float64
	IsInt bool
}

// Add returns r + x, where xIsInt says whether x was an integer.
func (r Reward) Add(x float64, xIsInt bool) Reward {
	return Reward{Value: r.Value + x, IsInt: r.IsInt && xIsInt}
}

// String formats the reward as Python's str() would (env.FormatReward).
func (r Reward) String() string { return env.FormatReward(r.Value, r.IsInt) }
