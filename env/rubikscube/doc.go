// Package rubikscube is the 2×2 Rubik's cube environment (upstream env_type
// "rubikscube", shared spec envs.md §8).
//
// The cube is 24 stickers, faces U L F R B D with four stickers each laid
// out [0 1; 2 3] as seen from outside. Actions are the twelve quarter turns
// U U' D D' L L' R R' F F' B B' (ids 1..12, see [Move]). Reset scrambles a
// solved cube with scramble_depth moves drawn from NumPy's PCG64 Generator
// seeded with the reset seed; Step applies a move, rewards 1.0 when every
// face is one colour and ends the episode then or at max_steps.
//
// Upstream's B permutation reverses one sticker pair and so is no legal
// cube move; the env turns B like a real cube by default, and reproduces
// upstream's (scrambles and steps then match upstream's) with the
// env_config option legacy_b_move (doc/divergences/env-extra.md).
// Cube.Apply is the real cube's move, Cube.ApplyLegacy upstream's.
package rubikscube
