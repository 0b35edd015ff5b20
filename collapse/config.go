package collapse

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// NumSamples is the number of (x, z) pairs sampled per metric family;
// AllSamples (0) means every available pair (upstream's "all" / None).
type NumSamples int

// AllSamples uses every pair.
const AllSamples NumSamples = 0

// ParseNumSamples reads a num_samples value: a positive integer or "all"
// (case-insensitive). Anything else is an error.
func ParseNumSamples(s string) (NumSamples, error) {
	t := strings.TrimSpace(s)
	if strings.EqualFold(t, "all") {
		return AllSamples, nil
	}
	n, err := strconv.Atoi(t)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("collapse: num_samples must be a positive integer or \"all\", got %q", s)
	}
	return NumSamples(n), nil
}

// String renders the value as it is written in YAML.
func (n NumSamples) String() string {
	if n == AllSamples {
		return "all"
	}
	return strconv.Itoa(int(n))
}

// NumSamplesFrom reads a decoded num_samples value as upstream's trainer
// does: a string must be "all" (any case); a number is converted with
// Python's int() (a float is truncated toward zero, true counts as 1) and
// must then be > 0; nil and every other value are errors. It is the one
// home of this rule: UnmarshalYAML and package config use it.
func NumSamplesFrom(x any) (NumSamples, error) {
	bad := func() (NumSamples, error) {
		if s, ok := x.(string); ok {
			return 0, fmt.Errorf("must be a positive integer or \"all\", got %q", s)
		}
		return 0, fmt.Errorf("must be a positive integer or \"all\", got %v", x)
	}
	var v int64
	switch t := x.(type) {
	case string:
		if !strings.EqualFold(t, "all") {
			return bad()
		}
		return AllSamples, nil
	case int:
		v = int64(t)
	case int64:
		v = t
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) || math.Abs(t) >= 1<<62 {
			return bad()
		}
		v = int64(t) // int(): truncation toward zero
	case bool:
		if t {
			v = 1
		}
	default:
		return bad()
	}
	if v <= 0 || v > math.MaxInt32 {
		return bad()
	}
	return NumSamples(v), nil
}

// UnmarshalYAML reads num_samples by NumSamplesFrom.
func (n *NumSamples) UnmarshalYAML(node *yaml.Node) error {
	var x any
	if node.Kind != yaml.ScalarNode || node.Tag == "!!null" {
		return fmt.Errorf("collapse: num_samples (line %d) must be a positive integer or \"all\"", node.Line)
	}
	if node.ShortTag() == "!!str" {
		x = node.Value
	} else if err := node.Decode(&x); err != nil {
		return fmt.Errorf("collapse: num_samples (line %d) must be a positive integer or \"all\", got %q", node.Line, node.Value)
	}
	v, err := NumSamplesFrom(x)
	if err != nil {
		return fmt.Errorf("collapse: num_samples (line %d) %w", node.Line, err)
	}
	*n = v
	return nil
}

// MarshalYAML writes "all" or the integer.
func (n NumSamples) MarshalYAML() (any, error) {
	if n == AllSamples {
		return "all", nil
	}
	return int(n), nil
}

// Context window modes (agent_proxy.context_window_mode); metrics are only
// produced in ModeFull.
const (
	ModeFull             = "full"
	ModeLimitedMultiTurn = "limited_multi_turn"
	ModeSingleTurn       = "single_turn"
)

// Config holds the collapse_detection.* settings plus the values the
// trainer passes from elsewhere in the config tree.
type Config struct {
	// ComputeFreq: compute on step 1 and on every step with step % freq == 0.
	ComputeFreq int `yaml:"compute_freq"`
	// MicroBatchSize is the number of (prompt, reasoning) pairs per Scorer
	// call (no numeric effect).
	MicroBatchSize int `yaml:"micro_batch_size"`
	// FirstTurnEnabled turns on the first-turn (x, z) family.
	FirstTurnEnabled bool `yaml:"first_turn_enabled"`
	// MultiTurnEnabled turns on the trajectory-uniform multi-turn family.
	MultiTurnEnabled bool `yaml:"multi_turn_enabled"`
	// NumSamples is the number of pairs sampled per family (AllSamples = all).
	NumSamples NumSamples `yaml:"num_samples"`
	// StdEps stabilises the z-score denominators.
	StdEps float64 `yaml:"std_eps"`
	// EMADecay is the decay of the marginal-std EMA across steps.
	EMADecay float64 `yaml:"ema_decay"`

	// ThinkDisabled is !agent_proxy.enable_think: true forces both families
	// off (the zero value keeps them as configured).
	ThinkDisabled bool `yaml:"-"`
	// ContextWindowMode is agent_proxy.context_window_mode; only "full"
	// produces metrics.
	ContextWindowMode string `yaml:"-"`
	// LogProbWorldSize (nnodes·n_gpus_per_node) pads every Scorer call to a
	// multiple of it with copies of the last pair (results dropped).
	LogProbWorldSize int `yaml:"-"`
}

