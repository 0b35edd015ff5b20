package config

import (
	"errors"
	"fmt"
	"math"
	"os"
	"ragen/collapse"
	"ragen/config/rule"
	"slices"
	"sort"
	"strconv"
	"strings"

	"ragen/filter"
	"ragen/ragen"
	"ragen/starpo/algo"
	"ragen/starpo/settings"
	"ragen/track"
)

// Problem is one inconsistency found by Check (package rule's type, which
// the packages that own keys return from their Validate methods).
type Problem = rule.Problem

// validObservations are the sokoban and frozen_lake envs'
// observation_format names, checked here for programs that register no env
// (envPreflight builds the env otherwise, which checks them itself). Every
// other key's names come from the package that owns it.
var validObservations = []string{"coord", "grid", "grid_coord"}

// Validate checks cross-key consistency before any work starts: what upstream's train.py
// and veRL's workers assert, and what would otherwise fail late (unknown names, bad
// ranges, env-group bookkeeping). It reports every error at once (errors.Join of
// Problem values); warnings from Check are not included.
func Validate(t *Tree) error {
	var errs []error
	for _, p := range Check(t) {
		if !p.Warning {
			errs = append(errs, p)
		}
	}
	return errors.Join(errs...)
}

// Check returns all problems, errors and warnings, in a stable order.
func Check(t *Tree) []Problem {
	v := &validator{t: t}
	v.batchSizes()
	v.startupAsserts()
	v.envManagers()
	v.names()
	v.ranges()
	v.rolloutCore()
	v.filterCore()
	v.trainerCore()
	sort.SliceStable(v.out, func(i, j int) bool { return v.out[i].Warning != v.out[j].Warning && !v.out[i].Warning })
	return v.out
}

type validator struct {
	t   *Tree
	out []Problem
}

// errf reports a problem of key once (several checks read the same key).
func (v *validator) errf(key, format string, args ...any) {
	p := Problem{Key: key, Msg: fmt.Sprintf(format, args...)}
	if !slices.Contains(v.out, p) {
		v.out = append(v.out, p)
	}
}

// reported says whether an error about key was already reported.
func (v *validator) reported(key string) bool {
	for _, p := range v.out {
		if p.Key == key && !p.Warning {
			return true
		}
	}
	return false
}

// add reports a package's verdict: its Problems under their keys (except
// where a problem of the same key, or of a key inside or around it, was
// already reported: the tree checks run first and say more about a value
// of the wrong type), any other error under fallback.
func (v *validator) add(fallback string, err error) {
	ps, other := rule.Problems(err)
	for _, p := range ps {
		if !p.Warning && v.reportedNear(p.Key) {
			continue
		}
		v.out = append(v.out, p)
	}
	for _, e := range other {
		v.errf(fallback, "%v", e)
	}
}

// reportedNear says whether an error about key, a key inside it or the key
// it is inside of was already reported.
func (v *validator) reportedNear(key string) bool {
	near := func(a, b string) bool {
		return a == b || (strings.HasPrefix(a, b) && strings.ContainsRune(".[", rune(a[len(b)])))
	}
	for _, p := range v.out {
		if !p.Warning && (near(p.Key, key) || near(key, p.Key)) {
			return true
		}
	}
	return false
}

// trainerCore runs package settings' checks on the tree decoded onto
// settings.DefaultConfig(), as the CLI decodes it: the trainer's keys, and
// through them algo's loss and estimator settings and ragen's rollout
// blocks. The KL controller's coefficient is checked also when
// use_kl_in_reward is off (the trainer reads kl_ctrl only when it is on).
func (v *validator) trainerCore() {
	sc := settings.DefaultConfig()
	decodePartial(v.t.root, &sc)
	v.add("trainer", sc.Validate())
	if on, _ := v.raw("algorithm.use_kl_in_reward"); on != true {
		ps, _ := rule.Problems(sc.KLControlConfig().Validate())
		for _, p := range ps {
			if p.Key == algo.KLCtrlKey+"kl_coef" {
				v.add("algorithm.kl_ctrl", p)
			}
		}
	}
}

// filterCore runs package filter's checks on the tree's filter keys, with
// NumGroups and GroupSize from es_manager.train as the trainer sets them.
func (v *validator) filterCore() {
	fc := filter.DefaultConfig()
	if x, ok := v.raw("actor_rollout_ref.rollout"); ok {
		decodePartial(x, &fc)
	}
	if n, ok := v.raw("es_manager.train.env_groups"); ok {
		fc.NumGroups, _ = n.(int)
	}
	if n, ok := v.raw("es_manager.train.group_size"); ok {
		fc.GroupSize, _ = n.(int)
	}
	v.add("actor_rollout_ref.rollout", fc.Validate())
}

