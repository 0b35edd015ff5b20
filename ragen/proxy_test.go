package ragen

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ragen/env"
	"ragen/llm/tokenizer"
)

// walkScript: even env ids answer Right || Right, odd ones Left || Left.
func walkScript(envID, turn int, req GenRequest) (string, error) {
	if envID%2 == 0 {
		return " go </think><answer>Right || Right</answer>", nil
	}
	return " back </think><answer>Left || Left</answer>", nil
}

func TestRolloutEndToEnd(t *testing.T) {
	// 2 groups × 2 envs, seeds 0 and 1 → starts 0,0,1,1 (goal at 4).
	// env0: 0→2→4 (turn 2, success, reward 0 then 1.0); env1: stuck at 0
	// for 5 turns = 10 actions → truncated; env2: 1→3, then 4 after one
	// action (done); env3: 1→0 then stuck, 10 actions.
	cfg := testConfig(2, []string{"Line"}, []int{2})
	cfg.Seed.Train = i64(0)
	a, err := NewAgentProxy(cfg, tokenizer.NewByte(), &testProvider{}, &ScriptedPolicy{Func: walkScript})
	require.NoError(t, err)
	defer a.Close()
	b, err := a.Rollout(context.Background(), env.ModeTrain)
	require.NoError(t, err)
	require.Equal(t, 4, b.Len())
	assert.Equal(t, []int{0, 1, 2, 3}, b.EnvIDs)
	assert.Equal(t, []int{0, 0, 1, 1}, b.GroupIDs)
	var turns []int
	for _, o := range b.Episodes {
		n := 0
		for _, h := range o.History {
			if h.Acted {
				n++
			}
		}
		turns = append(turns, n)
	}
	assert.Equal(t, []int{2, 5, 2, 5}, turns)
	assert.InDelta(t, 0.5, b.Metrics["Line/success"], 1e-12)
	assert.InDelta(t, 1.0, b.Metrics["Line/pass@2"], 1e-12)
	assert.InDelta(t, (4+10+3+10)/4.0, b.Metrics["Line/num_actions"], 1e-12)
	assert.InDelta(t, 1.0, b.Metrics["Line/non-zero/success"], 1e-12)
	assert.Contains(t, b.Metrics, "response_length")
	// Scores: identity normalisation keeps Σ rewards (+ no penalties).
	assert.Equal(t, []float32{1, 0, 1, 0}, b.EpisodeScores)
	L := len(b.InputIDs[0])
	for i := range b.InputIDs {
		require.Len(t, b.InputIDs[i], L)
		require.Len(t, b.Responses[i], L-1)
		require.Len(t, b.LossMask[i], L-1)
		require.Len(t, b.RMScores[i], L-1)
		var s float32
		for _, v := range b.RMScores[i] {
			s += v
		}
		assert.Equal(t, b.EpisodeScores[i], s)
		// Every position that carries a score is trained.
		for j, v := range b.RMScores[i] {
			if v != 0 {
				assert.Equal(t, 1, b.LossMask[i][j])
			}
		}
	}
	// Default (corrected, as issue #6 asks): only the generated text is
	// trained (the two responses plus their <|im_end|>), and the score sits
	// on the column that predicts the last <|im_end|>.
	tok := tokenizer.NewByte()
	trainedText := func(b *Batch) string {
		var trained []int
		for j, m := range b.LossMask[0] {
			if m == 1 {
				trained = append(trained, b.InputIDs[0][j+1])
			}
		}
		return tok.Decode(trained)
	}
	reply := "<think>go</think><answer>Right || Right</answer><|im_end|>"
	assert.Equal(t, reply+reply, trainedText(b))

	// upstream_compat.mask_alignment (spec §3.5): the trained targets run
	// from the token after each assistant <|im_start|> up to and including
	// the first token of the next turn (<|im_start|> of the user turn; after
	// the last reply, the final "\n"), and the score is on column L-2.
	cfg.Compat.MaskAlignment = true
	a2, err := NewAgentProxy(cfg, tokenizer.NewByte(), &testProvider{}, &ScriptedPolicy{Func: walkScript})
	require.NoError(t, err)
	defer a2.Close()
	b2, err := a2.Rollout(context.Background(), env.ModeTrain)
	require.NoError(t, err)
	assert.Equal(t, "assistant\n"+reply+"\n<|im_start|>"+"assistant\n"+reply+"\n", trainedText(b2))
	L2 := len(b2.InputIDs[0])
	assert.Equal(t, float32(1), b2.RMScores[0][L2-2])
}

