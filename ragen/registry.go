package ragen

import "ragen/env"

// SpecFromTag converts a config/envs.yaml entry to the EnvSpec the
// managers use (max_tokens absent → 0, meaning rollout.response_length).
func SpecFromTag(t env.Tag) EnvSpec {
	s := EnvSpec{
		EnvType:           t.EnvType,
		MaxActionsPerTraj: t.MaxActionsPerTraj,
		EnvInstruction:    t.EnvInstruction,
		ParallelFriendly:  t.ParallelFriendly,
		MaxWorkers:        t.MaxWorkers,
		EnvConfig:         t.EnvConfig,
	}
	if t.MaxTokens != nil {
		s.MaxTokens = *t.MaxTokens
	}
	return s
}

// SpecsFromTags converts a whole tag table (for Config.CustomEnvs).
func SpecsFromTags(ts env.Tags) map[string]EnvSpec {
	out := make(map[string]EnvSpec, len(ts))
	for name, t := range ts {
		out[name] = SpecFromTag(t)
	}
	return out
}

// RegistryProvider builds envs through the env registry
// (env.New(spec.EnvType, spec.EnvConfig)); prompt supplies the system-prompt
// facts of an env type (nil → none).
func RegistryProvider(prompt func(tag string, spec EnvSpec) (PromptInfo, error)) EnvProvider {
	return ProviderFuncs{
		New:    func(tag string, spec EnvSpec) (env.BaseEnv, error) { return env.New(spec.EnvType, spec.EnvConfig) },
		Prompt: prompt,
	}
}

// DefaultProvider builds envs through the env registry and takes each env
// type's system-prompt facts from its registered defaults
// (env.PromptDefaultsFor), as upstream does: env_config overrides do not
// reach the system prompt (upstream quirk 3, kept; Config.PromptFromEnvConfig
// lets them). Import ragen/env/all (or
// the env packages you use) to register the environments.
func DefaultProvider() EnvProvider {
	return RegistryProvider(func(tag string, spec EnvSpec) (PromptInfo, error) {
		envType := spec.EnvType
		if envType == "http" {
			// a remote env (env/httpenv): the prompt facts are those of the
			// env type the server runs
			if inner, ok := spec.EnvConfig["env_type"].(string); ok {
				envType = inner
			}
		}
		d, ok := env.PromptDefaultsFor(envType)
		if !ok {
			return PromptInfo{}, nil
		}
		return promptInfoOf(d), nil
	})
}
