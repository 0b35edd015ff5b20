package dist

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ragen/torch"
)

func init() {
	workers["collectives"] = collectivesWorker
	workers["lost"] = lostWorker
	workers["stuck"] = stuckWorker
}

func vals(t *torch.Tensor) []float64 {
	c, err := torch.Data[float32](t)
	if err != nil {
		panic(err)
	}
	out := make([]float64, len(c))
	for i, x := range c {
		out[i] = float64(x)
	}
	return out
}

func same(got []float64, want ...float64) error {
	if len(got) != len(want) {
		return fmt.Errorf("got %v, want %v", got, want)
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > 1e-5 {
			return fmt.Errorf("got %v, want %v", got, want)
		}
	}
	return nil
}

func f32(xs ...float64) *torch.Tensor {
	v := make([]float32, len(xs))
	for i, x := range xs {
		v[i] = float32(x)
	}
	t, err := torch.From(v, int64(len(v)))
	if err != nil {
		panic(err)
	}
	return t
}

// collectivesWorker checks every collective against values computed by hand
// for rank r of W: rank r contributes r+1 (or a ramp 100r + i).
func collectivesWorker() error {
	g, err := fromEnvInit()
	if err != nil {
		return err
	}
	defer g.Close()
	ctx := context.Background()
	r, W := float64(g.Rank()), g.Size()
	sumR := float64(W*(W+1)) / 2 // sum of r+1

	a := f32(r+1, 2*(r+1))
	if err := g.AllReduce(ctx, Sum, a); err != nil {
		return err
	}
	if err := same(vals(a), sumR, 2*sumR); err != nil {
		return fmt.Errorf("allreduce sum: %v", err)
	}
	// several tensors of different shapes in one call
	a1, a2 := f32(r+1), f32(r, r, r)
	if err := g.AllReduce(ctx, Sum, a1, a2); err != nil {
		return err
	}
	s0 := sumR - float64(W)
	if err := same(append(vals(a1), vals(a2)...), sumR, s0, s0, s0); err != nil {
		return fmt.Errorf("allreduce of two tensors: %v", err)
	}
	b := f32(r + 1)
	if err := g.AllReduce(ctx, Avg, b); err != nil {
		return err
	}
	if err := same(vals(b), sumR/float64(W)); err != nil {
		return fmt.Errorf("allreduce avg: %v", err)
	}
	c := f32(r + 1)
	if err := g.AllReduce(ctx, Max, c); err != nil {
		return err
	}
	if err := same(vals(c), float64(W)); err != nil {
		return fmt.Errorf("allreduce max: %v", err)
	}
	d := f32(r, r, r)
	if g.Rank() == W-1 {
		d = f32(10, 11, 12)
	}
	if err := g.Broadcast(ctx, W-1, d); err != nil {
		return err
	}
	if err := same(vals(d), 10, 11, 12); err != nil {
		return fmt.Errorf("broadcast: %v", err)
	}
	outs := make([]*torch.Tensor, W)
	for i := range outs {
		outs[i] = f32(0, 0)
	}
	if err := g.AllGather(ctx, outs, f32(r, r)); err != nil {
		return err
	}
	for i, o := range outs {
		if err := same(vals(o), float64(i), float64(i)); err != nil {
			return fmt.Errorf("allgather[%d]: %v", i, err)
		}
	}
	flat, _ := torch.Zeros([]int64{int64(2 * W)}, torch.Float32, torch.CPU)
	if err := g.AllGatherFlat(ctx, flat, f32(10*r, 10*r+1)); err != nil {
		return err
	}
	var want []float64
	for i := 0; i < W; i++ {
		want = append(want, 10*float64(i), 10*float64(i)+1)
	}
	if err := same(vals(flat), want...); err != nil {
		return fmt.Errorf("allgather flat: %v", err)
	}
	// reduce-scatter of a ramp: rank r holds in[j] = 100r + j (2W elements);
	// chunk k summed over ranks = sum_r (100r + 2k + i) for i in {0,1}.
	ramp := make([]float64, 2*W)
	for j := range ramp {
		ramp[j] = 100*r + float64(j)
	}
	for _, algo := range []ReduceScatterAlgo{RSAuto, RSAllreduce, RSAllToAll} {
		if err := g.SetReduceScatter(algo); err != nil {
			return err
		}
		for _, op := range []ReduceOp{Sum, Avg} {
			out := f32(0, 0)
			if err := g.ReduceScatter(ctx, op, out, f32(ramp...)); err != nil {
				return err
			}
			k := float64(g.Rank())
			s100 := 100 * float64(W*(W-1)) / 2
			w0, w1 := s100+float64(W)*2*k, s100+float64(W)*(2*k+1)
			if op == Avg {
				w0, w1 = w0/float64(W), w1/float64(W)
			}
			if err := same(vals(out), w0, w1); err != nil {
				return fmt.Errorf("reduce_scatter algo %d op %d: %v", algo, op, err)
			}
		}
	}
	at := f32(ramp...)
	ao := f32(make([]float64, 2*W)...)
	if err := g.AllToAll(ctx, ao, at); err != nil {
		return err
	}
	want = want[:0]
	for j := 0; j < W; j++ {
		want = append(want, 100*float64(j)+2*r, 100*float64(j)+2*r+1)
	}
	if err := same(vals(ao), want...); err != nil {
		return fmt.Errorf("alltoall: %v", err)
	}
	parts, err := g.AllGatherBytes(ctx, []byte(strings.Repeat("x", g.Rank())))
	if err != nil {
		return err
	}
	for i, p := range parts {
		if string(p) != strings.Repeat("x", i) {
			return fmt.Errorf("allgather bytes[%d] = %q", i, p)
		}
	}
	if err := g.ReduceScatter(ctx, Sum, f32(0), f32(1, 2, 3, 4, 5, 6, 7)); err == nil {
		return fmt.Errorf("reduce_scatter of a misfit input: no error")
	}
	return g.Barrier(ctx)
}

