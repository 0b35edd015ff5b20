// Package pyrand holds bit-exact Go ports of the random number generators
// upstream RAGEN draws from, so that levels and puzzles generated from a seed
// match upstream's exactly (shared spec envs.md, RNG appendix):
//
//   - [Random]: CPython's random.Random (MT19937 seeded by init_by_array)
//     with random, getrandbits, randbelow, randint, choice, shuffle, sample
//     and uniform.
//   - [Legacy]: NumPy's legacy global RandomState (np.random.seed, MT19937
//     seeded by init_genrand) with rand, randint (masked rejection), choice,
//     permutation and shuffle as NumPy's legacy code does them.
//   - [Generator]: NumPy's Generator over PCG64 seeded through SeedSequence
//     (np.random.default_rng, gymnasium's np_random) with random, integers
//     (Lemire on half-buffered 32-bit draws), choice and shuffle.
//
// Every generator is a value with methods; there is no global state. Each
// type satisfies the small Float64/Intn interface that envs draw from during
// play (env.Rand).
package pyrand
