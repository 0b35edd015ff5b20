package env

import "fmt"

// FromConfig is the env_config constructor of an env package (its
// FromEnvConfig): it decodes envConfig over def with DecodeConfig (unknown
// keys are errors, prefixed with prefix) and builds the env with newEnv.
func FromConfig[C, E any](prefix string, def C, envConfig map[string]any, newEnv func(C) (E, error)) (E, error) {
	if err := DecodeConfig(envConfig, &def); err != nil {
		var zero E
		return zero, fmt.Errorf("%s: %w", prefix, err)
	}
	return newEnv(def)
}
