// Package frozenlake is RAGEN's FrozenLake env (`frozen_lake`, envs.md §3):
// gymnasium's FrozenLake on a randomly generated map whose start and goal
// are random cells, with a slip model controlled by success_rate.
//
// Map generation and slips are bit-exact with upstream: both use a NumPy
// Generator (PCG64) seeded with the reset seed (pyrand.Generator). Rewards
// are Python ints (1 on reaching the goal, else 0).
package frozenlake
