package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"

	"ragen/llm"
	"ragen/llm/llmbench"
	"ragen/torch"
)

type peer struct {
	DecodeTokS  float64 `json:"decode_tok_s"`
	TrainStepS  float64 `json:"train_step_s"`
	MatmulGFlop float64 `json:"matmul_gflops"`
	Params      int64   `json:"params"`
}

func main() {
	threads := flag.Int("threads", 2, "intra-op threads for both sides")
	what := flag.String("what", "all", "decode, train or all")
	python := flag.String("python", "/usr/bin/python3", "python with torch")
	reps := flag.Int("reps", 3, "repetitions (best is reported)")
	flag.Parse()
	if err := run(*threads, *what, *python, *reps); err != nil {
		fmt.Fprintln(os.Stderr, "llm_compare:", err)
		os.Exit(1)
	}
}

func run(threads int, what, python string, reps int) error {
	// one OS thread issues every torch call, as in the Python peer: each OS
	// thread entering libtorch gets its own OpenMP team, and idle teams
	// spin-wait against the active one.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	torch.SetNumThreads(threads)
	_, self, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(self), "..", "llm_peer.py")
	cmd := exec.Command(python, script, what)
	cmd.Env = append(os.Environ(), "NT="+strconv.Itoa(threads), "OMP_NUM_THREADS="+strconv.Itoa(threads))
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("peer: %w", err)
	}
	var p peer
	if err := json.Unmarshal(out, &p); err != nil {
		return fmt.Errorf("peer output %q: %w", out, err)
	}
	cfg := llmbench.Config()
	m, err := llm.New(cfg, llm.Options{DType: torch.Float32, Device: torch.CPU, Seed: 1})
	if err != nil {
		return err
	}
	defer m.Close()
	fmt.Printf("model: %d params (peer %d), threads %d\n", cfg.ParamCount(), p.Params, threads)
	if what == "decode" || what == "all" {
		prompts := llmbench.Prompts(8, 128, cfg.VocabSize, 1)
		if _, err := llmbench.Decode(m, prompts, 16); err != nil {
			return err
		}
		best := 0.0
		for range reps {
			v, err := llmbench.Decode(m, prompts, 256)
			if err != nil {
				return err
			}
			best = max(best, v)
		}
		fmt.Println(llmbench.Summary("decode b8", best, p.DecodeTokS, "tok/s", true))
	}
	if what == "train" || what == "all" {
		tr, err := llmbench.NewTrainer(m, 8, 256, 1e-4)
		if err != nil {
			return err
		}
		defer tr.Close()
		best := 1e9
		for i := range reps + 2 {
			t0 := nowSeconds()
			if _, err := tr.Step(); err != nil {
				return err
			}
			if i >= 2 {
				best = min(best, nowSeconds()-t0)
			}
		}
		fmt.Println(llmbench.Summary("train step", best, p.TrainStepS, "s", false))
		peak, err := llmbench.MatmulPeak()
		if err != nil {
			return err
		}
		fl := llmbench.TrainFLOPs(cfg, 8, 256)
		fmt.Printf("matmul peak %.0f GFLOP/s (2048², fp32); train MFU go %.1f%%, pytorch %.1f%% (PaLM's (6·N + 12·L·H·Q·T)·tokens / step time / peak)\n",
			peak, 100*fl/best/1e9/peak, 100*fl/p.TrainStepS/1e9/peak)
	}
	return nil
}
