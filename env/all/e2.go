package all

// Countdown, MetaMathQA, Sudoku, 2048 and Rubik's 2x2 (envs.md §4-8).
import (
	_ "ragen/env/countdown"
	_ "ragen/env/game2048"
	_ "ragen/env/metamathqa"
	_ "ragen/env/rubikscube"
	_ "ragen/env/sudoku"
)
