package bandit

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"ragen/env"
	"ragen/internal/pyrand"
)

func init() {
	env.Register("bandit", func(m map[string]any) (env.BaseEnv, error) { return FromEnvConfig(m) })
	// render_mode only; action_lookup is nil until reset, so the prompt
	// gets neither a vocabulary nor an action list.
	env.RegisterPromptDefaults("bandit", env.PromptDefaults{})
}

// Config is upstream's BanditEnvConfig plus the group_consistent option.
type Config struct {
	Split            string  `yaml:"split"` // "train" or "test": which name pairs
	ActionSpaceStart int     `yaml:"action_space_start"`
	LoArmScore       float64 `yaml:"lo_arm_score"`
	HiArmLoscore     float64 `yaml:"hi_arm_loscore"`
	HiArmHiscore     float64 `yaml:"hi_arm_hiscore"`
	HiArmHiscoreProb float64 `yaml:"hi_arm_hiscore_prob"`
	RenderMode       string  `yaml:"render_mode"`
	// ActionLookup is filled at reset; a value given in env_config is
	// accepted (upstream's dataclass has the field) and then overwritten.
	ActionLookup map[int]string `yaml:"action_lookup"`
	// GroupConsistent (not upstream): draw the name pair and order from a
	// Generator seeded with the reset seed alone, so all envs of a group
	// share one prompt; the reward coin still uses seed+internal_seed.
	GroupConsistent bool `yaml:"group_consistent"`
	// ArmPairs (not upstream): when non-empty, the [low arm, high arm] name
	// pairs to draw from instead of the split's. The draws are unchanged
	// (pair index, then order), so a single pair gives a hidden-arm bandit
	// whose better arm is fixed by name and only its position varies.
	ArmPairs [][]string `yaml:"arm_pairs"`
	// IntScores names the score fields given as Python ints in env_config
	// ("lo_arm_score", ...): upstream then returns and prints that reward
	// as an int ("Trader: 1 points"). New fills it from env_config.
	IntScores map[string]bool `yaml:"-"`
}

// DefaultConfig returns upstream's defaults.
func DefaultConfig() Config {
	return Config{Split: "train", ActionSpaceStart: 1, LoArmScore: 0.1, HiArmLoscore: 0,
		HiArmHiscore: 1, HiArmHiscoreProb: 0.25, RenderMode: "text"}
}

// Validate reports every config value the env cannot work with.
func (c Config) Validate() error {
	var errs []error
	for i, p := range c.ArmPairs {
		if len(p) != 2 || p[0] == "" || p[1] == "" || p[0] == p[1] {
			errs = append(errs, fmt.Errorf("bandit: arm_pairs[%d] = %q: want two different non-empty names [low arm, high arm]", i, p))
		}
	}
	if _, ok := pairs[c.Split]; !ok {
		errs = append(errs, fmt.Errorf("bandit: split %q: want \"train\" or \"test\"", c.Split))
	}
	if c.RenderMode != "text" {
		errs = append(errs, fmt.Errorf("bandit: render_mode %q: only \"text\" is supported", c.RenderMode))
	}
	// hi_arm_hiscore_prob is not range-checked, as upstream: the coin is
	// u < prob, so a value >= 1 always pays hi_arm_hiscore and one <= 0
	// never does.
	return errors.Join(errs...)
}

// Pair is one (low arm, high arm) name pair.
type Pair struct{ Lo, Hi string }

var pairs = map[string][]Pair{
	"train": {
		{"Teacher", "Trader"}, {"Nurse", "StartupFounder"}, {"Librarian", "Investor"},
		{"Accountant", "StockBroker"}, {"Engineer", "RealEstateAgent"}, {"Pharmacist", "Musician"},
		{"Clerk", "Freelancer"}, {"Technician", "Youtuber"}, {"Planner", "Artist"},
		{"Postman", "Pilot"}, {"Banker", "VentureCapitalist"}, {"Gardener", "Cryptominer"},
	},
	"test": {
		{"Receptionist", "Explorer"}, {"Archivist", "Filmmaker"}, {"Bookkeeper", "Consultant"},
		{"SocialWorker", "Photographer"}, {"Mechanic", "GameDesigner"}, {"Secretary", "Entrepreneur"},
		{"Cashier", "DataScientist"}, {"CivilServant", "StartupAccelerator"},
	},
}

// Pairs returns the name pairs of a split (nil for an unknown split).
func Pairs(split string) []Pair { return append([]Pair(nil), pairs[split]...) }

// instanceCounter is upstream's process-global instance counter: each env
// takes the next value as its internal seed, in construction order.
var instanceCounter atomic.Int64

// Env is the bandit env.
type Env struct {
	cfg          Config
	internalSeed int64
	lookup       map[int]string // id -> name
	hiID         int            // id of the high arm
	rng          env.Rand       // reward coin
	render       string
}

// FromEnvConfig builds an env from env_config overrides (the registry's
// factory: unknown keys are errors), taking the next internal seed from the
// process-wide counter as upstream does. Scores given as ints print as ints.
func FromEnvConfig(envConfig map[string]any) (*Env, error) {
	cfg := DefaultConfig()
	if err := env.DecodeConfig(envConfig, &cfg); err != nil {
		return nil, fmt.Errorf("bandit: %w", err)
	}
	cfg.IntScores = env.IntKeys(envConfig, "lo_arm_score", "hi_arm_loscore", "hi_arm_hiscore")
	return New(cfg)
}

