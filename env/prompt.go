package env

import (
	"maps"
	"slices"
	"sync"
)

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

// PromptFacter is implemented by envs that can report the prompt facts of
// their own config (env_config applied), for the option that lets a tag's
// env_config reach its system prompt (ragen_prompt_from_env_config;
// upstream uses the type's defaults, PromptDefaultsFor).
type PromptFacter interface {
	PromptFacts() PromptDefaults
}

// NamesInIDOrder returns a lookup's names in ascending id order.
func NamesInIDOrder(lookup map[int]string) []string {
	ids := slices.Sorted(maps.Keys(lookup))
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = lookup[id]
	}
	return out
}

// VocabInLookupOrder orders a grid vocabulary by the grid lookup: the
// symbols of lookup in ascending id order that vocab explains, then any
// other symbols of vocab in sorted order (the default vocabularies list
// their symbols in lookup order).
func VocabInLookupOrder(lookup map[int]string, vocab map[string]string) [][2]string {
	var out [][2]string
	seen := map[string]bool{}
	for _, sym := range NamesInIDOrder(lookup) {
		if m, ok := vocab[sym]; ok && !seen[sym] {
			out = append(out, [2]string{sym, m})
			seen[sym] = true
		}
	}
	for _, sym := range slices.Sorted(maps.Keys(vocab)) {
		if !seen[sym] {
			out = append(out, [2]string{sym, vocab[sym]})
		}
	}
	return out
}
