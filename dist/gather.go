package dist

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"ragen/torch"
)

// AllGatherBytes returns every rank's b, indexed by rank (a small-message
// gather for metadata, metrics and trajectories; it runs two collectives).
func (g *Group) AllGatherBytes(ctx context.Context, b []byte) ([][]byte, error) {
	w := g.Size()
	n, err := torch.From([]int64{int64(len(b))}, 1)
	if err != nil {
		return nil, err
	}
	defer n.Free()
	ns := make([]*torch.Tensor, w)
	for i := range ns {
		if ns[i], err = torch.Zeros([]int64{1}, torch.Int64, torch.CPU); err != nil {
			freeAll(ns)
			return nil, err
		}
	}
	defer freeAll(ns)
	if err := g.AllGather(ctx, ns, n); err != nil {
		return nil, err
	}
	lens := make([]int, w)
	maxLen := 1
	for i, t := range ns {
		v, err := t.Item()
		if err != nil {
			return nil, err
		}
		lens[i] = int(v)
		maxLen = max(maxLen, lens[i])
	}
	buf := make([]byte, maxLen)
	copy(buf, b)
	in, err := torch.FromBytes(buf, torch.Uint8, int64(maxLen))
	if err != nil {
		return nil, err
	}
	defer in.Free()
	flat, err := torch.Zeros([]int64{int64(w * maxLen)}, torch.Uint8, torch.CPU)
	if err != nil {
		return nil, err
	}
	defer flat.Free()
	if err := g.AllGatherFlat(ctx, flat, in); err != nil {
		return nil, err
	}
	all, err := torch.Bytes(flat, torch.Uint8)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, w)
	for i := range out {
		out[i] = all[i*maxLen : i*maxLen+lens[i]]
	}
	return out, nil
}

// AllGatherFloat64s returns every rank's xs, concatenated in rank order
// (ranks may hold different counts).
func (g *Group) AllGatherFloat64s(ctx context.Context, xs []float64) ([]float64, error) {
	b := make([]byte, 8*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
	}
	parts, err := g.AllGatherBytes(ctx, b)
	if err != nil {
		return nil, err
	}
	var out []float64
	for r, p := range parts {
		if len(p)%8 != 0 {
			return nil, fmt.Errorf("dist: rank %d sent %d bytes, not float64s", r, len(p))
		}
		for i := 0; i < len(p); i += 8 {
			out = append(out, math.Float64frombits(binary.LittleEndian.Uint64(p[i:])))
		}
	}
	return out, nil
}

func freeAll(ts []*torch.Tensor) {
	for _, t := range ts {
		t.Free()
	}
}
