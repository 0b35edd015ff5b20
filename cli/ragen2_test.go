package cli

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"ragen/collapse"
	"ragen/config"
	"ragen/env"
	"ragen/llm"
	"ragen/llm/tokenizer"
	"ragen/llmpolicy"
	"ragen/ragen"
	"ragen/track"
)

// The collapse diagnostic as an instrument, on the real machinery: two tiny
// models warmed up on the RAGEN-2 demo's bandit (twelve name pairs in either
// order, one prompt per group), one on reasoning that names the prompt's
// arms ("Teacher or Trader? Trader"), one on three words drawn from
// sixteen that never name anything of the input. Each policy samples its
// own rollout; the collapse detector scores the reasonings with the model
// itself (llm.PrefixScorer, as training does). The input-dependent policy
// must score a clearly higher MI and retrieval accuracy above chance, the
// template policy MI near 0 and retrieval near chance, while the two
// policies' conditional entropies are close: entropy alone does not tell
// the template. The same check must fail when the scorer ignores the
// prompt. About 50 s of SFT per policy on two idle cores.
func TestCollapseMITellsTemplateFromInputDependentReasoning(t *testing.T) {
	ctx := context.Background()
	// the demo's model and warm-up (config/demo_ragen2.yaml); smaller
	// models (hidden 64) did not learn to copy the arm names in 400 steps
	overrides := []string{"es_manager.train.env_groups=16", "es_manager.train.group_size=4",
		"es_manager.train.env_configs.n_groups=[16]", "collapse_detection.num_samples=64"}
	tree := func(style string) *config.Tree {
		tr, _, err := loadTree(append([]string{"--config-name", "demo_ragen2", "sft.thought=" + style}, overrides...), "demo_ragen2")
		require.NoError(t, err)
		return tr
	}
	base := tree(ragen.ThoughtChoices)
	initTorch(base)
	// one tokenizer for both (trained on the demo's own text)
	tok, err := demoTokenizer(ctx, base)
	require.NoError(t, err)
	type policy struct {
		style string
		m     *llm.Model
		batch collapse.Batch
	}
	var pols []*policy
	for _, style := range []string{ragen.ThoughtChoices, ragen.ThoughtTemplates} {
		tr := tree(style)
		mc, err := tinyModelConfig(tr, tok.VocabSize())
		require.NoError(t, err)
		opt, err := modelOptions(tr, "")
		require.NoError(t, err)
		m, err := llm.New(mc, opt) // the same initial weights for both
		require.NoError(t, err)
		defer m.Close()
		_, err = runSFT(ctx, tr, m, tok)
		require.NoError(t, err)
		pols = append(pols, &policy{style: style, m: m, batch: ragen2Rollout(t, tr, m, tok)})
	}
	_, _, _, cc, err := libraryConfigs(base)
	require.NoError(t, err)
	measure := func(blind bool) (dep, tmpl map[string]float64) {
		var out []map[string]float64
		for _, p := range pols {
			var s collapse.Scorer = llm.NewPrefixScorer(p.m, cc.MicroBatchSize, 1)
			if blind {
				s = inputBlind{s: s, prompt: new([]int)}
			}
			d, err := collapse.NewDetectorPerStep(cc, 0)
			require.NoError(t, err)
			res, err := d.Compute(ctx, p.batch, s, 1)
			require.NoError(t, err)
			require.Empty(t, res.FamilyErrors)
			out = append(out, res.Metrics)
			t.Logf("%s (blind scorer %v): %s", p.style, blind, ragen2Summary(res.Metrics))
		}
		return out[0], out[1]
	}
	dep, tmpl := measure(false)
	require.NoError(t, checkTemplateVsDependent(dep, tmpl))
	dep, tmpl = measure(true)
	err = checkTemplateVsDependent(dep, tmpl)
	require.ErrorContains(t, err, "input-dependent policy: MI", "an input-blind scorer must not tell the policies apart")
	t.Logf("input-blind scorer: %v", err)
}

