package game2048

import "ragen/env"

// Info is the state part of upstream's info for the current board, as
// reset and every step report it: grid, action_mask (which of Up, Right,
// Down, Left would move), cumulative score and max_tile.
func (e *Env) Info() env.Info {
	if e.rng == nil { // before the first reset
		return env.Info{}
	}
	return env.Info{"grid": e.Grid(), "action_mask": e.actionMask(), "score": e.score, "max_tile": e.MaxTile()}
}
