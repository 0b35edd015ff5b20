package webshop

import (
	"context"
	"errors"
	"fmt"

	"ragen/env"
	"ragen/env/httpenv"
)

// DefaultBridgeURL is where scripts/envbridge.py listens by default.
const DefaultBridgeURL = "http://127.0.0.1:8120"

// Config is the env_config of a webshop tag: upstream's fields (passed to
// the bridge, which hands them to the simulator) and where the bridge is
// (ours).
type Config struct {
	Dataset         string  `yaml:"dataset"` // "small" or "full"
	ObservationMode string  `yaml:"observation_mode"`
	FilePath        *string `yaml:"file_path"`
	Server          any     `yaml:"server"` // upstream's in-process SimServer; must stay null
	FilterGoals     any     `yaml:"filter_goals"`
	LimitGoals      int     `yaml:"limit_goals"`
	NumProducts     *int    `yaml:"num_products"`
	HumanGoals      bool    `yaml:"human_goals"`
	ShowAttrs       bool    `yaml:"show_attrs"`

	BridgeURL     string  `yaml:"bridge_url"`     // the simulator bridge (scripts/envbridge.py)
	BridgeTimeout float64 `yaml:"bridge_timeout"` // seconds per call
}

// DefaultConfig returns upstream's defaults and the default bridge URL.
func DefaultConfig() Config {
	return Config{Dataset: "small", ObservationMode: "text", LimitGoals: -1, BridgeURL: DefaultBridgeURL, BridgeTimeout: 120}
}

// Validate reports every problem of c at once.
func (c Config) Validate() error {
	var errs []error
	if c.Dataset != "small" && c.Dataset != "full" {
		errs = append(errs, fmt.Errorf("webshop: dataset %q: dataset must be either 'small' or 'full'", c.Dataset))
	}
	if c.ObservationMode != "text" {
		errs = append(errs, fmt.Errorf("webshop: observation_mode %q: only \"text\"", c.ObservationMode))
	}
	if c.Server != nil {
		errs = append(errs, errors.New("webshop: server is upstream's in-process SimServer object and cannot be set from a config; leave it null (the bridge builds it)"))
	}
	if c.BridgeTimeout <= 0 {
		errs = append(errs, fmt.Errorf("webshop: bridge_timeout %v must be positive", c.BridgeTimeout))
	}
	return errors.Join(errs...)
}

// remoteConfig is the env_config the bridge receives: upstream's keys.
func (c Config) remoteConfig() map[string]any {
	m := map[string]any{
		"dataset": c.Dataset, "observation_mode": c.ObservationMode, "limit_goals": c.LimitGoals,
		"human_goals": c.HumanGoals, "show_attrs": c.ShowAttrs, "filter_goals": c.FilterGoals,
	}
	if c.FilePath != nil {
		m["file_path"] = *c.FilePath
	}
	if c.NumProducts != nil {
		m["num_products"] = *c.NumProducts
	}
	return m
}

func init() {
	env.RegisterPromptDefaults("webshop", env.PromptDefaults{})
	env.Register("webshop", func(m map[string]any) (env.BaseEnv, error) { return FromEnvConfig(m) })
}

// FromEnvConfig builds an env from env_config overrides (the registry's
// factory: unknown keys are errors).
func FromEnvConfig(envConfig map[string]any) (*httpenv.Client, error) {
	return env.FromConfig("webshop", DefaultConfig(), envConfig, New)
}

// New connects to the bridge and creates a remote webshop env there.
func New(cfg Config) (*httpenv.Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return Connect(context.Background(), "webshop", cfg.BridgeURL, cfg.BridgeTimeout, cfg.remoteConfig())
}
