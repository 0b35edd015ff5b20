package env

import "context"

// Mode tells an env whether it is reset for training or validation. Only a
// few envs (WebShop, ALFWorld upstream) change behaviour on it.
type Mode string

const (
	ModeTrain Mode = "train"
	ModeVal   Mode = "val"
)

// Action is one primitive action sent to an env.
//
// For discrete envs (those implementing ActionLookup) the manager maps the
// parsed string to ID by exact, case-insensitive name comparison and sets
// both fields; language envs read Text only.
type Action struct {
	ID   int    // discrete action id from ActionLookup (0 when the env has none)
	Text string // the action string as parsed from the model's answer
}

// Info carries an env's per-step information. Keys with meaning to the rest
// of the system: "success", "action_is_valid", "action_is_effective",
// "raw_reward", "score". Values are bool, int, float64 or string; every
// numeric (and bool) value becomes a per-env metric.
type Info map[string]any

// StepResult is what Step returns.
type StepResult struct {
	Observation string  // upstream's returned obs; the manager uses Render() instead
	Reward      float64 // reward of this primitive action
	// RewardIsInt reports that upstream returns this reward as a Python int,
	// which changes how turn rewards are printed in prompts (envs.md §0.3).
	RewardIsInt bool
	Done        bool
	Info        Info
}

// BaseEnv is the interface every environment implements.
//
// An env is used by one goroutine at a time; separate envs may be used
// concurrently.
type BaseEnv interface {
	// Reset re-initialises the env deterministically from seed and returns
	// the initial observation.
	Reset(ctx context.Context, seed int64, mode Mode) (string, error)
	// Step executes one action. Invalid actions are not Go errors: they are
	// reported through Info (action_is_valid=false) as upstream does. An
	// error means the env itself failed (a crashed sandbox, a bad reply).
	Step(ctx context.Context, a Action) (StepResult, error)
	// Render returns the current observation text.
	Render() string
	// Close releases resources held by the env.
	Close() error
}

// ActionLookup is implemented by discrete envs: the map from action id to
// its name (e.g. Sokoban's {1:"Up",2:"Down",3:"Left",4:"Right"}). The map may
// change at reset (Bandit fills it per seed).
type ActionLookup interface {
	ActionLookup() map[int]string
}

// Gridder is implemented by envs that expose a numeric grid (2048's
// max_tile metric reads it).
type Gridder interface {
	Grid() [][]int
}
