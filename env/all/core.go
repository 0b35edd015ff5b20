package all

// Bandit, Sokoban and FrozenLake (envs.md §1-3).
import (
	_ "ragen/env/bandit"
	_ "ragen/env/frozenlake"
	_ "ragen/env/sokoban"
)
