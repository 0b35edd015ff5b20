package env

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// Tag is one custom_envs entry of config/envs.yaml (envs.md §0.4), with
// upstream's field names.
type Tag struct {
	// Name is the entry's key (e.g. "CoordSokoban"); not part of the YAML body.
	Name string `yaml:"-"`
	// EnvType is the registry name (required).
	EnvType string `yaml:"env_type"`
	// MaxActionsPerTraj caps the primitive actions executed per episode
	// (manager-side; required).
	MaxActionsPerTraj int `yaml:"max_actions_per_traj"`
	// EnvInstruction is appended to the system prompt ("" if absent).
	EnvInstruction string `yaml:"env_instruction"`
	// MaxTokens only feeds the prompt sentence "Max response length: N
	// words (tokens)."; nil means actor_rollout_ref.rollout.response_length.
	MaxTokens *int `yaml:"max_tokens"`
	// ParallelFriendly and MaxWorkers: if true and MaxWorkers > 1, reset and
	// step of this tag run in a pool of that size. Defaults false and 1.
	ParallelFriendly bool `yaml:"parallel_friendly"`
	MaxWorkers       int  `yaml:"max_workers"`
	// EnvConfig overrides the env's config struct; nil means all defaults.
	EnvConfig map[string]any `yaml:"env_config"`
	// Extra holds any other top-level keys of the entry. Upstream's context
	// manager overlays top-level keys (not env_config) on the env's default
	// config when it builds the system prompt (context-and-rollout.md §3.1).
	Extra map[string]any `yaml:",inline"`
}

// Build constructs the tag's env through the registry with its env_config.
func (t Tag) Build() (BaseEnv, error) {
	e, err := New(t.EnvType, t.EnvConfig)
	if err != nil {
		return nil, fmt.Errorf("env: tag %s: %w", t.Name, err)
	}
	return e, nil
}

// Tags is the tag table keyed by tag name.
type Tags map[string]Tag

// Names returns the tag names, sorted.
func (ts Tags) Names() []string {
	out := make([]string, 0, len(ts))
	for k := range ts {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Lookup returns the named tag or an error listing the valid names.
func (ts Tags) Lookup(name string) (Tag, error) {
	t, ok := ts[name]
	if !ok {
		msg := fmt.Sprintf("env: unknown tag %q", name)
		if near := nearest(name, ts.Names()); near != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", near)
		}
		return Tag{}, fmt.Errorf("%s; tags: %s", msg, strings.Join(ts.Names(), ", "))
	}
	return t, nil
}

//go:embed envs.yaml
var embeddedTags []byte

// EmbeddedTagsYAML returns the bytes of the embedded tag table (identical to
// config/envs.yaml).
func EmbeddedTagsYAML() []byte { return append([]byte(nil), embeddedTags...) }

// DefaultTags parses the embedded copy of upstream's config/envs.yaml.
func DefaultTags() (Tags, error) { return ParseTags(embeddedTags) }

// LoadTags reads and parses a tag table file.
func LoadTags(path string) (Tags, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("env: load tags: %w", err)
	}
	ts, err := ParseTags(b)
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return ts, nil
}

// ParseTags parses a YAML document whose top-level key custom_envs maps tag
// names to entries. Missing env_type or max_actions_per_traj, a non-mapping
// entry, or a malformed field is an error naming the tag; every problem is
// reported at once.
func ParseTags(data []byte) (Tags, error) {
	var doc struct {
		CustomEnvs map[string]yaml.Node `yaml:"custom_envs"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("env: parse tags: %w", err)
	}
	if doc.CustomEnvs == nil {
		return nil, errors.New("env: parse tags: no custom_envs mapping")
	}
	ts := make(Tags, len(doc.CustomEnvs))
	var errs []error
	names := make([]string, 0, len(doc.CustomEnvs))
	for n := range doc.CustomEnvs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		node := doc.CustomEnvs[name]
		if node.Kind != yaml.MappingNode {
			errs = append(errs, fmt.Errorf("tag %s: entry is not a mapping", name))
			continue
		}
		has := map[string]bool{}
		for i := 0; i+1 < len(node.Content); i += 2 {
			has[node.Content[i].Value] = true
		}
		t := Tag{MaxWorkers: 1}
		if err := node.Decode(&t); err != nil {
			errs = append(errs, fmt.Errorf("tag %s: %w", name, err))
			continue
		}
		t.Name = name
		if !has["env_type"] || t.EnvType == "" {
			errs = append(errs, fmt.Errorf("tag %s: env_type is required", name))
		}
		if !has["max_actions_per_traj"] {
			errs = append(errs, fmt.Errorf("tag %s: max_actions_per_traj is required", name))
		} else if t.MaxActionsPerTraj <= 0 {
			errs = append(errs, fmt.Errorf("tag %s: max_actions_per_traj must be positive, got %d", name, t.MaxActionsPerTraj))
		}
		if len(t.Extra) == 0 {
			t.Extra = nil
		}
		ts[name] = t
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("env: parse tags: %w", errors.Join(errs...))
	}
	return ts, nil
}
