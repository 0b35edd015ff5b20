package algo

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"

	"ragen/config/rule"
)

// Estimator names (algorithm.adv_estimator).
const (
	EstGAE                       = "gae"
	EstGRPO                      = "grpo"
	EstRLOO                      = "rloo"
	EstReinforcePlusPlus         = "reinforce_plus_plus"
	EstReinforcePlusPlusBaseline = "reinforce_plus_plus_baseline"
	EstReMax                     = "remax"
)

// ErrUnknownEstimator is returned by Estimator for a name it does not know.
var ErrUnknownEstimator = errors.New("algo: unknown advantage estimator")

// AdvantageInput is the batch data an estimator reads. Every matrix is
// (B, T) with T the response width.
type AdvantageInput struct {
	Rewards Mat // token_level_rewards r [B,T]
	Values  Mat // critic values V [B,T] (values·mask); GAE only
	Mask    Mat // response_mask = loss_mask m [B,T], entries 0/1

	// UIDs is the group key of every row (uid = group_ids); needed by grpo,
	// rloo and reinforce_plus_plus_baseline.
	UIDs []int
	// EpisodeIDs is set only in turn-level modes (single_turn,
	// limited_multi_turn): GRPO then counts only the first row of every
	// (uid, episode id) pair in its group statistics. Nil otherwise.
	EpisodeIDs []int
	// RewardBaselines is the per-row ReMax baseline (remax only).
	RewardBaselines []float64
}

// AdvantageConfig holds the algorithm.* knobs the estimators read.
type AdvantageConfig struct {
	Gamma          float64 // γ: algorithm.gamma (1.0)
	Lam            float64 // λ: algorithm.lam (1.0)
	HighLevelGamma float64 // γ_h: algorithm.high_level_gamma (0.95), bi-level GAE only
	BiLevelGAE     bool    // algorithm.bi_level_gae (false): turn-level GAE when the estimator is gae
	// NormAdvByStdInGRPO divides GRPO advantages by the group std
	// (algorithm.norm_adv_by_std_in_grpo, true); false is Dr. GRPO.
	NormAdvByStdInGRPO bool
	GRPOEpsilon        float64 // ε in (s−μ)/(σ+ε) (1e-6)
}

// DefaultAdvantageConfig returns upstream's defaults.
func DefaultAdvantageConfig() AdvantageConfig {
	return AdvantageConfig{Gamma: 1, Lam: 1, HighLevelGamma: 0.95, NormAdvByStdInGRPO: true, GRPOEpsilon: 1e-6}
}

