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

// IntKeys names the keys of envConfig whose values are integers (a YAML
// or override int): upstream's dataclasses keep such a value a Python int,
// so a reward or number built from it prints without ".0". nil if none.
func IntKeys(envConfig map[string]any, keys ...string) map[string]bool {
	var out map[string]bool
	for _, k := range keys {
		switch envConfig[k].(type) {
		case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
			if out == nil {
				out = map[string]bool{}
			}
			out[k] = true
		}
	}
	return out
}
