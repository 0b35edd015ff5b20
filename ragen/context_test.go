package ragen

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ragen/env"
	"ragen/llm/tokenizer"
)

func newCM(t *testing.T, cfg Config) *ContextManager {
	t.Helper()
	cm, err := NewContextManager(cfg, env.ModeTrain, tokenizer.NewByte(), &testProvider{})
	require.NoError(t, err)
	return cm
}

// Port of upstream tests/llm_agent/test_context_window.py as HEAD behaves:
// max_context_window=2 with the mode unset (full) keeps every turn; the
// windowed behaviour belongs to limited_multi_turn.
func TestContextWindowFullKeepsAllTurns(t *testing.T) {
	cfg := testConfig(1, []string{"Line"}, []int{1})
	cfg.AgentProxy.MaxContextWindow = 2
	m, _ := goldenHistory(t, cfg)
	b, err := newCM(t, cfg).BuildBatch(m.GetRolloutStates())
	require.NoError(t, err)
	require.Len(t, b.Messages, 1)
	all := renderMessages(b.Messages[0])
	for _, s := range []string{"Turn 1:", "Turn 2:", "Turn 3:"} {
		assert.Contains(t, all, s)
	}
	assert.NotContains(t, all, "Turn 4:") // trailing state-only entry dropped

	cfg.AgentProxy.ContextWindowMode = ModeLimitedMultiTurn
	b, err = newCM(t, cfg).BuildBatch(m.GetRolloutStates())
	require.NoError(t, err)
	require.Len(t, b.Messages, 3) // one sample per turn
	last := renderMessages(b.Messages[2])
	assert.NotContains(t, last, "Turn 1:")
	assert.Contains(t, last, "Turn 2:")
	assert.Contains(t, last, "Turn 3:")
	assert.Equal(t, []int{0, 0, 0}, b.EpisodeIDs)
}

// Upstream ctx_manager self-check: full mode gives fewer samples than
// single_turn; every turn-level sample carries the episode score.
func TestSampleCounts(t *testing.T) {
	cfg := testConfig(1, []string{"Line"}, []int{1})
	m, _ := goldenHistory(t, cfg)
	st := m.GetRolloutStates()
	full, err := newCM(t, cfg).BuildBatch(st)
	require.NoError(t, err)
	cfg.AgentProxy.ContextWindowMode = ModeSingleTurn
	single, err := newCM(t, cfg).BuildBatch(st)
	require.NoError(t, err)
	assert.Equal(t, 1, full.Len())
	assert.Equal(t, 3, single.Len())
	// Episode score: rewards 0+0+0, one format penalty (turn 2) = −0.1.
	for i := range single.Len() {
		var s float32
		for _, v := range single.RMScores[i] {
			s += v
		}
		assert.InDelta(t, -0.1, s, 1e-7)
	}
}

