package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"

	"ragen/bench"
	"ragen/llm/llmbench"
	"ragen/torch"
)

var keepFreed bool

func main() {
	if bench.UpdateChild() { // a re-executed child measuring one update's memory
		return
	}
	if bench.StarPOChild() { // a re-executed child running one StarPO step
		return
	}
	threads := flag.Int("threads", runtime.NumCPU(), "libtorch intra-op threads (both sides)")
	warmup := flag.Int("warmup", 2, "warm-up steps")
	runs := flag.Int("runs", 5, "timed steps (minimum is reported)")
	dir := flag.String("dir", "bench", "directory holding the peer scripts")
	only := flag.String("only", "", "run only the comparisons whose name contains this text (skips the training-step workloads)")
	flag.BoolVar(&keepFreed, "keep-freed", true, "keep freed tensor memory for reuse (torch.KeepFreedMemory), as the ragen CLI does")
	flag.Parse()
	if err := run(*threads, *warmup, *runs, *dir, *only); err != nil {
		fmt.Fprintln(os.Stderr, "benchall:", err)
		os.Exit(1)
	}
}

func run(threads, warmup, runs int, dir, only string) error {
	torch.SetNumThreads(threads)
	if keepFreed {
		torch.KeepFreedMemory(1 << 30) // as the ragen CLI does
	}
	peak, err := bench.MatmulPeak(2048)
	if err != nil {
		return err
	}
	fmt.Printf("threads=%d  fp32 matmul peak (2048^2): %.1f GFLOP/s\n\n", threads, peak/1e9)

	if only != "" {
		return comparisons(only, bench.RunConfig{Threads: threads, Warmup: warmup, Runs: runs, Dir: dir, PeakFLOPs: peak, KeepFreed: keepFreed})
	}
	peer := map[string]any{}
	if err := bench.RunPeer(dir, "torch_peer.py", &peer, strconv.Itoa(threads), strconv.Itoa(warmup), strconv.Itoa(runs)); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "workload\tragen ms\tpytorch ms\tspeed-up (pytorch/ragen)\tragen MFU\t\n")
	for _, w := range bench.Workloads() {
		step, closeFn, err := w.Setup()
		if err != nil {
			return fmt.Errorf("%s: %w", w.Name, err)
		}
		d, err := llmbench.TimeStep(step, warmup, runs)
		closeFn()
		if err != nil {
			return fmt.Errorf("%s: %w", w.Name, err)
		}
		p, _ := peer[w.Name].(float64)
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.2fx\t%.0f%%\t\n", w.Name, d.Seconds()*1e3, p*1e3, p/d.Seconds(), 100*w.FLOPs/d.Seconds()/peak)
	}
	tw.Flush()
	return comparisons("", bench.RunConfig{Threads: threads, Warmup: warmup, Runs: runs, Dir: dir, PeakFLOPs: peak, KeepFreed: keepFreed})
}

// comparisons runs the registered comparisons whose name contains only.
func comparisons(only string, cfg bench.RunConfig) error {
	n := 0
	for _, c := range bench.Comparisons() {
		if !strings.Contains(c.Name, only) {
			continue
		}
		n++
		fmt.Printf("\n== %s ==\n", c.Name)
		if err := c.Run(cfg, os.Stdout); err != nil {
			return fmt.Errorf("%s: %w", c.Name, err)
		}
	}
	if n == 0 {
		return fmt.Errorf("-only %q matches no comparison", only)
	}
	return nil
}