func batchFingerprint(b *Batch) string {
	var buf bytes.Buffer
	fmt.Fprint(&buf, b.InputIDs, b.LossMask, b.ResponseMask, b.RMScores, b.Messages, b.EnvIDs, b.Metrics)
	return buf.String()
}

func TestPipelinedRolloutMatchesPlain(t *testing.T) {
	run := func(parts int) string {
		cfg := testConfig(3, []string{"Line", "Echo"}, []int{3, 2})
		cfg.AgentProxy.PipelineParts = parts
		// Deterministic but varied: the answer depends on env id and turn.
		script := func(envID, turn int, req GenRequest) (string, error) {
			switch (envID + turn) % 3 {
			case 0:
				return "x </think><answer>Right || yes</answer>", nil
			case 1:
				return "y </think><answer>Left</answer>", nil
			}
			return "no format at all", nil
		}
		a, err := NewAgentProxy(cfg, tokenizer.NewByte(), &testProvider{}, &ScriptedPolicy{Func: script})
		require.NoError(t, err)
		defer a.Close()
		var fp string
		for range 2 { // two rollouts: seeds advance identically
			b, err := a.Rollout(context.Background(), env.ModeTrain)
			require.NoError(t, err)
			fp += batchFingerprint(b)
		}
		return fp
	}
	plain := run(1)
	assert.Equal(t, plain, run(2))
	assert.Equal(t, plain, run(4))
}

func TestRolloutPolicyErrors(t *testing.T) {
	cfg := testConfig(1, []string{"Line"}, []int{2})
	a, err := NewAgentProxy(cfg, tokenizer.NewByte(), &testProvider{}, &ScriptedPolicy{Scripts: map[int][]string{0: {"a"}}})
	require.NoError(t, err)
	_, err = a.Rollout(context.Background(), env.ModeTrain)
	assert.ErrorContains(t, err, "no script for env 1")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	a, err = NewAgentProxy(cfg, tokenizer.NewByte(), &testProvider{}, &ScriptedPolicy{Func: walkScript, Latency: time.Hour})
	require.NoError(t, err)
	_, err = a.Rollout(ctx, env.ModeTrain)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestEvaluateAndExport(t *testing.T) {
	cfg := testConfig(1, []string{"Line", "Echo"}, []int{2, 2})
	script := func(envID, turn int, req GenRequest) (string, error) {
		if envID == 2 {
			return "t </think><answer>yes</answer>", nil
		}
		return "t </think><answer>Right || Right</answer>", nil
	}
	res, err := Evaluate(context.Background(), cfg, &ScriptedPolicy{Func: script}, tokenizer.NewByte(), &testProvider{})
	require.NoError(t, err)
	// Val seeds 123, 124 → Line starts 123%4=3, 124%4=0: both reach the goal
	// (3→4 in one action; 0→2→4). Echo: env 2 says yes (success), env 3
	// says Right (fail).
	assert.Equal(t, map[string]float64{"Line": 1, "Echo": 0.5}, res.Success)

	recs := TrajectoryRecords(res.Batch, ExportOptions{})
	require.Len(t, recs, 4)
	assert.True(t, recs[0].Metadata.Success)
	assert.False(t, TrajectoryRecords(res.Batch, ExportOptions{UpstreamSuccess: true})[0].Metadata.Success)
	var buf bytes.Buffer
	require.NoError(t, WriteJSONL(&buf, recs))
	// every line reads back as the record written
	for i, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		got, err := ParseTrajectoryRecord([]byte(line))
		require.NoError(t, err, "line %d", i)
		want := recs[i]
		assert.Equal(t, want.CustomID, got.CustomID)
		assert.Equal(t, want.Messages, got.Messages)
		assert.Equal(t, want.Metadata.EnvID, got.Metadata.EnvID)
		assert.Equal(t, want.Metadata.NumTurns, got.Metadata.NumTurns)
		assert.Equal(t, want.Metadata.Success, got.Metadata.Success)
		assert.InDelta(t, want.Metadata.TotalReward, got.Metadata.TotalReward, 1e-12)
		assert.Equal(t, len(want.Metadata.Metrics), len(got.Metadata.Metrics))
		for k, v := range want.Metadata.Metrics {
			assert.InDelta(t, v, got.Metadata.Metrics[k], 1e-12, k)
		}
	}
	_, err = ParseTrajectoryRecord([]byte(`{"messages": []}`))
	assert.ErrorContains(t, err, "missing custom_id")
	_, err = ParseTrajectoryRecord([]byte(`{"custom_id": "t", "metadata": {"env_id": "x"}}`))
	assert.ErrorContains(t, err, "metadata.env_id")
	for i, r := range recs {
		require.NoError(t, WriteTrajectoryText(&buf, r), "record %d", i)
	}
	checkGolden(t, "eval_export", buf.String())
}

