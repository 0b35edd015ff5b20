package ragen

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ragen/env"
	"ragen/llm/tokenizer"
)

// seededScript answers at random from the request's own stream, as a
// sampling model would.
func seededScript(envID, turn int, req GenRequest) (string, error) {
	if !req.Seeded {
		return "", fmt.Errorf("env %d turn %d: request without a stream seed", envID, turn)
	}
	switch rand.New(rand.NewPCG(req.Seed, 1)).IntN(4) {
	case 0:
		return "x </think><answer>Right || yes</answer>", nil
	case 1:
		return "y </think><answer>Left</answer>", nil
	case 2:
		return "z </think><answer>Right</answer>", nil
	}
	return "no format at all", nil
}

func shardFingerprint(b *Batch) string {
	return batchFingerprint(b) + fmt.Sprint(b.GroupIDs, b.EpisodeScores, len(b.Episodes))
}

// Env groups split over 2 and 3 ranks (and more ranks than groups) give
// every rank the batch one process rolls out, for two successive rollouts.
func TestShardedRolloutMatchesOneProcess(t *testing.T) {
	cfg := testConfig(3, []string{"Line", "Echo"}, []int{3, 2})
	rollouts := func(sh *Shard) string {
		a, err := NewAgentProxy(cfg, tokenizer.NewByte(), &testProvider{}, &ScriptedPolicy{Func: seededScript})
		require.NoError(t, err)
		defer a.Close()
		var fp string
		for range 2 {
			b, err := a.RolloutWith(context.Background(), env.ModeTrain, RolloutOptions{Shard: sh})
			if err != nil {
				return "error: " + err.Error()
			}
			fp += shardFingerprint(b)
		}
		return fp
	}
	one := rollouts(nil)
	for _, n := range []int{1, 2, 3, 7} {
		shards := LocalShards(n)
		fps := make([]string, n)
		var wg sync.WaitGroup
		for r := range n {
			wg.Add(1)
			go func() { defer wg.Done(); fps[r] = rollouts(shards[r]) }()
		}
		wg.Wait()
		for r, fp := range fps {
			require.Equal(t, one, fp, "world %d rank %d", n, r)
		}
	}
	// the streams differ per env and turn, and the answers depend on them
	require.NotEqual(t, StreamSeed(env.ModeTrain, 0, 0, 0), StreamSeed(env.ModeTrain, 0, 1, 0))
	require.NotEqual(t, StreamSeed(env.ModeTrain, 0, 0, 0), StreamSeed(env.ModeTrain, 0, 0, 1))
	require.NotEqual(t, StreamSeed(env.ModeTrain, 0, 0, 0), StreamSeed(env.ModeVal, 0, 0, 0))
}

func TestShardOwnsContiguousBlocks(t *testing.T) {
	for _, c := range []struct{ groups, size int }{{5, 2}, {5, 3}, {2, 3}, {8, 4}} {
		owner := make([]int, c.groups)
		for g := range owner {
			owner[g] = -1
			for r := range c.size {
				if (&Shard{Rank: r, Size: c.size}).owns(g, c.groups) {
					require.Equal(t, -1, owner[g], "group %d owned twice", g)
					owner[g] = r
				}
			}
			require.NotEqual(t, -1, owner[g], "group %d unowned", g)
			if g > 0 {
				require.GreaterOrEqual(t, owner[g], owner[g-1])
			}
		}
	}
	_, err := (&AgentProxy{}).RolloutWith(context.Background(), env.ModeTrain, RolloutOptions{Shard: &Shard{Rank: 2, Size: 2}})
	require.Error(t, err)
	require.ErrorContains(t, (&Shard{Rank: 0, Size: 2}).validate(), "AllGather")
	require.ErrorContains(t, (&Shard{Rank: 2, Size: 2}).validate(), "rank 2 of 2")
}

// LocalShards: every rank gets every rank's bytes in rank order, round
// after round; a rank waiting for absent peers returns when its ctx ends.
func TestLocalShards(t *testing.T) {
	sh := LocalShards(3)
	for round := range 2 {
		got := make([][][]byte, 3)
		var wg sync.WaitGroup
		for r := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var err error
				got[r], err = sh[r].AllGather(context.Background(), []byte{byte(10*round + r)})
				if err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		for r := range 3 {
			if fmt.Sprint(got[r]) != fmt.Sprint([][]byte{{byte(10 * round)}, {byte(10*round + 1)}, {byte(10*round + 2)}}) {
				t.Fatalf("round %d rank %d: %v", round, r, got[r])
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := LocalShards(2)[0].AllGather(ctx, []byte{1}); err != context.DeadlineExceeded {
		t.Fatalf("a rank alone: %v, want the deadline", err)
	}
}
