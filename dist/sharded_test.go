package dist

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"ragen/torch"
)

func init() { workers["sharded"] = shardedWorker }

// A tiny two-layer model: y = tanh(x·A + b)·B + c, squared error against t,
// over N rows. 39 parameter elements: shards pad for 2 and 3 ranks.
const (
	shN, shIn, shHid, shOut = 12, 5, 4, 3
	shSteps                 = 6
	shLR, shClip            = 0.05, 0.5
)

func shData() (x, tgt []float32, init [][]float32) {
	r := rand.New(rand.NewPCG(7, 11))
	f := func(n int, scale float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64() * scale)
		}
		return v
	}
	x, tgt = f(shN*shIn, 1), f(shN*shOut, 1)
	init = [][]float32{f(shIn*shHid, 0.5), f(shHid, 0.1), f(shHid*shOut, 0.5), f(shOut, 0.1)}
	return
}

func shParams(init [][]float32) ([]*torch.Tensor, error) {
	shapes := [][]int64{{shIn, shHid}, {shHid}, {shHid, shOut}, {shOut}}
	var ps []*torch.Tensor
	for i, v := range init {
		p, err := torch.From(v, shapes[i]...)
		if err != nil {
			return nil, err
		}
		if err := p.SetRequiresGrad(true); err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// shBackward accumulates the gradient of sum over rows of squared error / N.
func shBackward(ps []*torch.Tensor, x, tgt []float32, rows []int) error {
	return shBackwardOn(ps, x, tgt, rows, torch.CPU)
}

func shBackwardOn(ps []*torch.Tensor, x, tgt []float32, rows []int, dev torch.Device) error {
	return withScope(func(s *torch.Scope) error {
		var xs, ts []float32
		for _, i := range rows {
			xs = append(xs, x[i*shIn:(i+1)*shIn]...)
			ts = append(ts, tgt[i*shOut:(i+1)*shOut]...)
		}
		X := s.To(s.Own(torch.From(xs, int64(len(rows)), shIn)), torch.Float32, dev)
		T := s.To(s.Own(torch.From(ts, int64(len(rows)), shOut)), torch.Float32, dev)
		h := s.Tanh(s.Add(s.MatMul(X, ps[0]), ps[1]))
		y := s.Add(s.MatMul(h, ps[2]), ps[3])
		loss := s.DivS(s.Sum(s.Square(s.Sub(y, T)), false), shN)
		if s.Err() != nil {
			return s.Err()
		}
		return loss.Backward(nil)
	})
}

func flatValues(ps []*torch.Tensor) ([]float32, error) {
	var out []float32
	for _, p := range ps {
		v, err := torch.Data[float32](p)
		if err != nil {
			return nil, err
		}
		out = append(out, v...)
	}
	return out, nil
}

type shReport struct {
	Params     []float32
	Norms      []float64
	StateBytes int64
	Shard      int64
}

func shardedWorker() error {
	g, err := fromEnvInit()
	if err != nil {
		return err
	}
	defer g.Close()
	ctx := context.Background()
	x, tgt, init := shData()
	if g.Rank() != 0 { // rank 0's values must win the initial broadcast
		for _, v := range init {
			for i := range v {
				v[i] = 99
			}
		}
	}
	ps, err := shParams(init)
	if err != nil {
		return err
	}
	cfg := torch.DefaultAdamW()
	opt, err := NewShardedAdamW(ctx, g, ps, cfg)
	if err != nil {
		return err
	}
	defer opt.Close()
	opt.GradReduce = Sum
	var rows []int
	for i := g.Rank(); i < shN; i += g.Size() {
		rows = append(rows, i)
	}
	rep := shReport{StateBytes: opt.StateBytes(), Shard: opt.ShardElems()}
	for step := 0; step < shSteps; step++ {
		if err := torch.ZeroGrad(ps); err != nil {
			return err
		}
		if err := shBackward(ps, x, tgt, rows); err != nil {
			return err
		}
		n, err := opt.Step(ctx, shLR, shClip)
		if err != nil {
			return err
		}
		rep.Norms = append(rep.Norms, n)
	}
	if rep.Params, err = flatValues(ps); err != nil {
		return err
	}
	b, _ := json.Marshal(rep)
	return os.WriteFile(filepath.Join(os.Getenv("RAGEN_DIST_TEST_OUT"), fmt.Sprintf("rank%d.json", g.Rank())), b, 0o644)
}

// TestShardedAdamWEqualsAdamW: 2 and 3 ranks, each with its share of the
// rows, end with the same parameters and gradient norms as one process
// running torch.AdamW + ClipGradNorm over all rows (float32; tolerance 2e-6
// absolute: the sums differ only in order), and keep 1/W of the state.
func TestShardedAdamWEqualsAdamW(t *testing.T) {
	x, tgt, init := shData()
	ps, err := shParams(init)
	if err != nil {
		t.Fatal(err)
	}
	opt, err := torch.NewAdamW(ps, torch.DefaultAdamW())
	if err != nil {
		t.Fatal(err)
	}
	defer opt.Close()
	all := make([]int, shN)
	for i := range all {
		all[i] = i
	}
	var norms []float64
	for step := 0; step < shSteps; step++ {
		if err := torch.ZeroGrad(ps); err != nil {
			t.Fatal(err)
		}
		if err := shBackward(ps, x, tgt, all); err != nil {
			t.Fatal(err)
		}
		n, err := torch.ClipGradNorm(ps, shClip)
		if err != nil {
			t.Fatal(err)
		}
		norms = append(norms, n)
		if err := opt.Step(shLR); err != nil {
			t.Fatal(err)
		}
	}
	want, err := flatValues(ps)
	if err != nil {
		t.Fatal(err)
	}
	if norms[0] <= shClip {
		t.Fatalf("first gradient norm %g does not exercise clipping at %g", norms[0], shClip)
	}
	for _, w := range []int{2, 3} {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			out := t.TempDir()
			wantAllOK(t, spawn(t, w, "sharded", 60*time.Second, "RAGEN_DIST_TEST_OUT="+out))
			for r := 0; r < w; r++ {
				b, err := os.ReadFile(filepath.Join(out, fmt.Sprintf("rank%d.json", r)))
				if err != nil {
					t.Fatal(err)
				}
				var rep shReport
				if err := json.Unmarshal(b, &rep); err != nil {
					t.Fatal(err)
				}
				worst := 0.0
				for i := range want {
					worst = max(worst, math.Abs(float64(rep.Params[i]-want[i])))
				}
				if worst > 2e-6 {
					t.Errorf("rank %d: max |param - single-process AdamW| = %g > 2e-6", r, worst)
				}
				for i := range norms {
					if math.Abs(rep.Norms[i]-norms[i]) > 1e-5*norms[i] {
						t.Errorf("rank %d step %d: grad norm %g, single process %g", r, i, rep.Norms[i], norms[i])
					}
				}
				if wantShard := int64((39 + w - 1) / w); rep.Shard != wantShard || rep.StateBytes != 3*4*wantShard {
					t.Errorf("rank %d: shard %d elems, %d state bytes; want %d, %d", r, rep.Shard, rep.StateBytes, wantShard, 3*4*wantShard)
				}
				if r == 0 {
					t.Logf("world %d: max |diff| %g, optimizer state %d B/rank (single process: %d B)", w, worst, rep.StateBytes, 3*4*39)
				}
			}
		})
	}
}