// checkTemplateVsDependent is the test's claim, for both sample families.
// The margins: per-token MI above 0.3 nats against within 0.05 of 0 (a
// sentence that names two of 24 prompts' arms is likely under its own
// prompt and spread over the others; the template's words do not depend on
// the prompt), retrieval above chance by 0.4 against within 0.15 of it (64
// samples over 16 columns). Entropy: both policies' conditional entropy
// H(Z|X) is at least 0.5 nats per token (neither reasons deterministically)
// and the two differ by less than 0.5, while their MI differs by more than
// 0.3: a threshold on entropy cannot tell which one is the template.
func checkTemplateVsDependent(dep, tmpl map[string]float64) error {
	var errs []error
	for _, fam := range []string{collapse.FamilyFirstTurn, collapse.FamilyTrajectory} {
		get := func(m map[string]float64, name string) float64 {
			v, ok := m[fam+"/"+name]
			if !ok {
				errs = append(errs, fmt.Errorf("%s/%s not logged", fam, name))
			}
			return v
		}
		miDep, miTmpl := get(dep, "mi_estimate"), get(tmpl, "mi_estimate")
		aboveDep, aboveTmpl := get(dep, "retrieval_above_chance"), get(tmpl, "retrieval_above_chance")
		hDep, hTmpl := get(dep, "conditional_entropy_est"), get(tmpl, "conditional_entropy_est")
		if !(miDep > 0.3) {
			errs = append(errs, fmt.Errorf("%s: input-dependent policy: MI %.3f, want > 0.3", fam, miDep))
		}
		if !(math.Abs(miTmpl) < 0.05) {
			errs = append(errs, fmt.Errorf("%s: template policy: MI %.3f, want within 0.05 of 0", fam, miTmpl))
		}
		if !(aboveDep > 0.4) {
			errs = append(errs, fmt.Errorf("%s: input-dependent policy: retrieval %.3f above chance, want > 0.4", fam, aboveDep))
		}
		if !(math.Abs(aboveTmpl) < 0.15) {
			errs = append(errs, fmt.Errorf("%s: template policy: retrieval %.3f above chance, want within 0.15", fam, aboveTmpl))
		}
		// the paper's point: entropy does not reveal the template
		if !(hDep >= 0.5 && hTmpl >= 0.5 && math.Abs(hDep-hTmpl) < 0.5) {
			errs = append(errs, fmt.Errorf("%s: H(Z|X) %.3f (input-dependent) and %.3f (template): want both >= 0.5 and within 0.5 of each other", fam, hDep, hTmpl))
		}
		if !(miDep-miTmpl > 0.3) {
			errs = append(errs, fmt.Errorf("%s: MI gap %.3f, want > 0.3", fam, miDep-miTmpl))
		}
	}
	return errors.Join(errs...)
}

func ragen2Summary(m map[string]float64) string {
	s := ""
	for _, fam := range []string{collapse.FamilyFirstTurn, collapse.FamilyTrajectory} {
		s += fmt.Sprintf("[%s MI %.3f (ln N %.2f) retrieval %.3f chance %.3f H(Z|X) %.3f H(Z) %.3f] ", fam,
			m[fam+"/mi_estimate"], m[fam+"/mi_upper_bound"], m[fam+"/retrieval_accuracy"], m[fam+"/retrieval_chance_level"],
			m[fam+"/conditional_entropy_est"], m[fam+"/reasoning_entropy_est"])
	}
	return s
}

// inputBlind scores every reasoning under the first prompt it was ever
// given: a scorer that ignores the input.
type inputBlind struct {
	s      collapse.Scorer
	prompt *[]int
}

func (b inputBlind) ScoreReasoning(ctx context.Context, pairs []collapse.Pair) ([]collapse.Score, error) {
	if *b.prompt == nil && len(pairs) > 0 {
		*b.prompt = pairs[0].Prompt
	}
	fixed := make([]collapse.Pair, len(pairs))
	for i, p := range pairs {
		fixed[i] = collapse.Pair{Prompt: *b.prompt, Reasoning: p.Reasoning}
	}
	return b.s.ScoreReasoning(ctx, fixed)
}