func TestWritePyString(t *testing.T) {
	// json.dumps("a\"b\\\n\tü€😀<>\x01") == "\"a\\\"b\\\\\\n\\tu00fc...\""
	var b bytes.Buffer
	var sb = new(stringsBuilder)
	writePyString(&sb.Builder, "a\"b\\\n\t\u00fc\u20ac\U0001F600<>\x01\x7f")
	b.WriteString(sb.String())
	assert.Equal(t, `"a\"b\\\n\t\u00fc\u20ac\ud83d\ude00<>\u0001`+"\x7f"+`"`, b.String())
}

// BenchmarkRollout measures trajectories/s of the plain and the pipelined
// loop with a scripted policy that sleeps like a model (2 ms per call +
// 50 µs per request) and envs that take 200 µs per action.
func BenchmarkRollout(b *testing.B) {
	for _, bc := range []struct {
		parts   int
		latency bool
	}{{1, true}, {4, true}, {1, false}} {
		b.Run(fmt.Sprintf("parts=%d/latency=%t", bc.parts, bc.latency), func(b *testing.B) {
			cfg := testConfig(1, []string{"Line"}, []int{32})
			cfg.AgentProxy.PipelineParts = bc.parts
			pol := &ScriptedPolicy{Func: walkScript}
			prov := &testProvider{}
			if bc.latency {
				pol.Latency, pol.PerRequest = 2*time.Millisecond, 50*time.Microsecond
				prov.stepDelay = 200 * time.Microsecond
			}
			a, err := NewAgentProxy(cfg, tokenizer.NewByte(), prov, pol)
			if err != nil {
				b.Fatal(err)
			}
			defer a.Close()
			n := 0
			start := time.Now()
			for b.Loop() {
				bt, err := a.Rollout(context.Background(), env.ModeTrain)
				if err != nil {
					b.Fatal(err)
				}
				n += len(bt.Episodes)
			}
			b.ReportMetric(float64(n)/time.Since(start).Seconds(), "traj/s")
		})
	}
}

func TestDefaultEvalOutputPath(t *testing.T) {
	now := time.Date(2025, 3, 30, 14, 5, 9, 0, time.UTC)
	assert.Equal(t, "results/eval/val_rollouts_20250330_140509.jsonl", DefaultEvalOutputPath(now, "jsonl"))
}
