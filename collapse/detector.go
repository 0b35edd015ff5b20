package collapse

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"ragen/internal/pyrand"
)

// Family prefixes (metric names are <family>/<name>).
const (
	FamilyFirstTurn  = "collapse_first_turn_sample"
	FamilyTrajectory = "collapse_trajectory_sample"
)

// Directly logged metric names.
const (
	MetricValidThinkingRate  = "collapse/valid_thinking_rate"
	MetricFirstTurnNumTotal  = "collapse/first_turn_num_total"
	MetricFirstTurnNumValid  = "collapse/first_turn_num_valid"
	MetricFirstTurnValidRate = "collapse/first_turn_valid_rate"
	MetricTimingMultiTurn    = "timing_s/collapse_multi_turn_step"
	MetricTimingFirstTurn    = "timing_s/collapse_first_turn_step"
)

// Rand is the randomness the samplers draw: np.random.randint(n) and
// np.random.permutation(n). *pyrand.Legacy (NumPy's legacy global
// generator) implements it, so a seeded Legacy reproduces upstream's draws.
type Rand interface {
	Intn(n int) int
	Permutation(n int) []int
}

// Batch holds the per-row data the context manager captures for collapse
// detection (collapse.md §2). Token ids are unpadded.
type Batch struct {
	// GroupIDs[r] is row r's group id (required; without it no metric).
	GroupIDs []int
	// FirstTurnPrompts[r], FirstTurnReasoning[r]: the turn-0 prompt and
	// reasoning (reasoning empty when the reply had no think block).
	FirstTurnPrompts   [][]int
	FirstTurnReasoning [][]int
	// AllTurnsPrompts[r][k], AllTurnsReasoning[r][k]: row r's turns with
	// non-empty reasoning, TurnCounts[r] of them.
	AllTurnsPrompts   [][][]int
	AllTurnsReasoning [][][]int
	TurnCounts        []int
	// TurnCountsTotal[r] is the number of row r's turns with a response.
	TurnCountsTotal []int
}

// Result is the outcome of one Compute call.
type Result struct {
	// Metrics are the step's collapse metrics under upstream's names.
	Metrics map[string]float64
	// FamilyErrors holds, per family prefix, why that family produced no
	// metrics (upstream prints such errors and carries on).
	FamilyErrors map[string]error
}

// Detector computes collapse metrics; it keeps the per-family EMA state
// across steps. Safe for concurrent use.
type Detector struct {
	cfg Config
	mu  sync.Mutex
	rng Rand
	ema map[string]EMA
	now func() time.Time
	// stepSeed, when set, reseeds rng at every computing step with
	// NumPy's legacy generator seeded stepSeed+step, so the samples of a
	// step do not depend on earlier steps (exact resume from checkpoints).
	stepSeed *int64
}

// NewDetector validates cfg and returns a detector drawing samples from rng
// (nil: NumPy's legacy generator seeded with 0).
func NewDetector(cfg Config, rng Rand) (*Detector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.normalized()
	if rng == nil {
		l, err := pyrand.NewLegacy(0)
		if err != nil {
			return nil, fmt.Errorf("collapse: %w", err)
		}
		rng = l
	}
	return &Detector{cfg: cfg, rng: rng, ema: map[string]EMA{}, now: time.Now}, nil
}

// NewDetectorPerStep is NewDetector whose samples at step k are drawn from
// NumPy's legacy generator seeded with seed+k. A run resumed from a
// checkpoint (with the EMA state of MarshalState) then computes exactly the
// metrics an uninterrupted run would.
func NewDetectorPerStep(cfg Config, seed int64) (*Detector, error) {
	d, err := NewDetector(cfg, nil)
	if err != nil {
		return nil, err
	}
	d.stepSeed = &seed
	return d, nil
}

// Config returns the detector's configuration.
func (d *Detector) Config() Config { return d.cfg }

// ShouldCompute reports whether step (1-based global step) computes
// metrics: never at step 0, always at step 1, then when step % freq == 0;
// never when both families are off.
func (d *Detector) ShouldCompute(step int) bool {
	if !d.cfg.firstTurn() && !d.cfg.multiTurn() {
		return false
	}
	switch {
	case step == 0:
		return false
	case step == 1:
		return true
	}
	return step%d.cfg.ComputeFreq == 0
}

// EMAState returns the EMA state of a family (zero before its first update).
func (d *Detector) EMAState(family string) EMA {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ema[family]
}

// sample is one (x, z) pair with its column key.
type sample struct {
	prompt, reasoning []int
	key               int
}

