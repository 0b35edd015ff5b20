package dist

import (
	"context"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"ragen/torch"
)

func init() { workers["nccl"] = ncclWorker }

// ncclWorker: NCCL collectives on this rank's GPU (LOCAL_RANK), then the
// sharded AdamW on CUDA parameters against one-process AdamW on the CPU.
func ncclWorker() error {
	g, err := fromEnvInit()
	if err != nil {
		return err
	}
	defer g.Close()
	if g.Backend() != "nccl" {
		return fmt.Errorf("backend %s", g.Backend())
	}
	ctx := context.Background()
	dev := torch.CUDA(g.LocalRank())
	W := float64(g.Size())
	s := torch.NewScope()
	defer s.Close()
	x := s.Full([]int64{4}, float64(g.Rank()+1), torch.Float32, dev)
	if err := g.AllReduce(ctx, Sum, x); err != nil {
		return err
	}
	if v := s.Float32s(s.To(x, torch.Float32, torch.CPU)); math.Abs(float64(v[0])-W*(W+1)/2) > 1e-6 {
		return fmt.Errorf("nccl allreduce: %v", v)
	}
	flat := s.Zeros([]int64{2 * int64(W)}, torch.Float32, dev)
	if err := g.AllGatherFlat(ctx, flat, s.Full([]int64{2}, float64(g.Rank()), torch.Float32, dev)); err != nil {
		return err
	}
	out := s.Zeros([]int64{2}, torch.Float32, dev)
	if err := g.ReduceScatter(ctx, Sum, out, s.Full([]int64{2 * int64(W)}, 1, torch.Float32, dev)); err != nil {
		return err
	}
	if v := s.Float32s(s.To(out, torch.Float32, torch.CPU)); float64(v[0]) != W {
		return fmt.Errorf("nccl reduce_scatter: %v", v)
	}
	if err := s.Err(); err != nil {
		return err
	}
	x1, tgt, init := shData()
	ps, err := shParams(init)
	if err != nil {
		return err
	}
	var cps []*torch.Tensor
	for _, p := range ps {
		c := s.Escape(s.Contiguous(s.To(s.Detach(p), torch.Float32, dev)))
		if err := c.SetRequiresGrad(true); err != nil {
			return err
		}
		cps = append(cps, c)
	}
	opt, err := NewShardedAdamW(ctx, g, cps, torch.DefaultAdamW())
	if err != nil {
		return err
	}
	defer opt.Close()
	opt.GradReduce = Avg
	for step := 0; step < 2; step++ {
		if err := torch.ZeroGrad(cps); err != nil {
			return err
		}
		all := make([]int, shN)
		for i := range all {
			all[i] = i
		}
		if err := shBackwardOn(cps, x1, tgt, all, dev); err != nil {
			return err
		}
		if _, err := opt.Step(ctx, shLR, shClip); err != nil {
			return err
		}
	}
	fmt.Printf("rank %d: NCCL collectives and the sharded AdamW ran on %v\n", g.Rank(), dev)
	return nil
}

// TestNCCL runs under the GPU bundle (RAGEN_TEST_DEVICE=cuda): 2 ranks when
// the machine has 2 GPUs, else 1 rank through the NCCL init path.
func TestNCCL(t *testing.T) {
	if !strings.HasPrefix(os.Getenv("RAGEN_TEST_DEVICE"), "cuda") {
		t.Skip("NCCL check: set RAGEN_TEST_DEVICE=cuda on a GPU machine (make gpu-bundle)")
	}
	if !NCCLAvailable() || !torch.CUDAAvailable() {
		t.Fatalf("RAGEN_TEST_DEVICE=cuda but NCCL=%v, CUDA=%v (%s)", NCCLAvailable(), torch.CUDAAvailable(), torch.BuildInfo())
	}
	n := min(2, torch.CUDADeviceCount())
	res := spawn(t, n, "nccl", 120*time.Second, "RAGEN_DIST_BACKEND=nccl")
	wantAllOK(t, res)
	for _, r := range res {
		t.Log(strings.TrimSpace(r.out))
	}
}