// ragen2Rollout samples one training rollout of m (rollout temperature,
// fixed seed) with the collapse data, as the trainer's collapse step sees it.
func ragen2Rollout(t *testing.T, tr *config.Tree, m *llm.Model, tok tokenizer.Tokenizer) collapse.Batch {
	t.Helper()
	rc, err := rolloutConfig(tr)
	require.NoError(t, err)
	proxy, err := ragen.NewAgentProxy(rc, tok, ragen.DefaultProvider(), llmpolicy.New(m, tok, llmpolicy.Options{Seed: 5}))
	require.NoError(t, err)
	defer proxy.Close()
	seed := int64(1000)
	b, err := proxy.RolloutWith(context.Background(), env.ModeTrain, ragen.RolloutOptions{Seed: &seed, Collapse: true})
	require.NoError(t, err)
	require.NotNil(t, b.Collapse)
	gids := make([]int, len(b.Episodes))
	for i, e := range b.Episodes {
		gids[i] = e.GroupID
	}
	c := b.Collapse
	return collapse.Batch{GroupIDs: gids, FirstTurnPrompts: c.FirstTurnPromptIDs, FirstTurnReasoning: c.FirstTurnReasoningIDs,
		AllTurnsPrompts: c.AllTurnsPromptIDs, AllTurnsReasoning: c.AllTurnsReasoningIDs,
		TurnCounts: c.TurnCounts, TurnCountsTotal: c.TurnCountsTotal}
}

// The demo's flags: --quick and --out map to overrides; the swept key and
// unknown flags are errors that say why.
func TestDemoRagen2Args(t *testing.T) {
	rest, out, err := demoRagen2Args([]string{"--quick", "--out", "x", "sft.steps=7"})
	require.NoError(t, err)
	require.Equal(t, "x", out)
	require.Equal(t, "sft.steps=7", rest[len(rest)-1], "the user's overrides come last and win")
	_, _, err = demoRagen2Args([]string{ragen2FilterKey + "=0.5"})
	require.ErrorContains(t, err, "is the demo's sweep (1.0 and 0.9)")
	_, _, err = demoRagen2Args([]string{"--fast"})
	require.ErrorContains(t, err, "unknown flag --fast")
}

// The figure and the table read both arms' metrics: one panel per chart
// with a line per arm, and a table row per step that computed the collapse
// metrics or validated.
func TestRagen2FigureAndTable(t *testing.T) {
	dir := t.TempDir()
	arm := func(name string, kept float64) ragen2Run {
		var recs []track.Record
		for s := 1; s <= 4; s++ {
			d := map[string]float64{"train/B/success": 0.1 * float64(s), "rollout/in_group_reward_std": 0.3, "rollout/filter_kept_ratio": kept}
			if s%2 == 0 {
				d["collapse_first_turn_sample/mi_estimate"] = 1 - 0.1*float64(s)
				d["collapse_first_turn_sample/retrieval_accuracy"] = 0.8
				d["collapse_first_turn_sample/retrieval_chance_level"] = 0.1
				d["collapse_first_turn_sample/conditional_entropy_est"] = 1.2
				d["collapse_first_turn_sample/reasoning_entropy_est"] = 2.0
			}
			recs = append(recs, track.Record{Step: s, Data: d})
		}
		return ragen2Run{Name: name, Dir: name, Records: recs}
	}
	arms := []ragen2Run{arm("no filter", 1), arm("top_p 0.9", 0.75)}
	fig, err := ragen2Figure(arms, dir)
	require.NoError(t, err)
	require.FileExists(t, fig)
	for _, c := range ragen2Charts {
		require.FileExists(t, filepath.Join(dir, "ragen2_plots", c.name+".png"))
	}
	tab := ragen2Table(arms)
	require.Contains(t, tab, "### top_p 0.9")
	require.Contains(t, tab, "| 4 | 0.400 | | 0.300 | 0.750 | 0.600 |")
	require.NotContains(t, tab, "| 3 |", "step 3 computed no collapse metrics")
	_, err = ragen2Figure([]ragen2Run{{Name: "empty"}}, dir)
	require.ErrorContains(t, err, "logged none of the figure's metrics")
}
