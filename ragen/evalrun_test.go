package ragen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ragen/env"
	"ragen/llm/tokenizer"
)

func rightScript(envID, turn int, req GenRequest) (string, error) {
	return " go </think><answer>Right || Right</answer>", nil
}

// Chunked, streamed evaluation writes what one rollout of the whole set
// would: same seeds, env and group ids, records and order.
func TestEvaluateStreamMatchesOneRollout(t *testing.T) {
	cfg := testConfig(2, []string{"Line", "Echo"}, []int{5, 3})
	cfg.Seed.Val = i64(7)
	res, err := Evaluate(context.Background(), cfg, &ScriptedPolicy{Func: rightScript}, tokenizer.NewByte(), &testProvider{})
	require.NoError(t, err)
	var want bytes.Buffer
	require.NoError(t, WriteJSONL(&want, TrajectoryRecords(res.Batch, ExportOptions{})))

	var got bytes.Buffer
	var progress []int
	sum, err := EvaluateStream(context.Background(), cfg, tokenizer.NewByte(), &testProvider{},
		func(func(int) env.BaseEnv) (Policy, error) { return &ScriptedPolicy{Func: rightScript}, nil }, &got,
		EvalOptions{ChunkGroups: 2, Progress: func(done, total, failed int) { progress = append(progress, done) }})
	require.NoError(t, err)
	assert.Equal(t, want.String(), got.String())
	assert.Equal(t, 16, sum.Episodes)
	assert.Equal(t, 0, sum.Failed)
	assert.Equal(t, []int{4, 8, 10, 14, 16}, progress, "Line 2+2+1 groups, Echo 2+1, 2 envs each")
	assert.InDelta(t, res.Metrics["Line/success"], sum.Metrics["Line/success"], 1e-12)
	assert.InDelta(t, res.Metrics["Echo/success"], sum.Metrics["Echo/success"], 1e-12)
}

// partialPolicy fails (per request) every request of chunk-local env 1.
type partialPolicy struct{ calls int }

func (p *partialPolicy) Generate(ctx context.Context, reqs []GenRequest) ([]Generation, error) {
	panic("EvaluateStream must use GenerateEach")
}

func (p *partialPolicy) GenerateEach(ctx context.Context, reqs []GenRequest) ([]Generation, []error) {
	p.calls++
	out, errs := make([]Generation, len(reqs)), make([]error, len(reqs))
	for i, r := range reqs {
		if r.EnvID == 1 {
			errs[i] = errors.New(`finish reason "length"`)
			continue
		}
		out[i] = Generation{Text: " go </think><answer>Right || Right</answer>"}
	}
	return out, errs
}

// One bad reply fails one episode, recorded with its reason; the run goes
// on up to the failure budget, and what finished stays written.
func TestEvaluateStreamFailedEpisodes(t *testing.T) {
	cfg := testConfig(2, []string{"Line"}, []int{5})
	newP := func(func(int) env.BaseEnv) (Policy, error) { return &partialPolicy{}, nil }
	var out bytes.Buffer
	sum, err := EvaluateStream(context.Background(), cfg, tokenizer.NewByte(), &testProvider{}, newP, &out, EvalOptions{ChunkGroups: 2, MaxFailures: -1})
	require.NoError(t, err)
	assert.Equal(t, 10, sum.Episodes)
	assert.Equal(t, 3, sum.Failed, "local env 1 of each of the 3 chunks")
	assert.Equal(t, map[string]int{`finish reason "length"`: 3}, sum.Failures)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 10)
	for i, l := range lines {
		failed := strings.Contains(l, `"failure": `)
		assert.Equal(t, i == 1 || i == 5 || i == 9, failed, "line %d: %s", i, l)
		assert.Contains(t, l, fmt.Sprintf(`"custom_id": "traj_%d"`, i))
	}
	assert.Equal(t, 1.0, sum.Metrics["Line/success"], "failed episodes are left out of the metrics")

	out.Reset()
	sum, err = EvaluateStream(context.Background(), cfg, tokenizer.NewByte(), &testProvider{}, newP, &out, EvalOptions{ChunkGroups: 2, MaxFailures: 1})
	require.ErrorIs(t, err, ErrFailureBudget)
	assert.Contains(t, err.Error(), "2 episodes failed (max_failures 1)")
	assert.Equal(t, 8, sum.Episodes, "two chunks written before the budget ran out")
	assert.Equal(t, 8, strings.Count(out.String(), "\n"))
}

