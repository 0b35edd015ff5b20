package config

import (
	"errors"
	"slices"

	"ragen/env"
)

// envTypes is the list env_type values are checked against: the types
// registered with package env when a program has registered any (import
// ragen/env/all), else env.UpstreamTypes (upstream's registry names plus
// "http", the remote env type of package env/httpenv).
func envTypes() []string {
	if ts := env.Types(); len(ts) > 0 {
		return ts
	}
	return env.UpstreamTypes()
}

// envPreflight builds one env of a selected tag and closes it, so that what
// the env needs from outside — a data file, a server or bridge that
// answers, a working code sandbox — is checked by Validate, before any
// model loads. It runs only for types registered in this program.
func (v *validator) envPreflight(tag, envType string, em *Map) {
	if !slices.Contains(env.Types(), envType) {
		return
	}
	var cfg map[string]any
	if c, ok := em.Get("env_config"); ok && c != nil {
		cm, isMap := c.(*Map)
		if !isMap {
			return // reported by envEntry
		}
		cfg = plainMap(cm)
	}
	e, err := env.New(envType, cfg)
	if err != nil {
		v.errf("custom_envs."+tag+".env_config", "the env cannot be built: %v", err)
		return
	}
	_ = e.Close()
}

// plainMap converts a config map to the map[string]any an env factory
// takes.
func plainMap(m *Map) map[string]any {
	out := make(map[string]any, m.Len())
	for _, k := range m.Keys() {
		x, _ := m.Get(k)
		out[k] = plainValue(x)
	}
	return out
}

func plainValue(v any) any {
	switch x := v.(type) {
	case *Map:
		return plainMap(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plainValue(e)
		}
		return out
	}
	return v
}

// CheckEnvs checks only the env side of t for the given es_manager modes
// ("train", "val"; none means both): each selected tag exists, its env_type
// is registered and its env can be built (data, servers, bridges, sandbox).
// Validate does this and more; `ragen eval`, which does not need the
// training keys to be consistent, can call this before loading a model.
func CheckEnvs(t *Tree, modes ...string) error {
	if len(modes) == 0 {
		modes = []string{"train", "val"}
	}
	v := &validator{t: t}
	reg, _ := v.raw("custom_envs")
	regMap, _ := reg.(*Map)
	seen := map[string]bool{}
	for _, mode := range modes {
		p := "es_manager." + mode + ".env_configs.tags"
		tags, ok := v.listAt(p, "string")
		if !ok {
			continue
		}
		for _, tg := range tags {
			tag := tg.(string)
			if seen[tag] {
				continue
			}
			seen[tag] = true
			var entry any
			if regMap != nil {
				entry, ok = regMap.Get(tag)
			}
			em, isMap := entry.(*Map)
			if !ok || !isMap {
				v.errf(p, "unknown env tag %q (tags are the keys of custom_envs)", tag)
				continue
			}
			v.envEntry(tag, em)
		}
	}
	var errs []error
	for _, pr := range v.out {
		if !pr.Warning {
			errs = append(errs, pr)
		}
	}
	return errors.Join(errs...)
}
