// Package game2048 is the 2048 environment (upstream env_type "game_2048",
// shared spec envs.md §7).
//
// Actions are 0 Up, 1 Right, 2 Down, 3 Left. A move compacts every line
// toward its side and merges equal neighbours once; a move that changes the
// board spawns a tile (2 with probability two_prob, else 4) on a random
// empty cell, drawn from NumPy's PCG64 Generator seeded at reset. With
// use_log_reward (the default) a move returns 0.1·log2(merged+1), and 0.0
// when nothing merged or nothing moved (so upstream's −0.1 penalty for an
// invalid move never reaches the reward; it stays in info["raw_reward"]).
// Rewards and raw_reward are always floats (printed 4.0, not 4). As
// upstream, info carries max_tile, and success when it is ≥ 2048, only on
// the terminal step (no empty cell, no move possible); otherwise success is
// false. The env exposes its board through env.Gridder for the max_tile
// metric.
package game2048