func TestTruncation(t *testing.T) {
	cfg := testConfig(1, []string{"Line"}, []int{1})
	m, _ := goldenHistory(t, cfg)
	st := m.GetRolloutStates()
	hist := trainingHistory(st[0].History)
	cm := newCM(t, cfg)
	full := cm.multiTurn("Line", hist, 0, false, false).msgs
	require.Len(t, full, 7) // sys, u1, a1, u2, a2, u3, a3
	// Limit = the length of [sys, a2, u3, a3]: what upstream's first
	// triple drop leaves.
	n, err := cm.countTokens([]tokenizer.Message{full[0], full[4], full[5], full[6]}, false)
	require.NoError(t, err)

	cfg.Rollout.MaxModelLen = n
	cfg.Compat.Truncation = true
	b, err := newCM(t, cfg).BuildBatch(st)
	require.NoError(t, err)
	roles := func(ms []tokenizer.Message) string {
		var r []string
		for _, m := range ms {
			r = append(r, m.Role)
		}
		return strings.Join(r, ",")
	}
	// Upstream: [u1, a1, u2(Reward+Turn 2)] dropped: turn 2's state is
	// lost and the list continues with an assistant message.
	assert.Equal(t, "system,assistant,user,assistant", roles(b.Messages[0]))

	cfg.Compat.Truncation = false
	b, err = newCM(t, cfg).BuildBatch(st)
	require.NoError(t, err)
	ms := b.Messages[0]
	// Sane: pairs dropped, reward lines moved out, parity kept. Dropping
	// turn 1 leaves [sys, u2', a2, u3, a3], still too long, so turn 2 goes
	// too.
	assert.Equal(t, "system,user,assistant", roles(ms))
	assert.True(t, strings.HasPrefix(ms[1].Content, "\nTurn 3:\n"), "%q", ms[1].Content)
	assert.Equal(t, full[0], ms[0]) // the system prompt survives

	// Fits → untouched.
	cfg.Rollout.MaxModelLen = 1 << 20
	b, err = newCM(t, cfg).BuildBatch(st)
	require.NoError(t, err)
	assert.Equal(t, full, b.Messages[0])
}

// Spec §3.7, upstream's loop: `while too long and len(conversation) > 2`
// where conversation is the list after the system message, so a
// too-long [system, user, assistant] stays whole, and a longer one stops
// at two messages after the system message.
func TestCompatTruncationKeepsTwoAfterSystem(t *testing.T) {
	cfg := testConfig(1, []string{"Line"}, []int{1})
	m, _ := goldenHistory(t, cfg)
	st := m.GetRolloutStates()
	cfg.Rollout.MaxModelLen = 10 // nothing fits
	cfg.Compat.Truncation = true
	b, err := newCM(t, cfg).BuildBatch(st)
	require.NoError(t, err)
	var roles []string
	for _, m := range b.Messages[0] {
		roles = append(roles, m.Role)
	}
	// [u1,a1,u2] then a2 dropped: [sys, u3, a3]
	assert.Equal(t, "system,user,assistant", strings.Join(roles, ","))
}

// Spec §3.3: max_context_window 0 is a window of no earlier turns (only a
// negative k is unlimited): a single-turn prompt has no summary, and a
// limited_multi_turn sample is [system, user("")].
func TestContextWindowZero(t *testing.T) {
	cfg := testConfig(1, []string{"Line"}, []int{1})
	cfg.AgentProxy.MaxContextWindow = 0
	cfg.AgentProxy.ContextWindowMode = ModeSingleTurn
	m, _ := goldenHistory(t, cfg)
	st := m.GetRolloutStates()
	cm := newCM(t, cfg)
	p, err := cm.prompt(st[0])
	require.NoError(t, err)
	assert.NotContains(t, p.Text, "Summary:")
	assert.Contains(t, p.Text, "(Turn 4):")
	b, err := cm.BuildBatch(st)
	require.NoError(t, err)
	for _, ms := range b.Messages {
		assert.NotContains(t, renderMessages(ms), "Summary:")
	}

	cfg.AgentProxy.ContextWindowMode = ModeLimitedMultiTurn
	b, err = newCM(t, cfg).BuildBatch(st)
	require.NoError(t, err)
	require.Len(t, b.Messages, 3)
	for _, ms := range b.Messages {
		require.Len(t, ms, 2)
		assert.Equal(t, "user", ms[1].Role)
		assert.Equal(t, "", ms[1].Content)
	}

	cfg.AgentProxy.MaxContextWindow = -1 // unlimited
	cfg.AgentProxy.ContextWindowMode = ModeSingleTurn
	p, err = newCM(t, cfg).prompt(st[0])
	require.NoError(t, err)
	assert.Contains(t, p.Text, "Summary: 3 step(s) completed so far.")
}

