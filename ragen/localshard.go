package ragen

import (
	"context"
	"sync"
)

// LocalShards returns the n shards of a data-parallel rollout whose ranks
// run in one process (goroutines, one per rank): their AllGather exchanges
// the ranks' bytes in memory, one round at a time, every rank getting a
// copy of each rank's bytes in rank order. A rank whose ctx ends while it
// waits for the others gets ctx's error.
func LocalShards(n int) []*Shard {
	g := &localGather{n: n, cur: newLocalRound(n)}
	out := make([]*Shard, n)
	for r := range n {
		out[r] = &Shard{Rank: r, Size: n, AllGather: func(ctx context.Context, b []byte) ([][]byte, error) {
			return g.gather(ctx, r, b)
		}}
	}
	return out
}

type localRound struct {
	parts [][]byte
	got   int
	done  chan struct{}
}

func newLocalRound(n int) *localRound {
	return &localRound{parts: make([][]byte, n), done: make(chan struct{})}
}

type localGather struct {
	mu  sync.Mutex
	n   int
	cur *localRound
}

func (g *localGather) gather(ctx context.Context, rank int, b []byte) ([][]byte, error) {
	g.mu.Lock()
	rd := g.cur
	rd.parts[rank] = append([]byte(nil), b...)
	if rd.got++; rd.got == g.n {
		g.cur = newLocalRound(g.n)
		close(rd.done)
	}
	g.mu.Unlock()
	select {
	case <-rd.done:
		out := make([][]byte, len(rd.parts))
		for i, p := range rd.parts {
			out[i] = append([]byte(nil), p...)
		}
		return out, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