// A policy without per-request errors fails the requests of its call; an
// env error fails its chunk; neither stops the run.
func TestEvaluateStreamWholeCallAndEnvErrors(t *testing.T) {
	cfg := testConfig(1, []string{"Line"}, []int{4})
	calls := 0
	newP := func(func(int) env.BaseEnv) (Policy, error) {
		return &ScriptedPolicy{Func: func(envID, turn int, req GenRequest) (string, error) {
			if turn == 1 && envID == 0 {
				calls++
				return "", errors.New("server said no")
			}
			return " go </think><answer>Left</answer>", nil
		}}, nil
	}
	var out bytes.Buffer
	sum, err := EvaluateStream(context.Background(), cfg, tokenizer.NewByte(), &testProvider{}, newP, &out, EvalOptions{ChunkGroups: 2, MaxFailures: -1})
	require.NoError(t, err)
	assert.Equal(t, 4, sum.Episodes)
	assert.Equal(t, 4, sum.Failed, "both envs of each call failed at turn 1")
	for r := range sum.Failures {
		assert.Contains(t, r, "server said no")
	}
}

// Cancelling keeps the finished chunks and says the run was interrupted.
func TestEvaluateStreamInterrupted(t *testing.T) {
	cfg := testConfig(2, []string{"Line"}, []int{6})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out bytes.Buffer
	sum, err := EvaluateStream(ctx, cfg, tokenizer.NewByte(), &testProvider{},
		func(func(int) env.BaseEnv) (Policy, error) { return &ScriptedPolicy{Func: rightScript}, nil }, &out,
		EvalOptions{ChunkGroups: 2, Progress: func(done, total, failed int) { cancel() }})
	require.ErrorIs(t, err, context.Canceled)
	assert.True(t, sum.Interrupted)
	assert.Equal(t, 4, sum.Episodes)
	assert.Equal(t, 4, strings.Count(out.String(), "\n"))
	assert.Contains(t, err.Error(), "interrupted after 4 of 12 episodes")
}

// stuckEnv's Close blocks until released (a dead server with long retries).
type stuckEnv struct {
	echoEnv
	release chan struct{}
}

func (e *stuckEnv) Close() error { <-e.release; return nil }

// ctxEnv closes through CloseContext; it sends whether the context had a
// deadline on saw (buffered) before it waits.
type ctxEnv struct {
	echoEnv
	saw chan bool
}

func (e *ctxEnv) CloseContext(ctx context.Context) error {
	_, ok := ctx.Deadline()
	e.saw <- ok
	<-ctx.Done()
	return ctx.Err()
}

// Closing is parallel and ends with ctx, however long envs take.
func TestCloseEnvsHonoursDeadline(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	envs := []env.BaseEnv{&stuckEnv{release: release}, &stuckEnv{release: release}, &echoEnv{}, &ctxEnv{saw: make(chan bool, 1)}}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := CloseEnvs(ctx, envs)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "3 of 4 envs still closing")
	select {
	case ok := <-envs[3].(*ctxEnv).saw:
		assert.True(t, ok, "CloseContext got the deadline")
	case <-time.After(10 * time.Second):
		t.Fatal("CloseContext was not called")
	}
	require.NoError(t, CloseEnvs(context.Background(), []env.BaseEnv{&echoEnv{}, &echoEnv{}}))
}