// Compute produces the step's collapse metrics from the unfiltered batch,
// scoring cross pairs with s. It returns no metrics when the step is not
// scheduled, the context window mode is not full or the batch has no group
// ids. A family that fails (mismatched prompts within a group, a scorer
// error) is left out and reported in Result.FamilyErrors; errors are
// returned for malformed batches, cancellation, and first-turn data missing
// while nothing else was produced.
func (d *Detector) Compute(ctx context.Context, b Batch, s Scorer, step int) (Result, error) {
	res := Result{Metrics: map[string]float64{}, FamilyErrors: map[string]error{}}
	if !d.ShouldCompute(step) {
		return res, nil
	}
	if d.cfg.ContextWindowMode != ModeFull {
		return res, nil
	}
	if b.GroupIDs == nil {
		return res, nil
	}
	if err := b.check(); err != nil {
		return res, err
	}
	if s == nil {
		return res, errors.New("collapse: no scorer")
	}
	if d.stepSeed != nil {
		l, err := pyrand.NewLegacy(*d.stepSeed + int64(step))
		if err != nil {
			return res, fmt.Errorf("collapse: step %d: %w", step, err)
		}
		d.mu.Lock()
		d.rng = l
		d.mu.Unlock()
	}
	m := res.Metrics
	if b.TurnCountsTotal != nil && b.TurnCounts != nil {
		valid, total := sumInts(b.TurnCounts), sumInts(b.TurnCountsTotal)
		if total > 0 {
			m[MetricValidThinkingRate] = float64(valid) / float64(total)
		}
	}

	var multiTime, firstTime time.Duration
	if d.cfg.multiTurn() && b.AllTurnsPrompts != nil && b.AllTurnsReasoning != nil && b.TurnCounts != nil {
		start := d.now()
		samples := d.sampleTrajectories(b)
		if err := d.family(ctx, FamilyTrajectory, samples, s, &res); err != nil {
			return res, err
		}
		multiTime = d.now().Sub(start)
	}
	if d.cfg.firstTurn() {
		start := d.now()
		if b.FirstTurnPrompts == nil || b.FirstTurnReasoning == nil {
			if len(m) == 0 {
				return res, errors.New("collapse: metrics require first-turn prompt and reasoning ids")
			}
		} else {
			valid := ValidReasoningIndices(b.FirstTurnReasoning)
			total := len(b.FirstTurnReasoning)
			m[MetricFirstTurnNumTotal] = float64(total)
			m[MetricFirstTurnNumValid] = float64(len(valid))
			m[MetricFirstTurnValidRate] = 0
			if total > 0 {
				m[MetricFirstTurnValidRate] = float64(len(valid)) / float64(total)
			}
			samples := d.sampleFirstTurn(b, valid)
			if err := d.family(ctx, FamilyFirstTurn, samples, s, &res); err != nil {
				return res, err
			}
		}
		firstTime = d.now().Sub(start)
	}
	if d.cfg.multiTurn() {
		m[MetricTimingMultiTurn] = multiTime.Seconds()
	}
	if d.cfg.firstTurn() {
		m[MetricTimingFirstTurn] = firstTime.Seconds()
	}
	return res, nil
}

func (b Batch) check() error {
	n := len(b.GroupIDs)
	var errs []error
	lens := []struct {
		name string
		got  int
		set  bool
	}{
		{"FirstTurnPrompts", len(b.FirstTurnPrompts), b.FirstTurnPrompts != nil},
		{"FirstTurnReasoning", len(b.FirstTurnReasoning), b.FirstTurnReasoning != nil},
		{"AllTurnsPrompts", len(b.AllTurnsPrompts), b.AllTurnsPrompts != nil},
		{"AllTurnsReasoning", len(b.AllTurnsReasoning), b.AllTurnsReasoning != nil},
		{"TurnCounts", len(b.TurnCounts), b.TurnCounts != nil},
		{"TurnCountsTotal", len(b.TurnCountsTotal), b.TurnCountsTotal != nil},
	}
	for _, l := range lens {
		if l.set && l.got != n {
			errs = append(errs, fmt.Errorf("collapse: %s has %d rows, GroupIDs has %d", l.name, l.got, n))
		}
	}
	if b.TurnCounts != nil && b.AllTurnsPrompts != nil && b.AllTurnsReasoning != nil && len(errs) == 0 {
		for r, c := range b.TurnCounts {
			if c < 0 || len(b.AllTurnsPrompts[r]) < c || len(b.AllTurnsReasoning[r]) < c {
				errs = append(errs, fmt.Errorf("collapse: row %d: turn count %d, %d prompts, %d reasonings",
					r, c, len(b.AllTurnsPrompts[r]), len(b.AllTurnsReasoning[r])))
			}
		}
	}
	return errors.Join(errs...)
}