// rolloutCore runs package ragen's checks (es_manager, custom_envs,
// agent_proxy, the rollout lengths) on the tree's values: the tree decoded
// onto ragen.DefaultConfig() as the CLI does (null keeps the default),
// with empty env sets, so that a missing one is reported once, as missing.
func (v *validator) rolloutCore() {
	rc := ragen.DefaultConfig()
	rc.ESManager.Train, rc.ESManager.Val = ragen.EnvSetConfig{}, ragen.EnvSetConfig{}
	for _, d := range []struct {
		key string
		dst any
	}{{"es_manager", &rc.ESManager}, {"custom_envs", &rc.CustomEnvs}, {"agent_proxy", &rc.AgentProxy}, {"actor_rollout_ref.rollout", &rc.Rollout}} {
		if x, ok := v.raw(d.key); ok {
			decodePartial(x, d.dst)
		}
	}
	v.add("es_manager", rc.Validate())
}

// decodePartial decodes x onto dst as far as its values fit (yaml.v3 goes
// on past a value of the wrong type; the tree checks report those), with
// null values left out so they keep dst's defaults.
func decodePartial(x any, dst any) {
	_ = toNode(copyTree(x, true)).Decode(dst)
}

func (v *validator) warnf(key, format string, args ...any) {
	v.out = append(v.out, Problem{Key: key, Msg: fmt.Sprintf(format, args...), Warning: true})
}

// raw returns the value at key; ok=false if absent.
func (v *validator) raw(key string) (any, bool) {
	segs, err := splitPath(key)
	if err != nil {
		return nil, false
	}
	return lookup(v.t.root, segs)
}

// intAt reads an int. Absent keys are reported only when required; null gives ok=false
// without a problem when nullable.
func (v *validator) intAt(key string, required, nullable bool) (int, bool) {
	x, ok := v.raw(key)
	if !ok {
		if required {
			v.errf(key, "missing (required)")
		}
		return 0, false
	}
	if x == nil && nullable {
		return 0, false
	}
	i, isInt := x.(int)
	if !isInt {
		v.errf(key, "want an integer, found %s", describe(x))
		return 0, false
	}
	return i, true
}

func (v *validator) floatAt(key string, nullable bool) (float64, bool) {
	x, ok := v.raw(key)
	if !ok || (x == nil && nullable) {
		return 0, false
	}
	switch n := x.(type) {
	case int:
		return float64(n), true
	case float64:
		if math.IsNaN(n) || math.IsInf(n, 0) {
			v.errf(key, "is %s; want a finite number", flowString(n))
			return 0, false
		}
		return n, true
	}
	v.errf(key, "want a number, found %s", describe(x))
	return 0, false
}

func (v *validator) boolAt(key string) (bool, bool) {
	x, ok := v.raw(key)
	if !ok {
		return false, false
	}
	b, isBool := x.(bool)
	if !isBool {
		v.errf(key, "want true or false, found %s", describe(x))
		return false, false
	}
	return b, true
}

func (v *validator) strAt(key string, nullable bool) (string, bool) {
	x, ok := v.raw(key)
	if !ok || (x == nil && nullable) {
		return "", false
	}
	s, isStr := x.(string)
	if !isStr {
		v.errf(key, "want a string, found %s", describe(x))
		return "", false
	}
	return s, true
}

func (v *validator) unknown(key, value, hintBase string, valid []string) {
	valid = slices.Sorted(slices.Values(valid))
	v.errf(key, "unknown value %q%s; valid: %s", value, rule.DidYouMean(hintBase, valid), strings.Join(valid, ", "))
}

// criticEnabled: critic.enable true, or null/absent and adv_estimator == gae.
func (v *validator) criticEnabled() bool {
	if x, ok := v.raw("critic.enable"); ok && x != nil {
		b, _ := x.(bool)
		return b
	}
	est, _ := v.raw("algorithm.adv_estimator")
	return est == "gae"
}

func (v *validator) world() (nGPU, nodes int) {
	nGPU, nodes = 1, 1
	// Their ranges are package settings' (trainerCore).
	if n, ok := v.intAt("trainer.n_gpus_per_node", true, false); ok && n >= 1 {
		nGPU = n
	}
	if n, ok := v.intAt("trainer.nnodes", false, false); ok && n >= 1 {
		nodes = n
	}
	return nGPU, nodes
}

