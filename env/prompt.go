package env

import "sync"

// PromptDefaults are the facts of an env type's *default* config that
// upstream's context manager reads when it builds a tag's system prompt
// (context-and-rollout.md §3.1): the default observation_format, the
// grid_vocab entries and the action_lookup names, both in upstream's dict
// (insertion) order, which Go maps do not keep.
type PromptDefaults struct {
	ObservationFormat string      // "" when the config has no such field
	GridVocab         [][2]string // {symbol, meaning}; nil when none
	ActionNames       []string    // action_lookup values; nil when none at build time
}

var (
	promptMu       sync.RWMutex
	promptDefaults = map[string]PromptDefaults{}
)

// RegisterPromptDefaults records the prompt facts of an env type; env
// subpackages call it from init next to Register. Registering twice is a
// programming mistake and panics.
func RegisterPromptDefaults(envType string, d PromptDefaults) {
	promptMu.Lock()
	defer promptMu.Unlock()
	if _, dup := promptDefaults[envType]; dup {
		panic("env: RegisterPromptDefaults: duplicate env type " + envType)
	}
	promptDefaults[envType] = d
}

// PromptDefaultsFor returns the prompt facts of an env type (copies), and
// false if none were registered (the prompt then gets no vocabulary and no
// action list).
func PromptDefaultsFor(envType string) (PromptDefaults, bool) {
	promptMu.RLock()
	d, ok := promptDefaults[envType]
	promptMu.RUnlock()
	if !ok {
		return PromptDefaults{}, false
	}
	d.GridVocab = append([][2]string(nil), d.GridVocab...)
	d.ActionNames = append([]string(nil), d.ActionNames...)
	if len(d.GridVocab) == 0 {
		d.GridVocab = nil
	}
	if len(d.ActionNames) == 0 {
		d.ActionNames = nil
	}
	return d, true
}
