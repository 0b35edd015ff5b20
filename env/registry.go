package env

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Factory builds an env from the env_config map of a registry entry (nil
// means all defaults). Factories apply the map with DecodeConfig, so an
// unknown key is an error.
type Factory func(envConfig map[string]any) (BaseEnv, error)

var (
	registryMu sync.RWMutex
	registry   = map[string]Factory{}
)

// Register adds a factory under an upstream env_type name ("sokoban",
// "frozen_lake", ...). Env subpackages call it from init; import ragen/env/all
// to register every env. Registering a name twice or a nil factory is a
// programming mistake and panics.
func Register(envType string, f Factory) {
	if envType == "" || f == nil {
		panic("env: Register: empty env type or nil factory")
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[envType]; dup {
		panic("env: Register: duplicate env type " + envType)
	}
	registry[envType] = f
}

// New builds a registered env. An unknown type is an error listing the
// registered types.
func New(envType string, envConfig map[string]any) (BaseEnv, error) {
	registryMu.RLock()
	f, ok := registry[envType]
	registryMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("env: unknown env_type %q (registered: %s)", envType, strings.Join(Types(), ", "))
	}
	e, err := f(envConfig)
	if err != nil {
		return nil, fmt.Errorf("env: %s: %w", envType, err)
	}
	return e, nil
}

// UpstreamTypes lists the env types of upstream's registry plus "http"
// (package env/httpenv), sorted: the names a config may use in a program
// that registered no env package.
func UpstreamTypes() []string {
	return []string{"alfworld", "bandit", "countdown", "deepcoder", "frozen_lake", "game_2048", "http", "lean",
		"metamathqa", "rubikscube", "search", "sokoban", "sudoku", "webshop"}
}

// Types returns the registered env types, sorted.
func Types() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	out := make([]string, 0, len(registry))
	for k := range registry {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