// nearestFitting lists the values m nearest to x (one below, one above when they exist)
// for which fits(m) holds, searching 1..limit.
func nearestFitting(x, limit int, fits func(int) bool) string {
	var below, above int
	for d := 1; d <= limit; d++ {
		if !fits(d) {
			continue
		}
		if d < x {
			below = d
		} else if d > x && above == 0 {
			above = d
		}
	}
	switch {
	case below > 0 && above > 0:
		return fmt.Sprintf("%d or %d", below, above)
	case below > 0:
		return strconv.Itoa(below)
	case above > 0:
		return strconv.Itoa(above)
	}
	return "none"
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func lcm(a, b int) int { return a / gcd(a, b) * b }

// batchSizes checks the mini/micro batch arithmetic of actor and critic (RAGEN train.py
// assertion 1 and veRL's worker normalisation) and the train batch against the mini batch.
func (v *validator) batchSizes() {
	nGPU, nodes := v.world()
	world := nGPU * nodes
	rolloutN := 1
	if n, ok := v.intAt("actor_rollout_ref.rollout.n", false, false); ok {
		if n < 1 {
			v.errf("actor_rollout_ref.rollout.n", "must be >= 1, got %d", n)
		} else {
			rolloutN = n
		}
	}
	dyn, _ := v.boolAt("actor_rollout_ref.actor.use_dynamic_bsz")
	mini := 0
	roles := []string{"actor_rollout_ref.actor"}
	if v.criticEnabled() {
		roles = append(roles, "critic")
	}
	for _, role := range roles {
		m, okM := v.intAt(role+".ppo_mini_batch_size", true, false)
		if role == "actor_rollout_ref.actor" && okM && m >= 1 {
			mini = m
		}
		micro, okMicro := v.intAt(role+".ppo_micro_batch_size_per_gpu", false, true)
		old, okOld := v.intAt(role+".ppo_micro_batch_size", false, true)
		if okMicro && okOld {
			v.errf(role+".ppo_micro_batch_size_per_gpu", "set only one of ppo_micro_batch_size (%d, deprecated) and ppo_micro_batch_size_per_gpu (%d)", old, micro)
		}
		if okOld && !okMicro {
			if old%world != 0 {
				v.errf(role+".ppo_micro_batch_size", "%d is not divisible by the %d GPUs (nnodes x n_gpus_per_node); use ppo_micro_batch_size_per_gpu", old, world)
			}
			micro, okMicro = old/world, true
		}
		if !okMicro && !okOld && !dyn {
			v.errf(role+".ppo_micro_batch_size_per_gpu", "set ppo_micro_batch_size_per_gpu (or use_dynamic_bsz=true)")
		}
		if !okM || !okMicro || dyn {
			continue // the sizes' own ranges: package settings (trainerCore)
		}
		// RAGEN train.py's assertion (package settings' rule) on the micro
		// batch the tree gives, also through the deprecated key.
		if err := settings.CheckMiniBatch(role, m, micro, nGPU); err != nil {
			v.add(role, err)
			continue
		}
		prod := micro * nGPU
		// veRL worker: per-GPU mini = mini * rollout.n // world, > 0 and divisible by micro.
		perGPU := m * rolloutN / world
		if perGPU < 1 || perGPU%micro != 0 || (m*rolloutN)%world != 0 {
			v.errf(role+".ppo_mini_batch_size", "%d x rollout.n %d over %d GPUs (nnodes %d x %d) gives a per-GPU mini batch of %d, which must be a positive multiple of ppo_micro_batch_size_per_gpu=%d; nearest fitting: %s",
				m, rolloutN, world, nodes, nGPU, perGPU, micro, rule.NearestMultiples(m, lcm(prod, world*micro)))
		}
	}
	for _, key := range []string{"actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu", "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu", "log_prob_micro_batch_size_per_gpu", "micro_batch_size_per_gpu"} {
		if n, ok := v.intAt(key, false, true); ok && n < 1 {
			v.errf(key, "must be >= 1, got %d", n)
		}
	}

	// Train batch vs mini batch and GPUs (full mode: one row per env).
	groups, okG := v.intAt("es_manager.train.env_groups", true, false)
	size, okS := v.intAt("es_manager.train.group_size", true, false)
	if !okG || !okS || groups < 1 || size < 1 || mini < 1 {
		return
	}
	mode, _ := v.raw("agent_proxy.context_window_mode")
	if mode != nil && mode != "full" {
		return // turn-level modes: rows = env turns, known only at run time
	}
	batch := groups * size
	filterOff := v.filterRatio() >= 1
	adjust := "copy"
	if s, ok := v.raw("agent_proxy.batch_adjust_mode"); ok && s == "delete" {
		adjust = "delete"
	}
	if filterOff && batch%mini != 0 && batch >= mini {
		step := lcm(lcm(groups, mini), nGPU)
		padTo := (batch + step - 1) / step * step
		effect := fmt.Sprintf("batch_adjust_mode=copy pads every step with %d duplicate rows (to %d)", padTo-batch, padTo)
		if adjust == "delete" {
			effect = fmt.Sprintf("batch_adjust_mode=delete drops %d rows every step (to %d)", batch-batch/step*step, batch/step*step)
		}
		micro, _ := v.intAt("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", false, true)
		// A mini batch fits when the batch needs no adjustment (batch is a multiple of
		// lcm(env_groups, mini, n_gpus)) and RAGEN's micro x n_gpus divisibility holds.
		fit := nearestFitting(mini, batch, func(m int) bool {
			return batch%lcm(lcm(groups, m), nGPU) == 0 && m%(max(1, micro)*nGPU) == 0
		})
		v.warnf("actor_rollout_ref.actor.ppo_mini_batch_size", "ppo_mini_batch_size=%d does not divide train batch %d (= %d groups x %d); %s; nearest fitting: %s",
			mini, batch, groups, size, effect, fit)
	}
	if filterOff && batch%world != 0 {
		v.warnf("trainer.n_gpus_per_node", "train batch %d (= %d groups x %d) is not divisible by the %d GPUs; rows are padded to a multiple of lcm(env_groups, ppo_mini_batch_size, n_gpus_per_node)",
			batch, groups, size, world)
	}
}

// filterRatio is the fraction of groups the rollout filter keeps at most (RAGEN train.py).
func (v *validator) filterRatio() float64 {
	strategy, _ := v.raw("actor_rollout_ref.rollout.rollout_filter_strategy")
	value := 1.0
	if x, ok := v.raw("actor_rollout_ref.rollout.rollout_filter_value"); ok {
		switch n := x.(type) {
		case int:
			value = float64(n)
		case float64:
			value = n
		}
	} else if x, ok := v.raw("actor_rollout_ref.rollout.rollout_filter_ratio"); ok { // legacy alias
		switch n := x.(type) {
		case int:
			value = float64(n)
		case float64:
			value = n
		}
	} else {
		value = 0.25 // code default when the key is missing
	}
	if math.IsNaN(value) || value < 0 {
		return 1.0 // out of range, reported by ranges; no capacity arithmetic on it
	}
	switch strategy {
	case "top_p", "top_k", nil:
		return value
	case "top_k_abs":
		if g, ok := v.raw("es_manager.train.env_groups"); ok {
			if n, ok := g.(int); ok && n > 0 {
				return value / float64(n)
			}
		}
	}
	return 1.0
}

// startupAsserts mirrors the remaining assertions of RAGEN's train.py.
func (v *validator) startupAsserts() {
	// 2. enable_response_mask needs a Qwen or Llama-3 tokenizer.
	if on, ok := v.boolAt("enable_response_mask"); ok && on {
		if mp, ok := v.strAt("model_path", false); ok {
			l := strings.ToLower(mp)
			// ragen: the tiny demo model uses Qwen2.5's chat format, and a local
			// folder's family is read from its tokenizer when masks are built.
			st, err := os.Stat(mp)
			local := err == nil && st.IsDir()
			if local || mp == "tiny" {
				l = "qwen"
			}
			if !strings.Contains(l, "qwen") && !strings.Contains(l, "llama-3") {
				// ragen: say too that the folder is missing, so a mistyped
				// path is not read as a model family problem alone.
				where := ""
				if !local {
					where = ", which is not a folder here either"
				}
				v.errf("enable_response_mask", "needs a Qwen or Llama-3 model (model_path=%q%s); set enable_response_mask=False for other models", mp, where)
			}
		}
	}
	// 3. CUDA_VISIBLE_DEVICES entries == n_gpus_per_node.
	if x, ok := v.raw("system.CUDA_VISIBLE_DEVICES"); ok && x != nil {
		var devs string
		switch d := x.(type) {
		case string:
			devs = d
		case int:
			devs = strconv.Itoa(d)
		default:
			v.errf("system.CUDA_VISIBLE_DEVICES", "want a comma-separated string of device ids, found %s", describe(x))
		}
		if devs != "" {
			n := len(strings.Split(devs, ","))
			if g, ok := v.intAt("trainer.n_gpus_per_node", false, false); ok && g != n {
				v.errf("system.CUDA_VISIBLE_DEVICES", "lists %d device(s) (%q) but trainer.n_gpus_per_node=%d; they must agree", n, devs, g)
			}
		}
	}
	// 4. Filter capacity: env_groups x group_size x ratio (x max_turn) >= ppo_mini_batch_size.
	groups, okG := v.intAt("es_manager.train.env_groups", false, false)
	size, okS := v.intAt("es_manager.train.group_size", false, false)
	// Upstream compares against the top-level ppo_mini_batch_size (which the
	// actor's interpolates), not the actor's own key.
	miniKey := "ppo_mini_batch_size"
	if _, ok := v.raw(miniKey); !ok {
		miniKey = "actor_rollout_ref.actor.ppo_mini_batch_size"
	}
	mini, okM := v.intAt(miniKey, false, false)
	if okG && okS && okM && groups > 0 && size > 0 {
		ratio := v.filterRatio()
		rows := float64(groups*size) * ratio
		expr := fmt.Sprintf("%d groups x %d x filter ratio %g", groups, size, ratio)
		if mode, _ := v.raw("agent_proxy.context_window_mode"); mode == "single_turn" || mode == "limited_multi_turn" {
			if mt, ok := v.intAt("agent_proxy.max_turn", false, false); ok {
				rows *= float64(mt)
				expr += fmt.Sprintf(" x max_turn %d", mt)
			}
		}
		if rows < float64(mini) {
			v.errf(miniKey, "%d exceeds the rows the filter can keep: %s = %g; lower ppo_mini_batch_size to at most %d or keep more groups",
				mini, expr, rows, int(math.Floor(rows)))
		}
	}
	// 5. bi_level_gae needs gae (package settings' rule) and no turn scores.
	if on, ok := v.boolAt("algorithm.bi_level_gae"); ok && on {
		if ts, _ := v.raw("agent_proxy.use_turn_scores"); ts == true {
			v.errf("algorithm.bi_level_gae", "requires agent_proxy.use_turn_scores=False")
		}
	}
	if kl, _ := v.raw("actor_rollout_ref.actor.use_kl_loss"); kl == true {
		if ref, _ := v.raw("actor_rollout_ref.actor.use_ref"); ref == false {
			v.warnf("actor_rollout_ref.actor.use_kl_loss", "is forced off because actor_rollout_ref.actor.use_ref=False (no reference model)")
		}
	}
}

// envManagers checks the types of es_manager.{train,val} (sizes, tags,
// n_groups) and every selected custom_envs entry; the bookkeeping between
// them (sizes >= 1, one count per tag, counts summing to env_groups, known
// tags) is package ragen's (rolloutCore).
func (v *validator) envManagers() {
	reg, _ := v.raw("custom_envs")
	regMap, _ := reg.(*Map)
	for _, mode := range []string{"train", "val"} {
		p := "es_manager." + mode
		v.intAt(p+".env_groups", true, false)
		v.intAt(p+".group_size", true, false)
		tags, okT := v.listAt(p+".env_configs.tags", "string")
		v.listAt(p+".env_configs.n_groups", "int")
		if !okT || regMap == nil {
			continue
		}
		for _, tg := range tags {
			tag := tg.(string)
			entry, ok := regMap.Get(tag)
			if !ok {
				continue // ragen reports the unknown tag
			}
			em, ok := entry.(*Map)
			if !ok {
				v.errf("custom_envs."+tag, "want a map, found %s", describe(entry))
				continue
			}
			v.envEntry(tag, em)
		}
	}
}

func (v *validator) envEntry(tag string, em *Map) {
	key := "custom_envs." + tag
	et, ok := em.Get("env_type")
	if !ok {
		v.errf(key+".env_type", "missing (required)")
	} else if s, isStr := et.(string); !isStr {
		v.errf(key+".env_type", "want a string, found %s", describe(et))
	} else if types := envTypes(); !contains(types, s) {
		v.errf(key+".env_type", "unknown env type %q%s; registered: %s", s, rule.DidYouMean(s, types), strings.Join(types, ", "))
	} else {
		defer v.envPreflight(tag, s, em)
	}
	if m, ok := em.Get("max_actions_per_traj"); !ok {
		v.errf(key+".max_actions_per_traj", "missing (required)")
	} else if _, isInt := m.(int); !isInt {
		v.errf(key+".max_actions_per_traj", "want an integer, found %s", describe(m))
	}
	// The entry's ranges are package ragen's.
	var spec ragen.EnvSpec
	decodePartial(em, &spec)
	v.add(key, spec.Validate(tag))
	if cfg, ok := em.Get("env_config"); ok && cfg != nil {
		cm, isMap := cfg.(*Map)
		if !isMap {
			v.errf(key+".env_config", "want a map or null, found %s", describe(cfg))
			return
		}
		if of, ok := cm.Get("observation_format"); ok && et == "sokoban" {
			if s, _ := of.(string); !contains(validObservations, s) {
				v.errf(key+".env_config.observation_format", "unknown value %s; valid: %s", flowString(of), strings.Join(validObservations, ", "))
			}
		}
		if sr, ok := cm.Get("success_rate"); ok {
			if f, isNum := toFloat(sr); !isNum || f < 0 || f > 1 {
				v.errf(key+".env_config.success_rate", "must be a probability in [0, 1], got %s", flowString(sr))
			}
		}
	}
}

// listAt reads a list whose elements must all have the given type name.
func (v *validator) listAt(key, elem string) ([]any, bool) {
	x, ok := v.raw(key)
	if !ok {
		v.errf(key, "missing (required)")
		return nil, false
	}
	l, isList := x.([]any)
	if !isList {
		v.errf(key, "want a list of %ss, found %s", elem, describe(x))
		return nil, false
	}
	for i, e := range l {
		if typeName(e) != elem {
			v.errf(fmt.Sprintf("%s[%d]", key, i), "want a %s, found %s", elem, describe(e))
			return nil, false
		}
	}
	return l, true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func toFloat(x any) (float64, bool) {
	switch n := x.(type) {
	case int:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

// names checks that the enumerated settings are strings, and the names
// whose owner's Validate does not see them: a KL loss type without a
// reference model, an empty filter name, the logger names (track's list),
// collapse's num_samples (collapse.NumSamplesFrom's rule). The other names are their owners' (trainerCore,
// rolloutCore, filterCore).
func (v *validator) names() {
	v.strAt("algorithm.adv_estimator", false)
	if x, ok := v.raw("critic.enable"); ok && x != nil {
		if _, isBool := x.(bool); !isBool {
			v.errf("critic.enable", "want true, false or null (null: a critic iff adv_estimator=gae), found %s", describe(x))
		}
	}
	// Upstream reads the KL names only when their feature is on (scripts
	// pass low-var-kl harmlessly).
	if on, _ := v.raw("actor_rollout_ref.actor.use_kl_loss"); on == true {
		if s, ok := v.strAt("actor_rollout_ref.actor.kl_loss_type", false); ok {
			// also without a reference model, where the trainer turns the loss off
			v.add("actor_rollout_ref.actor.kl_loss_type", algo.CheckKLType("actor_rollout_ref.actor.kl_loss_type", s))
		}
	}
	if on, _ := v.raw("algorithm.use_kl_in_reward"); on == true {
		v.strAt("algorithm.kl_penalty", false)
		v.strAt("algorithm.kl_ctrl.type", false)
	}
	v.strAt("trainer.resume_mode", false)
	// The filter's names and ranges are package filter's (filterCore); an
	// empty name or a zero bucket count, which package filter reads as its
	// default, is not a value a config may spell (null asks for the default).
	for _, k := range []struct {
		key   string
		names []string
	}{{"rollout_filter_strategy", filter.Strategies()}, {"rollout_filter_top_p_prob_mode", filter.ProbModes()},
		{"rollout_filter_metric", filter.Metrics()}, {"gradient_analysis_bucket_mode", filter.BucketModes()}} {
		if x, _ := v.raw(filter.KeyPrefix + k.key); x == "" {
			v.unknown(filter.KeyPrefix+k.key, "", "", k.names)
		}
	}
	if x, _ := v.raw(filter.KeyPrefix + "gradient_analysis_num_buckets"); x == 0 {
		v.errf(filter.KeyPrefix+"gradient_analysis_num_buckets", "0 is out of range: want >= 1")
	}
	if x, ok := v.raw("trainer.logger"); ok && x != nil {
		loggers := track.LoggerNames()
		switch l := x.(type) {
		case string:
			if !contains(loggers, l) {
				v.errf("trainer.logger", "unknown logger %q; valid: %s", l, strings.Join(loggers, ", "))
			}
		case []any:
			for i, e := range l {
				if s, ok := e.(string); !ok || !contains(loggers, s) {
					v.errf(fmt.Sprintf("trainer.logger[%d]", i), "unknown logger %s; valid: %s", flowString(e), strings.Join(loggers, ", "))
				}
			}
		default:
			v.errf("trainer.logger", "want a list of logger names, found %s", describe(x))
		}
	}
	if x, ok := v.raw("collapse_detection.num_samples"); ok {
		if _, err := collapse.NumSamplesFrom(x); err != nil {
			v.errf("collapse_detection.num_samples", "%v", err)
		}
	}
}

type rangeCheck struct {
	key      string
	lo, hi   float64
	loOpen   bool // lo excluded
	hiOpen   bool
	nullable bool
	integer  bool // an integer key: a float (2.7, even 3.0) is an error
	// owner names the package whose Validate holds the key's range (its
	// problems come in through rolloutCore, filterCore, trainerCore);
	// only the type is checked here.
	owner string
	cond  func(*validator) bool
}

func (v *validator) ranges() {
	inf := math.Inf(1)
	critic := func(v *validator) bool { return v.criticEnabled() }
	adaptive := func(v *validator) bool {
		on, _ := v.raw("algorithm.use_kl_in_reward")
		tp, _ := v.raw("algorithm.kl_ctrl.type")
		return on == true && tp == "adaptive"
	}
	checks := []rangeCheck{
		{key: "actor_rollout_ref.rollout.temperature", owner: "settings"},
		{key: "actor_rollout_ref.rollout.val_kwargs.temperature", owner: "ragen"},
		{key: "actor_rollout_ref.rollout.top_p", owner: "ragen"},
		{key: "actor_rollout_ref.rollout.val_kwargs.top_p", owner: "ragen"},
		{key: "actor_rollout_ref.rollout.top_k", owner: "ragen", integer: true},
		{key: "actor_rollout_ref.rollout.val_kwargs.top_k", owner: "ragen", integer: true},
		{key: "actor_rollout_ref.rollout.gpu_memory_utilization", lo: 0, hi: 1, loOpen: true},
		{key: "actor_rollout_ref.rollout.rollout_filter_value", owner: "filter"},
		{key: "actor_rollout_ref.rollout.rollout_filter_selection_eps", owner: "filter"},
		{key: "actor_rollout_ref.rollout.rollout_filter_empty_stop_steps", owner: "filter", integer: true},
		{key: "actor_rollout_ref.rollout.gradient_analysis_num_buckets", owner: "filter", integer: true},
		{key: "actor_rollout_ref.rollout.response_length", owner: "ragen", integer: true},
		{key: "actor_rollout_ref.rollout.max_model_len", owner: "ragen", nullable: true, integer: true},
		{key: "agent_proxy.max_turn", owner: "ragen", integer: true},
		{key: "agent_proxy.max_actions_per_turn", owner: "ragen", integer: true},
		{key: "actor_rollout_ref.rollout.tensor_model_parallel_size", lo: 1, hi: inf, integer: true},
		{key: "actor_rollout_ref.actor.optim.lr", owner: "settings"},
		{key: "actor_rollout_ref.actor.optim.weight_decay", owner: "settings"},
		{key: "actor_rollout_ref.actor.optim.lr_warmup_steps_ratio", owner: "settings"},
		{key: "actor_rollout_ref.actor.grad_clip", owner: "settings"},
		{key: "actor_rollout_ref.actor.clip_ratio", owner: "algo"},
		{key: "actor_rollout_ref.actor.clip_ratio_low", owner: "algo", nullable: true},
		{key: "actor_rollout_ref.actor.clip_ratio_high", owner: "algo", nullable: true},
		{key: "actor_rollout_ref.actor.clip_ratio_c", owner: "algo"},
		{key: "actor_rollout_ref.actor.kl_loss_coef", owner: "algo"},
		{key: "actor_rollout_ref.actor.ppo_epochs", owner: "settings", integer: true},
		{key: "critic.optim.lr", owner: "settings", cond: critic},
		{key: "critic.optim.weight_decay", owner: "settings", cond: critic},
		{key: "critic.grad_clip", owner: "settings", cond: critic},
		{key: "critic.cliprange_value", owner: "algo", cond: critic},
		{key: "algorithm.gamma", owner: "algo"},
		{key: "algorithm.lam", owner: "algo"},
		{key: "algorithm.high_level_gamma", owner: "algo"},
		{key: "algorithm.kl_ctrl.kl_coef", owner: "algo"},
		{key: "algorithm.kl_ctrl.target_kl", owner: "algo", cond: adaptive},
		{key: "algorithm.kl_ctrl.horizon", owner: "algo", cond: adaptive},
		{key: "collapse_detection.compute_freq", lo: 1, hi: inf, integer: true},
		{key: "collapse_detection.micro_batch_size", lo: 1, hi: inf, integer: true},
		{key: "trainer.total_training_steps", owner: "settings", integer: true},
		{key: "trainer.validation_steps", owner: "settings", integer: true},
		{key: "trainer.critic_warmup", owner: "settings", integer: true},
		{key: "lora.rank", lo: 0, hi: inf, integer: true},
		{key: "trainer.save_freq", owner: "settings", integer: true},
		{key: "trainer.test_freq", owner: "settings", integer: true},
		{key: "trainer.max_actor_ckpt_to_keep", owner: "settings", nullable: true, integer: true},
		{key: "trainer.max_critic_ckpt_to_keep", owner: "settings", nullable: true, integer: true},
	}
	for _, c := range checks {
		if c.cond != nil && !c.cond(v) {
			continue
		}
		x, ok := v.raw(c.key)
		if !ok || (x == nil && c.nullable) || v.reported(c.key) {
			continue
		}
		f, isNum := toFloat(x)
		if !isNum {
			v.errf(c.key, "want a number, found %s", describe(x))
			continue
		}
		if _, isInt := x.(int); c.integer && !isInt {
			v.errf(c.key, "want an integer, found %s", describe(x))
			continue
		}
		if c.owner != "" {
			// The range is the owner's; a YAML .nan or .inf is reported
			// here, in the spelling of the tree.
			if math.IsInf(f, 0) {
				v.errf(c.key, "%s is not finite", flowString(x))
			} else if math.IsNaN(f) {
				v.errf(c.key, "%s is out of range: want a finite number", flowString(x))
			}
			continue
		}
		if math.IsInf(f, 0) {
			v.errf(c.key, "%s is not finite: want %s", flowString(x), rangeText(c))
			continue
		}
		if math.IsNaN(f) || f < c.lo || f > c.hi || (c.loOpen && f == c.lo) || (c.hiOpen && f == c.hi) {
			v.errf(c.key, "%s is out of range: want %s", flowString(x), rangeText(c))
		}
	}
	// Adam betas: two numbers.
	for _, role := range []string{"actor_rollout_ref.actor", "critic"} {
		if x, ok := v.raw(role + ".optim.betas"); ok && x != nil {
			l, isList := x.([]any)
			if !isList || len(l) != 2 {
				v.errf(role+".optim.betas", "want two numbers [beta1, beta2], found %s", describe(x))
				continue
			}
			for i, e := range l { // their range: package settings
				if f, ok := toFloat(e); !ok {
					v.errf(fmt.Sprintf("%s.optim.betas[%d]", role, i), "want a number, found %s", describe(e))
				} else if math.IsNaN(f) || math.IsInf(f, 0) {
					v.errf(fmt.Sprintf("%s.optim.betas[%d]", role, i), "%s is out of range: want a finite number", flowString(e))
				}
			}
		}
	}
	if r, ok := v.intAt("lora.rank", false, false); ok && r > 0 {
		if a, ok := v.floatAt("lora.alpha", false); ok && a <= 0 {
			v.errf("lora.alpha", "must be > 0 when lora.rank=%d, got %g", r, a)
		}
	}
	// vLLM tensor parallelism must divide the GPUs.
	nGPU, nodes := 1, 1
	if n, ok := v.raw("trainer.n_gpus_per_node"); ok {
		if i, isInt := n.(int); isInt && i > 0 {
			nGPU = i
		}
	}
	if n, ok := v.raw("trainer.nnodes"); ok {
		if i, isInt := n.(int); isInt && i > 0 {
			nodes = i
		}
	}
	if tp, ok := v.raw("actor_rollout_ref.rollout.tensor_model_parallel_size"); ok {
		if i, isInt := tp.(int); isInt && i > 0 && (nGPU*nodes)%i != 0 {
			var fits []string
			for d := 1; d <= nGPU*nodes; d++ {
				if (nGPU*nodes)%d == 0 {
					fits = append(fits, strconv.Itoa(d))
				}
			}
			v.errf("actor_rollout_ref.rollout.tensor_model_parallel_size", "%d does not divide the %d GPU(s) (nnodes %d x n_gpus_per_node %d); fitting: %s", i, nGPU*nodes, nodes, nGPU, strings.Join(fits, ", "))
		}
	}
	// The prompt needs room next to the response.
	if ml, ok := v.raw("actor_rollout_ref.rollout.max_model_len"); ok {
		if rl, ok := v.raw("actor_rollout_ref.rollout.response_length"); ok {
			m, ok1 := ml.(int)
			r, ok2 := rl.(int)
			if ok1 && ok2 && m > 0 && r > 0 && m <= r {
				v.warnf("actor_rollout_ref.rollout.max_model_len", "%d leaves no room for the prompt next to response_length=%d", m, r)
			}
		}
	}
}

func rangeText(c rangeCheck) string {
	lo, hi := "<=", "<="
	if c.loOpen {
		lo = "<"
	}
	if c.hiOpen {
		hi = "<"
	}
	switch {
	case math.IsInf(c.hi, 1):
		if c.loOpen {
			return fmt.Sprintf("> %g", c.lo)
		}
		return fmt.Sprintf(">= %g", c.lo)
	}
	return fmt.Sprintf("%g %s x %s %g", c.lo, lo, hi, c.hi)
}
