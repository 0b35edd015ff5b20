package ragen

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"ragen/env"
	"ragen/llm/tokenizer"
)

// memGather is an in-process all-gather among n goroutines (one round at a
// time).
type memGather struct {
	mu    sync.Mutex
	cond  *sync.Cond
	n     int
	round int
	parts [][]byte
	got   int
	done  [][]byte
}

func newMemGather(n int) *memGather {
	g := &memGather{n: n, parts: make([][]byte, n)}
	g.cond = sync.NewCond(&g.mu)
	return g
}

func (g *memGather) shard(rank int) *Shard {
	return &Shard{Rank: rank, Size: g.n, AllGather: func(ctx context.Context, b []byte) ([][]byte, error) {
		g.mu.Lock()
		defer g.mu.Unlock()
		round := g.round
		g.parts[rank] = append([]byte(nil), b...)
		if g.got++; g.got == g.n {
			g.done, g.parts, g.got = g.parts, make([][]byte, g.n), 0
			g.round++
			g.cond.Broadcast()
		}
		for g.round == round {
			g.cond.Wait()
		}
		return g.done, nil
	}}
}

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
		g := newMemGather(n)
		fps := make([]string, n)
		var wg sync.WaitGroup
		for r := range n {
			wg.Add(1)
			go func() { defer wg.Done(); fps[r] = rollouts(g.shard(r)) }()
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
