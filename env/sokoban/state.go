package sokoban

// Counters upstream's env exposes as attributes (num_env_steps,
// boxes_on_target, num_boxes), readable between steps.

// StepsTaken is the number of Step calls since the last reset
// (upstream's num_env_steps).
func (e *Env) StepsTaken() int { return e.numEnvSteps }

// BoxesOnTarget is the number of boxes now on a target.
func (e *Env) BoxesOnTarget() int { return e.boxesOnTgt }

// NumBoxes is the number of boxes the reward and success count against.
func (e *Env) NumBoxes() int { return e.numBoxes }
