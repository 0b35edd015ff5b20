package cli

import (
	"errors"
	"fmt"
	"time"

	"ragen/config"
	"ragen/ragen"
)

// reader collects the first error of a series of typed reads from a tree;
// keys that are absent keep the library default.
type reader struct {
	t    *config.Tree
	errs []error
}

// has reports whether p is set to a value: absent and null keys are not.
func (r *reader) has(p string) bool {
	if !r.t.Has(p) {
		return false
	}
	v, err := r.t.Get(p)
	return err == nil && v != nil
}

func (r *reader) int(p string, dst *int) {
	if r.has(p) {
		v, err := r.t.Int(p)
		r.add(err)
		*dst = v
	}
}

func (r *reader) float(p string, dst *float64) {
	if r.has(p) {
		v, err := r.t.Float(p)
		r.add(err)
		*dst = v
	}
}

func (r *reader) str(p string, dst *string) {
	if r.has(p) {
		v, err := r.t.String(p)
		r.add(err)
		*dst = v
	}
}

func (r *reader) bool(p string, dst *bool) {
	if r.has(p) {
		v, err := r.t.Bool(p)
		r.add(err)
		*dst = v
	}
}

func (r *reader) strs(p string, dst *[]string) {
	if r.has(p) {
		v, err := r.t.StringSlice(p)
		r.add(err)
		*dst = v
	}
}

func (r *reader) ints(p string, dst *[]int) {
	if r.has(p) {
		v, err := r.t.IntSlice(p)
		r.add(err)
		*dst = v
	}
}

// optInt64 reads an int that may be null (null → nil).
func (r *reader) optInt64(p string, dst **int64) {
	if !r.has(p) {
		if r.t.Has(p) {
			*dst = nil
		}
		return
	}
	n, err := r.t.Int(p)
	r.add(err)
	x := int64(n)
	*dst = &x
}

func (r *reader) duration(p string, dst *time.Duration) {
	if r.has(p) {
		s, err := r.t.String(p)
		if err != nil {
			var secs float64
			r.float(p, &secs)
			*dst = time.Duration(secs * float64(time.Second))
			return
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			r.add(fmt.Errorf("%s: %w", p, err))
		}
		*dst = d
	}
}

func (r *reader) add(err error) {
	if err != nil {
		r.errs = append(r.errs, err)
	}
}

func (r *reader) err() error { return errors.Join(r.errs...) }

// rolloutConfig maps upstream's key tree onto ragen.Config.
func rolloutConfig(t *config.Tree) (ragen.Config, error) {
	c := ragen.DefaultConfig()
	r := &reader{t: t}
	r.float("es_manager.format_penalty", &c.ESManager.FormatPenalty)
	r.duration("es_manager.step_timeout", &c.ESManager.StepTimeout)
	for _, m := range []struct {
		key string
		set *ragen.EnvSetConfig
	}{{"es_manager.train", &c.ESManager.Train}, {"es_manager.val", &c.ESManager.Val}} {
		r.int(m.key+".env_groups", &m.set.EnvGroups)
		r.int(m.key+".group_size", &m.set.GroupSize)
		r.strs(m.key+".env_configs.tags", &m.set.EnvConfigs.Tags)
		r.ints(m.key+".env_configs.n_groups", &m.set.EnvConfigs.NGroups)
	}
	a := &c.AgentProxy
	r.str("agent_proxy.context_window_mode", &a.ContextWindowMode)
	r.int("agent_proxy.max_context_window", &a.MaxContextWindow)
	r.int("agent_proxy.max_turn", &a.MaxTurn)
	r.str("agent_proxy.action_sep", &a.ActionSep)
	r.int("agent_proxy.max_actions_per_turn", &a.MaxActionsPerTurn)
	r.bool("agent_proxy.use_turn_scores", &a.UseTurnScores)
	r.bool("agent_proxy.enable_think", &a.EnableThink)
	r.str("agent_proxy.reward_normalization.grouping", &a.RewardNormalization.Grouping)
	r.str("agent_proxy.reward_normalization.method", &a.RewardNormalization.Method)
	r.int("agent_proxy.pipeline_parts", &a.PipelineParts)
	r.optInt64("seed.train", &c.Seed.Train)
	r.optInt64("seed.val", &c.Seed.Val)
	ro := &c.Rollout
	r.float("actor_rollout_ref.rollout.temperature", &ro.Temperature)
	r.float("actor_rollout_ref.rollout.top_p", &ro.TopP)
	r.int("actor_rollout_ref.rollout.top_k", &ro.TopK)
	r.int("actor_rollout_ref.rollout.response_length", &ro.ResponseLength)
	r.int("actor_rollout_ref.rollout.max_model_len", &ro.MaxModelLen)
	r.bool("actor_rollout_ref.rollout.enable_prefix_caching", &ro.EnablePrefixCaching)
	r.ints("actor_rollout_ref.rollout.allowed_token_ids", &ro.AllowedTokenIDs) // null: every id
	r.bool("actor_rollout_ref.rollout.val_kwargs.do_sample", &ro.ValKwargs.DoSample)
	r.float("actor_rollout_ref.rollout.val_kwargs.temperature", &ro.ValKwargs.Temperature)
	r.float("actor_rollout_ref.rollout.val_kwargs.top_p", &ro.ValKwargs.TopP)
	r.int("actor_rollout_ref.rollout.val_kwargs.top_k", &ro.ValKwargs.TopK)
	r.bool("enable_response_mask", &c.EnableResponseMask)
	r.bool("upstream_compat.mask_alignment", &c.Compat.MaskAlignment)
	r.bool("upstream_compat.truncation", &c.Compat.Truncation)
	r.bool("upstream_compat.jsonl_success", &c.Compat.JSONLSuccess)
	r.bool("ragen_filter_raw_scores", &c.FilterRawScores)
	r.bool("ragen_prompt_from_env_config", &c.PromptFromEnvConfig)
	if t.Has("custom_envs") {
		envs := map[string]ragen.EnvSpec{}
		r.add(t.Decode("custom_envs", &envs))
		c.CustomEnvs = envs
	}
	if err := r.err(); err != nil {
		return c, err
	}
	return c, c.Validate()
}