// sampleFirstTurn picks num_samples valid rows without replacement
// (np.random.choice(valid, n, replace=False) = permutation(len)[:n]), or all
// valid rows; the column key is the row's group id.
func (d *Detector) sampleFirstTurn(b Batch, valid []int) []sample {
	sel := valid
	if n := int(d.cfg.NumSamples); d.cfg.NumSamples != AllSamples && n < len(valid) {
		d.mu.Lock()
		perm := d.rng.Permutation(len(valid))
		d.mu.Unlock()
		sel = make([]int, n)
		for k := range n {
			sel[k] = valid[perm[k]]
		}
	}
	out := make([]sample, len(sel))
	for k, r := range sel {
		out[k] = sample{b.FirstTurnPrompts[r], b.FirstTurnReasoning[r], b.GroupIDs[r]}
	}
	return out
}

// sampleTrajectories draws n = min(num_samples, Σ turn_counts) times: a row
// uniformly, then (if it has valid turns) one of its turns uniformly, with
// replacement. Every sample is its own column.
func (d *Detector) sampleTrajectories(b Batch) []sample {
	M := len(b.TurnCounts)
	if M == 0 {
		return nil
	}
	n := sumInts(b.TurnCounts)
	if d.cfg.NumSamples != AllSamples {
		n = min(n, int(d.cfg.NumSamples))
	}
	var out []sample
	d.mu.Lock()
	defer d.mu.Unlock()
	for range n {
		m := d.rng.Intn(M)
		if c := b.TurnCounts[m]; c > 0 {
			t := d.rng.Intn(c)
			out = append(out, sample{b.AllTurnsPrompts[m][t], b.AllTurnsReasoning[m][t], len(out)})
		}
	}
	return out
}

// family computes one metric family; data problems and scorer failures are
// recorded in res.FamilyErrors, cancellation is returned.
func (d *Detector) family(ctx context.Context, name string, samples []sample, s Scorer, res *Result) error {
	if len(samples) == 0 {
		return nil
	}
	metrics, err := d.familyMetrics(ctx, name, samples, s)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("collapse: %s: %w", name, ctx.Err())
		}
		res.FamilyErrors[name] = err
		return nil
	}
	for k, v := range PrefixMetrics(name, metrics) {
		res.Metrics[k] = v
	}
	return nil
}

func (d *Detector) familyMetrics(ctx context.Context, name string, samples []sample, s Scorer) (map[string]float64, error) {
	keys := make([]int, 0, len(samples))
	first := map[int]int{} // key → first sample index
	for i, sm := range samples {
		if _, ok := first[sm.key]; !ok {
			first[sm.key] = i
			keys = append(keys, sm.key)
		}
	}
	if len(keys) < 2 {
		return nil, nil
	}
	sort.Ints(keys)
	colOf := make(map[int]int, len(keys))
	prompts := make([][]int, len(keys))
	for j, k := range keys {
		colOf[k] = j
		prompts[j] = samples[first[k]].prompt
	}
	col := make([]int, len(samples))
	reasoning := make([][]int, len(samples))
	for i, sm := range samples {
		j := colOf[sm.key]
		if !slices.Equal(sm.prompt, prompts[j]) {
			return nil, fmt.Errorf("collapse: %s: prompt mismatch within group_id %d: sample %d vs %d", name, sm.key, first[sm.key], i)
		}
		col[i] = j
		reasoning[i] = sm.reasoning
	}
	L, S, err := CrossScores(ctx, s, prompts, reasoning, d.cfg.MicroBatchSize, d.cfg.worldSize())
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	out, next, err := MatrixMetrics(Matrix{L: L, S: S, Col: col, Sig: Signatures(prompts)}, d.cfg.StdEps, d.cfg.EMADecay, d.ema[name])
	if err != nil {
		return nil, err
	}
	d.ema[name] = next
	return out, nil
}

func sumInts(x []int) int {
	s := 0
	for _, v := range x {
		s += v
	}
	return s
}

// FamilyNames lists the family prefixes in the order Compute runs them.
func FamilyNames() []string { return []string{FamilyTrajectory, FamilyFirstTurn} }

// SplitName splits a logged name like "collapse_first_turn_sample/mi_estimate"
// into family and metric; ok is false for other names.
func SplitName(key string) (family, name string, ok bool) {
	for _, f := range FamilyNames() {
		if rest, found := strings.CutPrefix(key, f+"/"); found {
			return f, rest, true
		}
	}
	return "", "", false
}