// One rank (no collectives on the update path) equals torch.AdamW too.
func TestShardedAdamWOneRank(t *testing.T) {
	g, err := Init(context.Background(), Config{WorldSize: 1, MasterPort: freePort(t), Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	x, tgt, init := shData()
	all := make([]int, shN)
	for i := range all {
		all[i] = i
	}
	ref, err := shParams(init)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := shParams(init)
	if err != nil {
		t.Fatal(err)
	}
	ro, err := torch.NewAdamW(ref, torch.DefaultAdamW())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	so, err := NewShardedAdamW(context.Background(), g, ps, torch.DefaultAdamW())
	if err != nil {
		t.Fatal(err)
	}
	defer so.Close()
	for step := 0; step < 3; step++ {
		for _, q := range [][]*torch.Tensor{ref, ps} {
			if err := torch.ZeroGrad(q); err != nil {
				t.Fatal(err)
			}
			if err := shBackward(q, x, tgt, all); err != nil {
				t.Fatal(err)
			}
		}
		n1, err := torch.ClipGradNorm(ref, shClip)
		if err != nil {
			t.Fatal(err)
		}
		if err := ro.Step(shLR); err != nil {
			t.Fatal(err)
		}
		n2, err := so.Step(context.Background(), shLR, shClip)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(n1-n2) > 1e-6*n1 {
			t.Errorf("step %d: norm %g vs %g", step, n2, n1)
		}
	}
	a, _ := flatValues(ref)
	b, _ := flatValues(ps)
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > 2e-6 {
			t.Fatalf("param %d: %g vs torch.AdamW %g", i, b[i], a[i])
		}
	}
}
