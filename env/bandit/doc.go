// Package bandit is RAGEN's two-armed bandit env (`bandit`, envs.md §1): a
// pair of arm names (a "low" steady arm such as Teacher and a "high" risky
// arm such as Trader) is drawn per reset; pulling the low arm pays
// lo_arm_score, the high arm pays hi_arm_hiscore with probability
// hi_arm_hiscore_prob and hi_arm_loscore otherwise. One pull ends the
// episode.
//
// Seeding follows upstream exactly by default: every instance takes an
// internal seed from a process-wide construction counter, and Reset(seed)
// seeds a NumPy Generator (PCG64) with seed+internal_seed, so envs of one
// group see different names. The env_config key group_consistent=true
// derives names from the group seed instead (see doc/divergences/env-core.md).
package bandit
