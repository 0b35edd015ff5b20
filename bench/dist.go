package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"ragen/dist"
	"ragen/torch"
)

// The dist rows: c10d collectives (Gloo on CPU, 127.0.0.1) and the
// FSDP-style sharded AdamW update for 1, 2 and 3 processes. The benchmark
// binary re-executes itself as the ranks (RAGEN_BENCH_DIST_RANKFILE set).

func init() {
	Register(Comparison{Name: "dist", Run: runDist})
	if out := os.Getenv("RAGEN_BENCH_DIST_RANKFILE"); out != "" {
		if err := distRank(out); err != nil {
			fmt.Fprintf(os.Stderr, "dist bench rank %s: %v\n", os.Getenv("RANK"), err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// distShapes are parameter shapes of Qwen2-family decoders without the
// vocabulary matrices that dominate small models.
func qwenShapes(hidden, inter, heads, kvHeads, layers, vocab int64) [][]int64 {
	hd := hidden / heads
	var s [][]int64
	if vocab > 0 {
		s = append(s, []int64{vocab, hidden})
	}
	for l := int64(0); l < layers; l++ {
		s = append(s, []int64{heads * hd, hidden}, []int64{heads * hd}, []int64{kvHeads * hd, hidden}, []int64{kvHeads * hd},
			[]int64{kvHeads * hd, hidden}, []int64{kvHeads * hd}, []int64{hidden, heads * hd},
			[]int64{inter, hidden}, []int64{inter, hidden}, []int64{hidden, inter}, []int64{hidden}, []int64{hidden})
	}
	return append(s, []int64{hidden})
}

var distModels = []struct {
	name   string
	shapes [][]int64
}{
	{"demo (Qwen2 4x128, vocab 1024)", qwenShapes(128, 384, 4, 2, 4, 1024)},
	{"Qwen2.5-0.5B-shaped, 2 layers, no embedding", qwenShapes(896, 4864, 14, 2, 2, 0)},
}

type distRow struct {
	Op    string
	Bytes int64
	MS    float64 // median per op, rank 0
}

type distStep struct {
	Model       string
	Numel       int64
	StepMS      float64 // sharded update (reduce-scatter, clip, AdamW, all-gather), median
	SingleMS    float64 // world 1 only: torch.AdamW + ClipGradNorm on the full parameters
	StateBytes  int64   // persistent optimizer state per rank
	SingleBytes int64
	RSSMB       float64
}

type distResult struct {
	World int
	Init  float64 // ms, rendezvous + process group
	Colls []distRow
	Steps []distStep
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func timeIt(warm, runs int, f func() error) (float64, error) {
	var ts []float64
	for i := 0; i < warm+runs; i++ {
		t0 := time.Now()
		if err := f(); err != nil {
			return 0, err
		}
		if i >= warm {
			ts = append(ts, float64(time.Since(t0).Microseconds())/1000)
		}
	}
	return median(ts), nil
}

func rssMB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			f := strings.Fields(l)
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

func distRank(out string) error {
	cfg, _, err := dist.FromEnv()
	if err != nil {
		return err
	}
	cfg.Timeout = 2 * time.Minute
	torch.KeepFreedMemory(1 << 30) // as the ragen CLI does
	if n, _ := strconv.Atoi(os.Getenv("RAGEN_BENCH_DIST_THREADS")); n > 0 {
		torch.SetNumThreads(n)
	}
	ctx := context.Background()
	t0 := time.Now()
	g, err := dist.Init(ctx, cfg)
	if err != nil {
		return err
	}
	defer g.Close()
	res := distResult{World: g.Size(), Init: float64(time.Since(t0).Microseconds()) / 1000}
	w := int64(g.Size())
	for _, n := range []int64{1 << 18, 1 << 24} { // 1 MiB and 64 MiB of float32
		runs := 10
		if n > 1<<20 {
			runs = 4
		}
		buf, err := torch.Ones([]int64{n}, torch.Float32, torch.CPU)
		if err != nil {
			return err
		}
		out, err := torch.Zeros([]int64{n / w}, torch.Float32, torch.CPU)
		if err != nil {
			return err
		}
		part, _ := torch.Ones([]int64{n / w}, torch.Float32, torch.CPU)
		flat, _ := torch.Zeros([]int64{(n / w) * w}, torch.Float32, torch.CPU)
		in := flat
		ops := []struct {
			name string
			f    func() error
		}{
			{"allreduce", func() error { return g.AllReduce(ctx, dist.Sum, buf) }},
			{"broadcast", func() error { return g.Broadcast(ctx, 0, buf) }},
			{"allgather (flat)", func() error { return g.AllGatherFlat(ctx, flat, part) }},
			{"reduce_scatter (allreduce)", func() error {
				_ = g.SetReduceScatter(dist.RSAllreduce)
				return g.ReduceScatter(ctx, dist.Sum, out, in)
			}},
			{"reduce_scatter (alltoall)", func() error {
				_ = g.SetReduceScatter(dist.RSAllToAll)
				return g.ReduceScatter(ctx, dist.Sum, out, in)
			}},
		}
		for _, op := range ops {
			ms, err := timeIt(2, runs, op.f)
			if err != nil {
				return fmt.Errorf("%s: %w", op.name, err)
			}
			res.Colls = append(res.Colls, distRow{Op: op.name, Bytes: 4 * n, MS: ms})
		}
		buf.Free()
		out.Free()
		part.Free()
		flat.Free()
	}
	ms, err := timeIt(2, 10, func() error { return g.Barrier(ctx) })
	if err != nil {
		return err
	}
	res.Colls = append(res.Colls, distRow{Op: "barrier", MS: ms})
	_ = g.SetReduceScatter(dist.RSAuto)

	gen, err := torch.NewGenerator(1, torch.CPU)
	if err != nil {
		return err
	}
	defer gen.Close()
	for _, m := range distModels {
		var ps []*torch.Tensor
		var numel int64
		for _, sh := range m.shapes {
			p, err := torch.Randn(gen, sh, torch.Float32, torch.CPU)
			if err != nil {
				return err
			}
			if err := p.SetRequiresGrad(true); err != nil {
				return err
			}
			gr, err := torch.Randn(gen, sh, torch.Float32, torch.CPU)
			if err != nil {
				return err
			}
			if err := p.SetGrad(gr); err != nil {
				return err
			}
			gr.Free()
			ps = append(ps, p)
			numel += p.Numel()
		}
		st := distStep{Model: m.name, Numel: numel, SingleBytes: 3 * 4 * numel}
		cfgA := torch.DefaultAdamW()
		cfgA.LR = 1e-6
		if g.Size() == 1 {
			opt, err := torch.NewAdamW(ps, cfgA)
			if err != nil {
				return err
			}
			if st.SingleMS, err = timeIt(1, 5, func() error {
				if _, err := torch.ClipGradNorm(ps, 1.0); err != nil {
					return err
				}
				return opt.Step(1e-6)
			}); err != nil {
				return err
			}
			opt.Close()
		}
		sh, err := dist.NewShardedAdamW(ctx, g, ps, cfgA)
		if err != nil {
			return err
		}
		if st.StepMS, err = timeIt(1, 5, func() error { _, err := sh.Step(ctx, 1e-6, 1.0); return err }); err != nil {
			return err
		}
		st.StateBytes = sh.StateBytes()
		st.RSSMB = rssMB()
		sh.Close()
		for _, p := range ps {
			p.Free()
		}
		res.Steps = append(res.Steps, st)
	}
	if g.Rank() != 0 {
		return nil
	}
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	return os.WriteFile(out, b, 0o644)
}

func runDistWorld(n, threads int) (*distResult, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir, err := os.MkdirTemp("", "ragen-distbench")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "rank0.json")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var cmds []*exec.Cmd
	var logs []*bytes.Buffer
	for r := 0; r < n; r++ {
		c := exec.CommandContext(ctx, exe)
		c.Env = append(os.Environ(), "RAGEN_BENCH_DIST_RANKFILE="+out, "RAGEN_BENCH_DIST_THREADS="+strconv.Itoa(threads),
			"OMP_NUM_THREADS="+strconv.Itoa(threads),
			"RANK="+strconv.Itoa(r), "WORLD_SIZE="+strconv.Itoa(n), "LOCAL_RANK="+strconv.Itoa(r),
			"MASTER_ADDR=127.0.0.1", "MASTER_PORT="+strconv.Itoa(port))
		b := new(bytes.Buffer)
		c.Stdout, c.Stderr = b, b
		if err := c.Start(); err != nil {
			return nil, err
		}
		cmds, logs = append(cmds, c), append(logs, b)
	}
	for r, c := range cmds {
		if err := c.Wait(); err != nil {
			return nil, fmt.Errorf("world %d rank %d: %v\n%s", n, r, err, logs[r])
		}
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return nil, err
	}
	var res distResult
	return &res, json.Unmarshal(b, &res)
}

func runDist(cfg RunConfig, w io.Writer) error {
	var rs []*distResult
	for _, n := range []int{1, 2, 3} {
		threads := max(1, cfg.Threads/n)
		r, err := runDistWorld(n, threads)
		if err != nil {
			return err
		}
		rs = append(rs, r)
	}
	fmt.Fprintf(w, "\n## dist: c10d Gloo on 127.0.0.1, 1/2/3 processes (%d threads split over the ranks; median ms per op, rank 0)\n\n", cfg.Threads)
	fmt.Fprintln(w, "| op | size | 1 proc | 2 procs | 3 procs |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for i, row := range rs[0].Colls {
		size := "-"
		if row.Bytes > 0 {
			size = fmt.Sprintf("%d MiB", row.Bytes>>20)
		}
		fmt.Fprintf(w, "| %s | %s |", row.Op, size)
		for _, r := range rs {
			fmt.Fprintf(w, " %.2f |", r.Colls[i].MS)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "| rendezvous + process group | - | %.1f | %.1f | %.1f |\n", rs[0].Init, rs[1].Init, rs[2].Init)
	fmt.Fprintln(w, "\n| sharded AdamW update step | params | single-process AdamW+clip | 1 proc | 2 procs | 3 procs | optimizer state per rank (1/2/3 procs; single) | RSS rank 0 (1/2/3) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for i, st := range rs[0].Steps {
		fmt.Fprintf(w, "| %s | %.2fM | %.1f ms | %.1f ms | %.1f ms | %.1f ms | %.2f / %.2f / %.2f MB; %.2f MB | %.0f / %.0f / %.0f MB |\n",
			st.Model, float64(st.Numel)/1e6, st.SingleMS, rs[0].Steps[i].StepMS, rs[1].Steps[i].StepMS, rs[2].Steps[i].StepMS,
			mb(rs[0].Steps[i].StateBytes), mb(rs[1].Steps[i].StateBytes), mb(rs[2].Steps[i].StateBytes), mb(st.SingleBytes),
			rs[0].Steps[i].RSSMB, rs[1].Steps[i].RSSMB, rs[2].Steps[i].RSSMB)
	}
	return nil
}

func mb(b int64) float64 { return math.Round(float64(b)/1e4) / 100 }