// DefaultConfig returns upstream's config/base.yaml settings (with the code
// defaults for std_eps and ema_decay, which base.yaml does not set).
func DefaultConfig() Config {
	return Config{
		ComputeFreq:       5,
		MicroBatchSize:    128,
		FirstTurnEnabled:  true,
		MultiTurnEnabled:  true,
		NumSamples:        64,
		StdEps:            1e-3,
		EMADecay:          0.9,
		ContextWindowMode: ModeFull,
		LogProbWorldSize:  1,
	}
}

// CodeDefaultConfig returns the CollapseDetector constructor defaults used
// when the collapse_detection section is missing: freq 10, micro-batch 16,
// both families off, all samples.
func CodeDefaultConfig() Config {
	c := DefaultConfig()
	c.ComputeFreq = 10
	c.MicroBatchSize = 16
	c.FirstTurnEnabled = false
	c.MultiTurnEnabled = false
	c.NumSamples = AllSamples
	return c
}

// normalized applies the constructor defaults to zero fields: compute_freq
// 10, micro_batch_size 16, world size 1, context window mode full.
func (c Config) normalized() Config {
	if c.ComputeFreq == 0 {
		c.ComputeFreq = 10
	}
	if c.MicroBatchSize == 0 {
		c.MicroBatchSize = 16
	}
	if c.LogProbWorldSize == 0 {
		c.LogProbWorldSize = 1
	}
	if c.ContextWindowMode == "" {
		c.ContextWindowMode = ModeFull
	}
	return c
}

// Validate reports every problem at once. Zero compute_freq,
// micro_batch_size and world size, and an empty context window mode, stand
// for their defaults (10, 16, 1, full).
func (c Config) Validate() error {
	c = c.normalized()
	var errs []error
	if c.ComputeFreq < 1 {
		errs = append(errs, fmt.Errorf("collapse: compute_freq must be ≥ 1, got %d", c.ComputeFreq))
	}
	if c.MicroBatchSize < 1 {
		errs = append(errs, fmt.Errorf("collapse: micro_batch_size must be ≥ 1, got %d", c.MicroBatchSize))
	}
	if c.NumSamples < 0 {
		errs = append(errs, fmt.Errorf("collapse: num_samples must be a positive integer or \"all\", got %d", int(c.NumSamples)))
	}
	if math.IsNaN(c.StdEps) || math.IsInf(c.StdEps, 0) || c.StdEps < 0 {
		errs = append(errs, fmt.Errorf("collapse: std_eps must be a finite number ≥ 0, got %v", c.StdEps))
	}
	if !(c.EMADecay >= 0 && c.EMADecay <= 1) {
		errs = append(errs, fmt.Errorf("collapse: ema_decay must be in [0, 1], got %v", c.EMADecay))
	}
	switch c.ContextWindowMode {
	case ModeFull, ModeLimitedMultiTurn, ModeSingleTurn, "":
	default:
		errs = append(errs, fmt.Errorf("collapse: unknown context_window_mode %q (valid: %s, %s, %s)",
			c.ContextWindowMode, ModeFull, ModeLimitedMultiTurn, ModeSingleTurn))
	}
	if c.LogProbWorldSize < 0 {
		errs = append(errs, fmt.Errorf("collapse: log-prob world size must be ≥ 1, got %d", c.LogProbWorldSize))
	}
	return errors.Join(errs...)
}

func (c Config) firstTurn() bool { return c.FirstTurnEnabled && !c.ThinkDisabled }
func (c Config) multiTurn() bool { return c.MultiTurnEnabled && !c.ThinkDisabled }

func (c Config) worldSize() int { return max(c.LogProbWorldSize, 1) }

// UnmarshalYAML decodes the collapse_detection mapping onto c (absent keys
// keep their values; decode onto DefaultConfig). A null num_samples is an
// error, as upstream's config check has it.
func (c *Config) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("collapse: collapse_detection (line %d) must be a mapping", n.Line)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "num_samples" && n.Content[i+1].Tag == "!!null" {
			return fmt.Errorf("collapse: num_samples (line %d) must be a positive integer or \"all\", got null", n.Content[i+1].Line)
		}
	}
	type plain Config // no methods: no recursion
	p := plain(*c)
	if err := n.Decode(&p); err != nil {
		return fmt.Errorf("collapse: %w", err)
	}
	*c = Config(p)
	return nil
}