// Spec §3.3/§3.5, upstream's fitting of the single-turn window: an
// inference prompt is counted with its forced prefix, a training sample
// with its reply and no generation prompt.
func TestSingleTurnFitCountsWhatIsUsed(t *testing.T) {
	cfg := testConfig(1, []string{"Line"}, []int{1})
	cfg.AgentProxy.ContextWindowMode = ModeSingleTurn
	m, _ := goldenHistory(t, cfg)
	st := m.GetRolloutStates()
	cm := newCM(t, cfg)
	p, err := cm.prompt(st[0])
	require.NoError(t, err)
	require.Contains(t, p.Text, "Summary: 3 step(s)")
	// a limit one token short of the whole prompt (forced prefix included)
	// drops a turn
	n := len(cm.tok.Encode(p.Text))
	cfg.Rollout.MaxModelLen = n - 1
	p2, err := newCM(t, cfg).prompt(st[0])
	require.NoError(t, err)
	assert.Contains(t, p2.Text, "Showing the last 2 turn(s)")
	cfg.Rollout.MaxModelLen = n
	p3, err := newCM(t, cfg).prompt(st[0])
	require.NoError(t, err)
	assert.Equal(t, p.Text, p3.Text)

	// training: turn 2's sample (one earlier turn) counted with its reply
	cfg.Rollout.MaxModelLen = 1 << 20
	b, err := newCM(t, cfg).BuildBatch(st)
	require.NoError(t, err)
	withReply, err := cm.countTokens(b.Messages[1], false)
	require.NoError(t, err)
	require.Contains(t, renderMessages(b.Messages[1]), "Summary: 1 step(s)")
	cfg.Rollout.MaxModelLen = withReply - 1
	b, err = newCM(t, cfg).BuildBatch(st)
	require.NoError(t, err)
	assert.NotContains(t, renderMessages(b.Messages[1]), "Summary:")
	cfg.Rollout.MaxModelLen = withReply
	b, err = newCM(t, cfg).BuildBatch(st)
	require.NoError(t, err)
	assert.Contains(t, renderMessages(b.Messages[1]), "Summary: 1 step(s)")
}

// ragen_filter_raw_scores (overview quirk 8): OriginalRMScores hold the
// scores before reward normalisation; by default (upstream) they copy the
// normalised RMScores.
func TestFilterRawScores(t *testing.T) {
	cfg := testConfig(1, []string{"Line"}, []int{1})
	m, _ := goldenHistory(t, cfg)
	base := m.GetRolloutStates()[0]
	var outs []*EnvOutput
	for i, r := range []float64{1, 3, 2, 2} {
		o := *base
		o.EnvID, o.GroupID, o.Penalty = i, i/2, 0
		o.History = append([]HistoryEntry(nil), base.History...)
		for k := range o.History {
			if o.History[k].Acted {
				o.History[k].Reward = Reward{}
			}
		}
		o.History[0].Reward = Reward{Value: r}
		outs = append(outs, &o)
	}
	sum := func(x []float32) float64 {
		s := 0.0
		for _, v := range x {
			s += float64(v)
		}
		return s
	}
	cfg.AgentProxy.RewardNormalization = RewardNormalizationConfig{Grouping: "state", Method: "mean"}
	b, err := newCM(t, cfg).BuildBatch(outs)
	require.NoError(t, err)
	for i, want := range []float64{-1, 1, 0, 0} {
		assert.InDelta(t, want, sum(b.RMScores[i]), 1e-6)
		assert.InDelta(t, want, sum(b.OriginalRMScores[i]), 1e-6) // upstream: normalised
	}
	cfg.FilterRawScores = true
	b, err = newCM(t, cfg).BuildBatch(outs)
	require.NoError(t, err)
	for i, want := range []float64{1, 3, 2, 2} {
		assert.InDelta(t, []float64{-1, 1, 0, 0}[i], sum(b.RMScores[i]), 1e-6)
		assert.InDelta(t, want, sum(b.OriginalRMScores[i]), 1e-6)
	}
}