// New builds an env from a config, taking the next internal seed from the
// process-wide counter as upstream does.
func New(cfg Config) (*Env, error) {
	return NewWithInternalSeed(cfg, instanceCounter.Add(1)-1)
}

// NewWithInternalSeed builds an env with an explicit internal seed (for
// replay and tests) without touching the process-wide counter.
func NewWithInternalSeed(cfg Config, internalSeed int64) (*Env, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Env{cfg: cfg, internalSeed: internalSeed}, nil
}

// InternalSeed reports the instance's internal seed.
func (e *Env) InternalSeed() int64 { return e.internalSeed }

// Reset draws the arm names (envs.md §1): Generator(seed+internal_seed);
// u1 picks pair floor(u1*len(pairs)); u2 < 0.5 puts the low arm at id 1.
func (e *Env) Reset(_ context.Context, seed int64, _ env.Mode) (string, error) {
	coin, err := pyrand.NewGeneratorSum(seed, e.internalSeed)
	if err != nil {
		return "", fmt.Errorf("bandit: reset: %w", err)
	}
	naming := coin
	if e.cfg.GroupConsistent {
		if naming, err = pyrand.NewGenerator(seed); err != nil {
			return "", fmt.Errorf("bandit: reset: %w", err)
		}
	}
	ps := pairs[e.cfg.Split]
	if len(e.cfg.ArmPairs) > 0 {
		ps = make([]Pair, len(e.cfg.ArmPairs))
		for i, q := range e.cfg.ArmPairs {
			ps[i] = Pair{Lo: q[0], Hi: q[1]}
		}
	}
	p := ps[int(naming.Random()*float64(len(ps)))]
	loFirst := naming.Random() < 0.5
	e.SetArms(p, loFirst, coin)
	return e.render, nil
}

// SetArms puts the env into an explicit state: pair p with the low arm at
// id 1 if loFirst (else at id 2), and r as the reward coin (Float64 is
// drawn once per high-arm pull). Reset calls it; tests may too.
func (e *Env) SetArms(p Pair, loFirst bool, r env.Rand) {
	a, b := p.Lo, p.Hi
	e.hiID = 2
	if !loFirst {
		a, b = p.Hi, p.Lo
		e.hiID = 1
	}
	s := e.cfg.ActionSpaceStart
	e.lookup = map[int]string{s: a, s + 1: b}
	e.hiID += s - 1
	e.rng = r
	e.cfg.ActionLookup = e.lookup
	e.render = fmt.Sprintf("You are playing a bandit game. Goal: Maximize your total reward by choosing which arm to pull. \n"+
		"Game Rules: \n"+
		"1. There are 2 arms, named %[1]s and %[2]s\n"+
		"2. Each arm has its own reward distribution, related to their names. \n"+
		"3. Analyze the symbolic meaning of each arm's name to guess how their reward distribution might behave.\n"+
		"4. Based on the symbolic meaning of their names, which arm do you think is more likely to give higher rewards on average? Choose between %[1]s and %[2]s, and output like <answer> %[1]s </answer> or <answer> %[2]s </answer>.\n", a, b)
}

// Step pulls arm a.ID. The low arm pays lo_arm_score; the high arm draws
// u and pays hi_arm_hiscore if u < hi_arm_hiscore_prob, else
// hi_arm_loscore. Always done. An id outside the lookup (which the manager
// never sends) is an invalid action: reward 0, not done, state unchanged.
func (e *Env) Step(_ context.Context, a env.Action) (env.StepResult, error) {
	if e.lookup == nil {
		return env.StepResult{}, fmt.Errorf("bandit: Step before Reset")
	}
	name, ok := e.lookup[a.ID]
	if !ok {
		return env.StepResult{Observation: e.render, Info: env.Info{
			"action_is_effective": false, "action_is_valid": false, "success": false}}, nil
	}
	var reward float64
	var key string
	if a.ID == e.hiID {
		if e.rng.Float64() < e.cfg.HiArmHiscoreProb {
			reward, key = e.cfg.HiArmHiscore, "hi_arm_hiscore"
		} else {
			reward, key = e.cfg.HiArmLoscore, "hi_arm_loscore"
		}
	} else {
		reward, key = e.cfg.LoArmScore, "lo_arm_score"
	}
	isInt := e.cfg.IntScores[key]
	e.render = fmt.Sprintf("%s: %s points", name, env.FormatReward(reward, isInt))
	return env.StepResult{Observation: e.render, Reward: reward, RewardIsInt: isInt, Done: true, Info: env.Info{
		"action_is_effective": true, "action_is_valid": true, "success": a.ID == e.hiID}}, nil
}

// Render returns the rules text after reset, "{arm}: {reward} points"
// after a pull.
func (e *Env) Render() string { return e.render }

// ActionLookup returns the id -> arm name map of the current episode (nil
// before the first reset).
func (e *Env) ActionLookup() map[int]string { return e.lookup }

// Close does nothing.
func (e *Env) Close() error { return nil }

// Config returns the env's config.
func (e *Env) Config() Config { return e.cfg }
