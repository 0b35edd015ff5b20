package alfworld

import (
	"context"
	"errors"
	"fmt"

	"ragen/env"
	"ragen/env/httpenv"
	"ragen/env/webshop"
)

// Config is the env_config of an alfworld tag: upstream's fields (passed
// to the bridge) and where the bridge is (ours).
type Config struct {
	ConfigFile  string  `yaml:"config_file"` // ALFWorld's YAML config, read by the bridge
	Score       float64 `yaml:"score"`       // reward of a won game
	RenderMode  string  `yaml:"render_mode"`
	EvalDataset string  `yaml:"eval_dataset"` // eval_in_distribution or eval_out_of_distribution

	BridgeURL     string  `yaml:"bridge_url"`
	BridgeTimeout float64 `yaml:"bridge_timeout"`
}

// DefaultConfig returns upstream's defaults and the default bridge URL.
func DefaultConfig() Config {
	return Config{ConfigFile: "./ragen/env/alfworld/alfworld_config.yaml", Score: 10, RenderMode: "text",
		EvalDataset: "eval_in_distribution", BridgeURL: webshop.DefaultBridgeURL, BridgeTimeout: 120}
}

// Validate reports every problem of c at once.
func (c Config) Validate() error {
	var errs []error
	if c.EvalDataset != "eval_in_distribution" && c.EvalDataset != "eval_out_of_distribution" {
		errs = append(errs, fmt.Errorf("alfworld: eval_dataset %q: want eval_in_distribution or eval_out_of_distribution", c.EvalDataset))
	}
	if c.RenderMode != "text" {
		errs = append(errs, fmt.Errorf("alfworld: render_mode %q: only \"text\"", c.RenderMode))
	}
	if c.ConfigFile == "" {
		errs = append(errs, errors.New("alfworld: config_file is empty"))
	}
	if c.BridgeTimeout <= 0 {
		errs = append(errs, fmt.Errorf("alfworld: bridge_timeout %v must be positive", c.BridgeTimeout))
	}
	return errors.Join(errs...)
}

func init() {
	env.RegisterPromptDefaults("alfworld", env.PromptDefaults{})
	env.Register("alfworld", func(m map[string]any) (env.BaseEnv, error) { return FromEnvConfig(m) })
}

// FromEnvConfig builds an env from env_config overrides (the registry's
// factory: unknown keys are errors).
func FromEnvConfig(envConfig map[string]any) (*httpenv.Client, error) {
	return env.FromConfig("alfworld", DefaultConfig(), envConfig, New)
}

// New connects to the bridge and creates a remote alfworld env there.
func New(cfg Config) (*httpenv.Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return webshop.Connect(context.Background(), "alfworld", cfg.BridgeURL, cfg.BridgeTimeout, map[string]any{
		"config_file": cfg.ConfigFile, "score": cfg.Score, "render_mode": cfg.RenderMode, "eval_dataset": cfg.EvalDataset,
	})
}