func TestCollectives(t *testing.T) {
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			wantAllOK(t, spawn(t, n, "collectives", 60*time.Second))
		})
	}
}

func TestFileStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store")
	wantAllOK(t, spawn(t, 2, "collectives", 60*time.Second, "RAGEN_DIST_STORE_FILE="+path))
}

// lostWorker: the last rank exits after the first barrier; every other rank
// must then get an error (not hang) from its next collective.
func lostWorker() error {
	g, err := fromEnvInit()
	if err != nil {
		return err
	}
	if err := g.Barrier(context.Background()); err != nil {
		return err
	}
	if g.Rank() == g.Size()-1 {
		os.Exit(7) // die without closing anything
	}
	x := f32(1, 2, 3)
	var errs []error
	for i := 0; i < 3; i++ {
		errs = append(errs, g.AllReduce(context.Background(), Sum, x))
	}
	if errs[0] == nil {
		return fmt.Errorf("allreduce with a dead peer returned no error")
	}
	if errs[2] == nil || !strings.Contains(errs[2].Error(), "broken") {
		return fmt.Errorf("collective on a broken group: %v", errs[2])
	}
	fmt.Printf("rank %d got: %v\n", g.Rank(), errs[0])
	return nil
}

func TestLostPeer(t *testing.T) {
	res := spawn(t, 3, "lost", 60*time.Second, "RAGEN_DIST_TIMEOUT=15s")
	if res[2].code != 7 {
		t.Errorf("dying rank exited %d:\n%s", res[2].code, res[2].out)
	}
	wantAllOK(t, res[:2])
	t.Logf("rank 0: %s", res[0].out)
	for r := 0; r < 2; r++ {
		if !strings.Contains(res[r].out, "dist: rank") {
			t.Errorf("rank %d error does not name its rank:\n%s", r, res[r].out)
		}
	}
}

// stuckWorker: rank 1 stays alive but never joins the allreduce; rank 0
// must fail after its timeout.
func stuckWorker() error {
	g, err := fromEnvInit()
	if err != nil {
		return err
	}
	ctx := context.Background()
	if err := g.Barrier(ctx); err != nil {
		return err
	}
	if g.Rank() == 1 {
		time.Sleep(4 * time.Second)
		os.Exit(0)
	}
	ctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	err = g.AllReduce(ctx, Sum, f32(1))
	if err == nil {
		return fmt.Errorf("allreduce with a stuck peer returned no error")
	}
	fmt.Printf("rank 0 got: %v\n", err)
	return nil
}

func TestStuckPeer(t *testing.T) {
	res := spawn(t, 2, "stuck", 60*time.Second, "RAGEN_DIST_TIMEOUT=30s")
	wantAllOK(t, res)
	if !strings.Contains(res[0].out, "timed out") && !strings.Contains(res[0].out, "Timed out") {
		t.Errorf("rank 0 did not report a timeout:\n%s", res[0].out)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []Config{{WorldSize: 0}, {Rank: 2, WorldSize: 2}, {WorldSize: 1, Backend: "mpi"}, {WorldSize: 1, MasterPort: 70000}} {
		if _, err := Init(context.Background(), c); err == nil {
			t.Errorf("Init(%+v): no error", c)
		}
	}
	if !NCCLAvailable() {
		_, err := Init(context.Background(), Config{WorldSize: 1, Backend: "nccl", MasterPort: freePort(t), Timeout: 5 * time.Second})
		if err == nil || !strings.Contains(err.Error(), "cuda") {
			t.Errorf("nccl without cuda: %v", err)
		}
	}
}

func TestSingleRank(t *testing.T) {
	g, err := Init(context.Background(), Config{WorldSize: 1, MasterPort: freePort(t), Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	x := f32(1, 2)
	if err := g.AllReduce(context.Background(), Avg, x); err != nil {
		t.Fatal(err)
	}
	if err := same(vals(x), 1, 2); err != nil {
		t.Error(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := g.Barrier(ctx); err == nil {
		t.Error("barrier with a cancelled context: no error")
	}
	g.Close()
	if err := g.Barrier(context.Background()); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("barrier on a closed group: %v", err)
	}
}
