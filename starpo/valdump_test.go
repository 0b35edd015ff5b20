package starpo

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ragen/env"
	"ragen/ragen"
)

func dumpBatch() *ragen.Batch {
	ep := func(id, group int, state, resp string, success float64) *ragen.EnvOutput {
		return &ragen.EnvOutput{EnvID: id, GroupID: group, Tag: "Bandit",
			History: []ragen.HistoryEntry{{State: state, Acted: true, LLMResponse: resp}, {State: "done"}},
			Metrics: map[string]float64{"Bandit/success": success}}
	}
	return &ragen.Batch{
		Episodes:      []*ragen.EnvOutput{ep(0, 0, "pick", "<answer>Red</answer>", 1), ep(1, 0, "pick", "<answer>Blue</answer>", 0), ep(2, 1, "pick", "x", 0)},
		EpisodeScores: []float32{1, 0, 0.5},
	}
}

func TestGroupRVs(t *testing.T) {
	rv := GroupRVs(dumpBatch(), 7)
	require.Equal(t, []GroupRV{
		{Step: 7, GroupID: 0, Tag: "Bandit", N: 2, RewardMean: 0.5, RewardStd: 0.5},
		{Step: 7, GroupID: 1, Tag: "Bandit", N: 1, RewardMean: 0.5, RewardStd: 0},
	}, rv)
}

func TestDumpValidationOnlyValidationBatches(t *testing.T) {
	dir := t.TempDir()
	inner := func(ctx context.Context, mode env.Mode, opt ragen.RolloutOptions) (*ragen.Batch, error) {
		return dumpBatch(), nil
	}
	step := 3
	r := DumpValidation(inner, dir, 2, func() int { return step })
	_, err := r(context.Background(), env.ModeTrain, ragen.RolloutOptions{})
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(dir, "3.jsonl"))
	require.True(t, os.IsNotExist(err), "training batches are not dumped")
	_, err = r(context.Background(), env.ModeVal, ragen.RolloutOptions{})
	require.NoError(t, err)
	raw, err := os.ReadFile(filepath.Join(dir, "3.jsonl"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	require.Len(t, lines, 2, "limit 2 of 3 episodes")
	require.Equal(t, `{"input":"pick\ndone","output":"<answer>Red</answer>","score":0,"step":3,"tag":"Bandit","env_id":0,"group_id":0,"success":true}`, lines[0])
	// an unwritable folder fails the rollout with the key's name
	bad := DumpValidation(inner, filepath.Join(dir, "3.jsonl", "x"), 0, func() int { return 1 })
	_, err = bad(context.Background(), env.ModeVal, ragen.RolloutOptions{})
	require.ErrorContains(t, err, "validation_data_dir")
}