// Validate reports every problem with the configuration at once.
func (c AdvantageConfig) Validate() error {
	var errs []error
	for _, p := range []struct {
		name string
		v    float64
	}{{"gamma", c.Gamma}, {"lam", c.Lam}, {"high_level_gamma", c.HighLevelGamma}} {
		if !(p.v >= 0 && p.v <= 1) {
			errs = append(errs, rule.Errorf("algorithm."+p.name, "%v is out of range: want 0 <= x <= 1", p.v))
		}
	}
	if err := checkFinite("grpo epsilon", c.GRPOEpsilon); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// AdvantageOutput is what an estimator produces.
type AdvantageOutput struct {
	Advantages Mat // A [B,T]
	Returns    Mat // R [B,T] (GRPO-family: equal to Advantages)
	// GroupStd is σ of every row's group (1.0 for singletons); only GRPO
	// sets it. It feeds the soft advantage reweight (PostProcess).
	GroupStd []float64
}

// EstimatorFunc computes advantages and returns from one batch, plus metrics
// (upstream's estimators log none, so the map is empty but never nil).
type EstimatorFunc func(in AdvantageInput, cfg AdvantageConfig) (AdvantageOutput, map[string]float64, error)

var (
	estimatorsMu sync.RWMutex
	estimators   = map[string]EstimatorFunc{
		EstGAE:                       gaeEstimator,
		EstGRPO:                      grpoEstimator,
		EstRLOO:                      rlooEstimator,
		EstReinforcePlusPlus:         rppEstimator,
		EstReinforcePlusPlusBaseline: rppBaselineEstimator,
		EstReMax:                     remaxEstimator,
	}
)

// RegisterEstimator adds a custom advantage estimator under name, which
// algorithm.adv_estimator then selects like a built-in one. The estimator
// gets the batch's token-level rewards, mask, values (when the critic is
// on) and group ids, and returns advantages and returns of the same shape.
// Registering an empty name, a nil function or a name already taken is an
// error.
func RegisterEstimator(name string, f EstimatorFunc) error {
	if name == "" || f == nil {
		return fmt.Errorf("algo: RegisterEstimator needs a name and a function (got %q, nil=%v)", name, f == nil)
	}
	estimatorsMu.Lock()
	defer estimatorsMu.Unlock()
	if _, ok := estimators[name]; ok {
		return fmt.Errorf("algo: estimator %q is already registered", name)
	}
	estimators[name] = f
	return nil
}

// EstimatorNames returns the registered estimator names, sorted.
func EstimatorNames() []string {
	estimatorsMu.RLock()
	defer estimatorsMu.RUnlock()
	names := make([]string, 0, len(estimators))
	for n := range estimators {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Estimator looks up an advantage estimator by its upstream name
// (algorithm.adv_estimator). Unknown names, including upstream's
// unimplemented opo, grpo_passk and gpg, return an error that lists the
// valid names.
func Estimator(name string) (EstimatorFunc, error) {
	estimatorsMu.RLock()
	f, ok := estimators[name]
	estimatorsMu.RUnlock()
	if ok {
		return f, nil
	}
	return nil, fmt.Errorf("%w %q (valid: %s)", ErrUnknownEstimator, name, strings.Join(EstimatorNames(), ", "))
}

// TrainerEstimators lists the estimators the trainer runs: the registry
// (built-in and registered by the program, sorted) less remax, which the
// trainer refuses as upstream's does.
func TrainerEstimators() []string {
	return slices.DeleteFunc(EstimatorNames(), func(n string) bool { return n == EstReMax })
}

// CheckTrainerEstimator returns nil when the trainer runs the estimator
// name, else the problem of algorithm.adv_estimator listing
// TrainerEstimators: an unknown name (with a suggestion), or remax, which
// upstream's trainer refuses ("not tested").
func CheckTrainerEstimator(name string) error {
	const key = "algorithm.adv_estimator"
	valid := strings.Join(TrainerEstimators(), ", ")
	if name == EstReMax {
		return rule.Errorf(key, "remax is not supported by the trainer (upstream's trainer exits: \"not tested\"); valid: %s", valid)
	}
	if _, err := Estimator(name); err != nil {
		return rule.Errorf(key, "unknown advantage estimator %q%s; valid: %s", name, rule.DidYouMean(name, TrainerEstimators()), valid)
	}
	return nil
}

func checkTokenInputs(in AdvantageInput, needValues bool) error {
	names := []string{"rewards", "mask"}
	ms := []Mat{in.Rewards, in.Mask}
	if needValues {
		names = append(names, "values")
		ms = append(ms, in.Values)
	}
	if err := sameShape(names, ms...); err != nil {
		return err
	}
	return checkMask("mask", in.Mask)
}

func gaeEstimator(in AdvantageInput, cfg AdvantageConfig) (AdvantageOutput, map[string]float64, error) {
	if err := cfg.Validate(); err != nil {
		return AdvantageOutput{}, nil, err
	}
	var adv, ret Mat
	var err error
	if cfg.BiLevelGAE {
		adv, ret, err = BiLevelGAE(in.Rewards, in.Values, in.Mask, cfg.Gamma, cfg.Lam, cfg.HighLevelGamma)
	} else {
		adv, ret, err = GAE(in.Rewards, in.Values, in.Mask, cfg.Gamma, cfg.Lam)
	}
	if err != nil {
		return AdvantageOutput{}, nil, err
	}
	return AdvantageOutput{Advantages: adv, Returns: ret}, map[string]float64{}, nil
}

// GAE is veRL's compute_gae_advantage_return. Per row, backward over
// t = T−1…0 with nextV = 0, g = 0:
//
//	δ = r_t + γ·nextV − V_t;  g' = δ + γλ·g
//	nextV = V_t·m_t + (1−m_t)·nextV;  g = g'·m_t + (1−m_t)·g;  A_t = g
//
// so positions with m = 0 (env/user tokens, padding) are skipped and GAE
// runs across the turns of a trajectory. Returns R = A + V (before
// whitening, at every position); A is then whitened over all masked tokens
// of the batch (MaskedWhiten), which needs at least two masked tokens.
func GAE(rewards, values, mask Mat, gamma, lam float64) (adv, returns Mat, err error) {
	if err := checkTokenInputs(AdvantageInput{Rewards: rewards, Values: values, Mask: mask}, true); err != nil {
		return Mat{}, Mat{}, fmt.Errorf("algo: gae: %w", err)
	}
	B, T := rewards.B, rewards.T
	raw := NewMat(B, T)
	returns = NewMat(B, T)
	for i := 0; i < B; i++ {
		r, v, m, a := rewards.Row(i), values.Row(i), mask.Row(i), raw.Row(i)
		nextV, g := 0.0, 0.0
		for t := T - 1; t >= 0; t-- {
			delta := r[t] + gamma*nextV - v[t]
			gNew := delta + gamma*lam*g
			nextV = v[t]*m[t] + (1-m[t])*nextV
			g = gNew*m[t] + (1-m[t])*g
			a[t] = g
		}
		ro := returns.Row(i)
		for t := range ro {
			ro[t] = a[t] + v[t]
		}
	}
	adv, err = MaskedWhiten(raw, mask, true)
	if err != nil {
		return Mat{}, Mat{}, fmt.Errorf("algo: gae: whitening advantages: %w", err)
	}
	return adv, returns, nil
}

// BiLevelGAE is RAGEN's compute_bi_level_gae_advantage_return (turn-level
// GAE), which upstream never reaches (the trainer calls it on veRL's module,
// which lacks it). Per row:
//
// High level: turn ends E = positions with r ≠ 0 (a zero-reward turn end is
// not detected, as upstream). Backward over E with γ_h:
// δ = r_e + γ_h·V_{next e} (0 for the last) − V_e, a_e = δ + γ_h·λ·a_next;
// R_e = a_e + V_e, and r_e is replaced by R_e.
//
// Low level: backward over masked positions; at e ∈ E reset g = 0 and
// nextV = 0, otherwise nextV = V of the next masked position;
// δ = r'_t + γ·nextV − V_t, g = δ + γλg, A_t = g, R_t = g + V_t.
// A masked position after the last turn end has no next masked position:
// upstream raises IndexError there, we use nextV = 0 (end of trajectory).
// Finally A is whitened over the mask. Positions outside the mask keep
// A = 0 and R = 0, except unmasked turn ends, which keep a_e and R_e, as
// upstream.
func BiLevelGAE(rewards, values, mask Mat, gamma, lam, highLevelGamma float64) (adv, returns Mat, err error) {
	if err := checkTokenInputs(AdvantageInput{Rewards: rewards, Values: values, Mask: mask}, true); err != nil {
		return Mat{}, Mat{}, fmt.Errorf("algo: bi-level gae: %w", err)
	}
	B, T := rewards.B, rewards.T
	raw := NewMat(B, T)
	returns = NewMat(B, T)
	upd := make([]float64, T)
	isEnd := make([]bool, T)
	var ends, valid []int
	for i := 0; i < B; i++ {
		r, v, m, a, ro := rewards.Row(i), values.Row(i), mask.Row(i), raw.Row(i), returns.Row(i)
		copy(upd, r)
		ends, valid = ends[:0], valid[:0]
		for t := 0; t < T; t++ {
			isEnd[t] = r[t] != 0
			if isEnd[t] {
				ends = append(ends, t)
			}
			if m[t] != 0 {
				valid = append(valid, t)
			}
		}
		// High level over turn ends.
		g := 0.0
		for k := len(ends) - 1; k >= 0; k-- {
			e := ends[k]
			nextV := 0.0
			if k < len(ends)-1 {
				nextV = v[ends[k+1]]
			}
			delta := upd[e] + highLevelGamma*nextV - v[e]
			g = delta + highLevelGamma*lam*g
			a[e] = g
		}
		for _, e := range ends {
			ro[e] = a[e] + v[e]
			upd[e] = a[e] + v[e]
		}
		// Low level over masked positions.
		g = 0
		for k := len(valid) - 1; k >= 0; k-- {
			t := valid[k]
			nextV := 0.0
			if isEnd[t] {
				g = 0
			} else if k+1 < len(valid) {
				nextV = v[valid[k+1]]
			}
			delta := upd[t] + gamma*nextV - v[t]
			g = delta + gamma*lam*g
			a[t] = g
			ro[t] = g + v[t]
		}
	}
	adv, err = MaskedWhiten(raw, mask, true)
	if err != nil {
		return Mat{}, Mat{}, fmt.Errorf("algo: bi-level gae: whitening advantages: %w", err)
	}
	return adv, returns, nil
}

func checkUIDs(in AdvantageInput) error {
	if in.UIDs == nil {
		return errors.New("algo: this estimator needs UIDs (group ids) for every row")
	}
	return checkRowLen("UIDs", len(in.UIDs), in.Rewards.B)
}

// rowScores returns s_i = Σ_t r_{i,t} over all columns.
func rowScores(r Mat) []float64 {
	s := make([]float64, r.B)
	for i := range s {
		for _, v := range r.Row(i) {
			s[i] += v
		}
	}
	return s
}

func broadcast(per []float64, mask Mat) Mat {
	out := NewMat(mask.B, mask.T)
	for i, a := range per {
		o, m := out.Row(i), mask.Row(i)
		for t := range o {
			o[t] = a * m[t]
		}
	}
	return out
}

// groupStats holds per-uid statistics in order of first appearance.
type groupStats struct {
	n         map[int]int
	mean, std map[int]float64
}

// computeGroupStats gathers the scores of counted rows per uid and returns
// n, mean and unbiased std per group. counted nil means every row counts.
func computeGroupStats(scores []float64, uids []int, counted []bool) groupStats {
	members := map[int][]float64{}
	for i, s := range scores {
		if counted != nil && !counted[i] {
			continue
		}
		members[uids[i]] = append(members[uids[i]], s)
	}
	gs := groupStats{n: map[int]int{}, mean: map[int]float64{}, std: map[int]float64{}}
	for id, xs := range members {
		gs.n[id] = len(xs)
		mu := 0.0
		for _, x := range xs {
			mu += x
		}
		mu /= float64(len(xs))
		gs.mean[id] = mu
		if len(xs) > 1 {
			ss := 0.0
			for _, x := range xs {
				ss += (x - mu) * (x - mu)
			}
			gs.std[id] = math.Sqrt(ss / float64(len(xs)-1))
		}
	}
	return gs
}

func grpoEstimator(in AdvantageInput, cfg AdvantageConfig) (AdvantageOutput, map[string]float64, error) {
	if err := cfg.Validate(); err != nil {
		return AdvantageOutput{}, nil, err
	}
	adv, std, err := GRPO(in.Rewards, in.Mask, in.UIDs, in.EpisodeIDs, cfg.NormAdvByStdInGRPO, cfg.GRPOEpsilon)
	if err != nil {
		return AdvantageOutput{}, nil, err
	}
	return AdvantageOutput{Advantages: adv, Returns: adv.Clone(), GroupStd: std}, map[string]float64{}, nil
}

// GRPO is RAGEN's compute_grpo_outcome_advantage (with episode de-dup).
// s_i = Σ_t r_{i,t}; groups are keyed by uid. When episodeIDs is non-nil only
// the first row of each (uid, episode id) pair enters the group statistics.
// A group with one counted member has μ = 0, σ = 1; otherwise μ is the mean
// and σ the sample std (n−1). A_i = (s_i − μ)/(σ + ε) when normByStd, else
// s_i − μ (Dr. GRPO); every row (duplicates included) is normalised with its
// own score and broadcast as A_{i,t} = A_i·m_{i,t}. A group of identical
// scores has σ = 0 and gives A = 0 (0/ε). groupStd is σ of each row's group.
func GRPO(rewards, mask Mat, uids, episodeIDs []int, normByStd bool, epsilon float64) (adv Mat, groupStd []float64, err error) {
	in := AdvantageInput{Rewards: rewards, Mask: mask, UIDs: uids}
	if err := checkTokenInputs(in, false); err != nil {
		return Mat{}, nil, fmt.Errorf("algo: grpo: %w", err)
	}
	if err := checkUIDs(in); err != nil {
		return Mat{}, nil, fmt.Errorf("algo: grpo: %w", err)
	}
	var counted []bool
	if episodeIDs != nil {
		if err := checkRowLen("EpisodeIDs", len(episodeIDs), rewards.B); err != nil {
			return Mat{}, nil, fmt.Errorf("algo: grpo: %w", err)
		}
		type pair struct{ uid, ep int }
		seen := map[pair]bool{}
		counted = make([]bool, rewards.B)
		for i := range counted {
			p := pair{uids[i], episodeIDs[i]}
			counted[i] = !seen[p]
			seen[p] = true
		}
	}
	scores := rowScores(rewards)
	gs := computeGroupStats(scores, uids, counted)
	per := make([]float64, rewards.B)
	groupStd = make([]float64, rewards.B)
	for i, s := range scores {
		id := uids[i]
		mu, sd := gs.mean[id], gs.std[id]
		if gs.n[id] == 1 {
			mu, sd = 0, 1
		}
		groupStd[i] = sd
		if normByStd {
			per[i] = (s - mu) / (sd + epsilon)
		} else {
			per[i] = s - mu
		}
	}
	return broadcast(per, mask), groupStd, nil
}

func rlooEstimator(in AdvantageInput, cfg AdvantageConfig) (AdvantageOutput, map[string]float64, error) {
	adv, err := RLOO(in.Rewards, in.Mask, in.UIDs)
	if err != nil {
		return AdvantageOutput{}, nil, err
	}
	return AdvantageOutput{Advantages: adv, Returns: adv.Clone()}, map[string]float64{}, nil
}

// RLOO is veRL's compute_rloo_outcome_advantage: per uid group of n rows,
// A_i = s_i·n/(n−1) − μ·n/(n−1) for n > 1 and A_i = s_i for n = 1, broadcast
// as A_i·m.
func RLOO(rewards, mask Mat, uids []int) (Mat, error) {
	in := AdvantageInput{Rewards: rewards, Mask: mask, UIDs: uids}
	if err := checkTokenInputs(in, false); err != nil {
		return Mat{}, fmt.Errorf("algo: rloo: %w", err)
	}
	if err := checkUIDs(in); err != nil {
		return Mat{}, fmt.Errorf("algo: rloo: %w", err)
	}
	scores := rowScores(rewards)
	gs := computeGroupStats(scores, uids, nil)
	per := make([]float64, len(scores))
	for i, s := range scores {
		n := float64(gs.n[uids[i]])
		if n > 1 {
			per[i] = s*n/(n-1) - gs.mean[uids[i]]*n/(n-1)
		} else {
			per[i] = s
		}
	}
	return broadcast(per, mask), nil
}

func rppBaselineEstimator(in AdvantageInput, cfg AdvantageConfig) (AdvantageOutput, map[string]float64, error) {
	adv, err := ReinforcePlusPlusBaseline(in.Rewards, in.Mask, in.UIDs)
	if err != nil {
		return AdvantageOutput{}, nil, err
	}
	return AdvantageOutput{Advantages: adv, Returns: adv.Clone()}, map[string]float64{}, nil
}

// ReinforcePlusPlusBaseline is veRL's
// compute_reinforce_plus_plus_baseline_outcome_advantage: s_i − μ_group
// (singletons: μ = 0), broadcast to every token, ·m, whitened over the
// batch mask, ·m again.
func ReinforcePlusPlusBaseline(rewards, mask Mat, uids []int) (Mat, error) {
	in := AdvantageInput{Rewards: rewards, Mask: mask, UIDs: uids}
	if err := checkTokenInputs(in, false); err != nil {
		return Mat{}, fmt.Errorf("algo: reinforce_plus_plus_baseline: %w", err)
	}
	if err := checkUIDs(in); err != nil {
		return Mat{}, fmt.Errorf("algo: reinforce_plus_plus_baseline: %w", err)
	}
	scores := rowScores(rewards)
	gs := computeGroupStats(scores, uids, nil)
	per := make([]float64, len(scores))
	for i, s := range scores {
		mu := gs.mean[uids[i]]
		if gs.n[uids[i]] == 1 {
			mu = 0
		}
		per[i] = s - mu
	}
	w, err := MaskedWhiten(broadcast(per, mask), mask, true)
	if err != nil {
		return Mat{}, fmt.Errorf("algo: reinforce_plus_plus_baseline: %w", err)
	}
	for k := range w.Data {
		w.Data[k] *= mask.Data[k]
	}
	return w, nil
}

func rppEstimator(in AdvantageInput, cfg AdvantageConfig) (AdvantageOutput, map[string]float64, error) {
	if err := cfg.Validate(); err != nil {
		return AdvantageOutput{}, nil, err
	}
	adv, ret, err := ReinforcePlusPlus(in.Rewards, in.Mask, cfg.Gamma)
	if err != nil {
		return AdvantageOutput{}, nil, err
	}
	return AdvantageOutput{Advantages: adv, Returns: ret}, map[string]float64{}, nil
}

// ReinforcePlusPlus is veRL's compute_reinforce_plus_plus_outcome_advantage
// with gamma passed directly (upstream RAGEN crashes calling it). Backward:
// G = r_t + γ·G; R_t = G; then G ← G·m_t, so the running return resets after
// every position with m = 0 (in multi-turn data earlier turns see no later
// reward). A = whiten(R, m)·m; returns are R unmasked.
func ReinforcePlusPlus(rewards, mask Mat, gamma float64) (adv, returns Mat, err error) {
	if err := checkTokenInputs(AdvantageInput{Rewards: rewards, Mask: mask}, false); err != nil {
		return Mat{}, Mat{}, fmt.Errorf("algo: reinforce_plus_plus: %w", err)
	}
	returns = NewMat(rewards.B, rewards.T)
	for i := 0; i < rewards.B; i++ {
		r, m, ro := rewards.Row(i), mask.Row(i), returns.Row(i)
		g := 0.0
		for t := len(r) - 1; t >= 0; t-- {
			g = r[t] + gamma*g
			ro[t] = g
			g *= m[t]
		}
	}
	adv, err = MaskedWhiten(returns, mask, true)
	if err != nil {
		return Mat{}, Mat{}, fmt.Errorf("algo: reinforce_plus_plus: %w", err)
	}
	for k := range adv.Data {
		adv.Data[k] *= mask.Data[k]
	}
	return adv, returns, nil
}

func remaxEstimator(in AdvantageInput, cfg AdvantageConfig) (AdvantageOutput, map[string]float64, error) {
	adv, ret, err := ReMax(in.Rewards, in.Mask, in.RewardBaselines)
	if err != nil {
		return AdvantageOutput{}, nil, err
	}
	return AdvantageOutput{Advantages: adv, Returns: ret}, map[string]float64{}, nil
}

// ReMax is veRL's compute_remax_outcome_advantage: R_t = Σ_{t'≥t} r·m and
// A = R − b·m with b the per-row baseline reward (upstream's trainer refuses
// remax as "not tested"; the function itself is exposed here).
func ReMax(rewards, mask Mat, baselines []float64) (adv, returns Mat, err error) {
	if err := checkTokenInputs(AdvantageInput{Rewards: rewards, Mask: mask}, false); err != nil {
		return Mat{}, Mat{}, fmt.Errorf("algo: remax: %w", err)
	}
	if baselines == nil {
		return Mat{}, Mat{}, errors.New("algo: remax: needs RewardBaselines for every row")
	}
	if err := checkRowLen("RewardBaselines", len(baselines), rewards.B); err != nil {
		return Mat{}, Mat{}, fmt.Errorf("algo: remax: %w", err)
	}
	returns = NewMat(rewards.B, rewards.T)
	adv = NewMat(rewards.B, rewards.T)
	for i := 0; i < rewards.B; i++ {
		r, m, ro, a := rewards.Row(i), mask.Row(i), returns.Row(i), adv.Row(i)
		s := 0.0
		for t := len(r) - 1; t >= 0; t-- {
			s += r[t] * m[t]
			ro[t] = s
		}
		for t := range a {
			a[t] = ro[t] - baselines[i]*m[t]
		}
	}
	return adv, returns, nil
}
