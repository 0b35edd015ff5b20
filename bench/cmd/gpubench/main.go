package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"ragen/llm"
	"ragen/llm/llmbench"
	"ragen/torch"
)

type row struct {
	name             string
	cfg              llm.Config
	decB, decP, decN int
	trB, trT         int
}

func rows(quick bool, only string) []row {
	if quick {
		c := llm.TinyConfig(512)
		c.HiddenSize, c.IntermediateSize, c.NumHiddenLayers = 64, 128, 2
		c.NumAttentionHeads, c.NumKeyValueHeads = 4, 2
		c.TieWordEmbeddings = true
		return []row{{name: "tiny (quick)", cfg: c, decB: 4, decP: 16, decN: 16, trB: 2, trT: 64}}
	}
	all := []row{
		{name: "Qwen2.5-0.5B shape", cfg: llmbench.Qwen05B(24), decB: 64, decP: 256, decN: 256, trB: 8, trT: 1024},
		{name: "Qwen2.5-1.5B shape", cfg: llmbench.Qwen15B(28), decB: 64, decP: 256, decN: 256, trB: 8, trT: 1024},
	}
	var out []row
	for _, r := range all {
		if only == "" || strings.Contains(r.name, only) {
			out = append(out, r)
		}
	}
	return out
}

func main() {
	devFlag := flag.String("device", "auto", "device: auto (cuda:0 when this build and machine have CUDA, else cpu), cpu or cuda:N")
	quick := flag.Bool("quick", false, "tiny shapes: prove the benchmark end to end (a CPU machine)")
	only := flag.String("only", "", "run only the rows whose name contains this (0.5B, 1.5B)")
	reps := flag.Int("reps", 3, "timed repetitions (the best is reported)")
	dir := flag.String("dir", filepath.Join(exeDir(), "bench"), "folder holding gpu_peer.py")
	python := flag.String("python", "python3", "the interpreter whose torch (and transformers) is the peer")
	noPeer := flag.Bool("no-peer", false, "ragen's side only")
	flag.Parse()
	if err := run(*devFlag, *quick, *only, *reps, *dir, *python, *noPeer); err != nil {
		fmt.Fprintln(os.Stderr, "gpubench:", err)
		os.Exit(1)
	}
}

func exeDir() string {
	p, err := os.Executable()
	if err != nil {
		return "."
	}
	return filepath.Dir(p)
}

func run(devFlag string, quick bool, only string, reps int, dir, python string, noPeer bool) error {
	dev := torch.CPU
	switch {
	case devFlag == "auto":
		if torch.CUDAAvailable() {
			dev = torch.CUDA(0)
		}
	default:
		d, err := torch.ParseDevice(devFlag)
		if err != nil {
			return err
		}
		if d != torch.CPU && !torch.CUDAAvailable() {
			return fmt.Errorf("device %s requested but this build or machine has no CUDA (%s)", d, torch.BuildInfo())
		}
		dev = d
	}
	peer := func(out any, args ...string) error {
		if noPeer {
			return errNoPeer
		}
		return runPeer(python, dir, out, append([]string{args[0], dev.String()}, args[1:]...)...)
	}
	fmt.Printf("gpubench: device %s, %s\n", dev, torch.BuildInfo())
	peak, err := bf16Peak(dev)
	if err != nil {
		return fmt.Errorf("bf16 matmul peak: %w", err)
	}
	var pp struct {
		TFLOPs float64 `json:"bf16_tflops"`
		Torch  string  `json:"torch"`
		GPU    string  `json:"gpu"`
	}
	peerPeak := 0.0
	if err := peer(&pp, "peak", "1", "1", "1", "1", "1", "1", "1", "1", "1", "1", strconv.Itoa(reps)); err == nil {
		peerPeak = pp.TFLOPs * 1e12
		fmt.Printf("peer: PyTorch %s %s\n", pp.Torch, pp.GPU)
	} else if err != errNoPeer {
		peerFailed(err)
	}
	best := max(peak, peerPeak)
	fmt.Printf("bf16 matmul: ragen %.1f TFLOP/s, pytorch %.1f TFLOP/s; MFU is against %.1f\n", peak/1e12, peerPeak/1e12, best/1e12)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "model\tparams\tdecode tok/s ragen\tpeer\tratio\ttrain s ragen\tpeer\tratio\tMFU ragen\tMFU peer\t\n")
	impl := ""
	for _, r := range rows(quick, only) {
		res, err := ragenRow(r, dev, reps)
		if err != nil {
			return fmt.Errorf("%s: %w", r.name, err)
		}
		var pd struct {
			Decode float64 `json:"decode_tok_s"`
			Impl   string  `json:"impl"`
		}
		var pt struct {
			Train  float64   `json:"train_step_s"`
			Phases []float64 `json:"phases_s"`
		}
		args := func(what string) []string {
			c := r.cfg
			v := []int{c.NumHiddenLayers, c.HiddenSize, c.IntermediateSize, c.NumAttentionHeads, c.NumKeyValueHeads,
				c.VocabSize, r.decB, r.decP, r.decN, r.trT, reps}
			if what == "train" {
				v[6] = r.trB
			}
			out := []string{what}
			for _, x := range v {
				out = append(out, strconv.Itoa(x))
			}
			return out
		}
		if err := peer(&pd, args("decode")...); err != nil && err != errNoPeer {
			peerFailed(fmt.Errorf("%s: %w", r.name, err))
		}
		if err := peer(&pt, args("train")...); err != nil && err != errNoPeer {
			peerFailed(fmt.Errorf("%s: %w", r.name, err))
		}
		impl = pd.Impl
		flops := llmbench.TrainFLOPs(r.cfg, r.trB, r.trT)
		fmt.Fprintf(tw, "%s\t%.0fM\t%.0f\t%s\t%s\t%.3f\t%s\t%s\t%.0f%%\t%s\t\n", r.name, float64(r.cfg.ParamCount())/1e6,
			res.decode, num(pd.Decode, "%.0f"), ratio(res.decode, pd.Decode), res.train, num(pt.Train, "%.3f"),
			ratio(pt.Train, res.train), 100*flops/res.train/best, pct(flops, pt.Train, best))
		tw.Flush()
		if res.phases != "" {
			fmt.Printf("  %s, ragen's step: %s\n", r.name, res.phases)
		}
		if len(pt.Phases) == 3 {
			fmt.Printf("  %s, peer's step: forward %.3f s, backward %.3f s, optimizer %.3f s\n", r.name, pt.Phases[0], pt.Phases[1], pt.Phases[2])
		}
	}
	if impl != "" {
		fmt.Printf("peer: %s; ratios are ragen's speed over the peer's (above 1: ragen faster)\n", impl)
	}
	if peerErrors > 0 {
		return fmt.Errorf("the peer failed %d times (above); ragen's numbers stand", peerErrors)
	}
	return nil
}

var errNoPeer = fmt.Errorf("no peer")

// peerFailed reports a peer that did not run: ragen's side of the table
// stands on its own, the peer's cells read "-", and gpubench exits 2 at the
// end so the failure is not missed.
func peerFailed(err error) {
	fmt.Fprintln(os.Stderr, "gpubench: the peer failed:", err)
	peerErrors++
}

var peerErrors int

func num(v float64, f string) string {
	if v <= 0 {
		return "-"
	}
	return fmt.Sprintf(f, v)
}

func ratio(a, b float64) string {
	if a <= 0 || b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

func pct(flops, s, peak float64) string {
	if s <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*flops/s/peak)
}

type result struct {
	decode, train float64
	phases        string // one training step's forward, backward and optimizer times
}

// ragenRow measures one row: decode with a bf16 model, a training step with
// a float32 model computing in bf16.
func ragenRow(r row, dev torch.Device, reps int) (result, error) {
	var res result
	md, err := llm.New(r.cfg, llm.Options{DType: torch.BFloat16, Device: dev, Seed: 1})
	if err != nil {
		return res, err
	}
	prompts := llmbench.Prompts(r.decB, r.decP, r.cfg.VocabSize, 1)
	if _, err := llmbench.Decode(md, prompts, min(4, r.decN)); err != nil {
		md.Close()
		return res, fmt.Errorf("decode: %w", err)
	}
	for range reps {
		v, err := llmbench.Decode(md, prompts, r.decN)
		if err != nil {
			md.Close()
			return res, fmt.Errorf("decode: %w", err)
		}
		res.decode = max(res.decode, v)
	}
	md.Close()
	mt, err := llm.New(r.cfg, llm.Options{DType: torch.Float32, ComputeDType: torch.BFloat16, Device: dev, Seed: 1})
	if err != nil {
		return res, err
	}
	defer mt.Close()
	tr, err := llmbench.NewTrainer(mt, r.trB, r.trT, 1e-4)
	if err != nil {
		return res, fmt.Errorf("train: %w", err)
	}
	defer tr.Close()
	// llmbench's Step reads the loss back (s.Item), which waits for the
	// device: the time covers the whole step on CUDA too
	// two untimed steps first, as the peer
	d, err := llmbench.TimeStep(func() error { _, err := tr.Step(); return err }, 2, reps)
	if err != nil {
		return res, fmt.Errorf("train: %w", err)
	}
	res.train = d.Seconds()
	if f, b, o, err := tr.Phases(); err == nil {
		res.phases = fmt.Sprintf("forward %.3f s, backward %.3f s, optimizer %.3f s", f.Seconds(), b.Seconds(), o.Seconds())
	}
	return res, nil
}

// bf16Peak is the bf16 matmul rate (FLOP/s) on dev: n^3 products (n = 8192
// on CUDA, 1024 on a CPU), ten per timing, best of five, the device
// synchronised by reading a value back.
func bf16Peak(dev torch.Device) (float64, error) {
	n := int64(8192)
	if dev == torch.CPU {
		n = 1024
	}
	s := torch.NewScope()
	defer s.Close()
	g, err := torch.NewGenerator(0, dev)
	if err != nil {
		return 0, err
	}
	defer g.Close()
	a := s.Randn(g, []int64{n, n}, torch.BFloat16, dev)
	b := s.Randn(g, []int64{n, n}, torch.BFloat16, dev)
	if err := s.Err(); err != nil {
		return 0, err
	}
	const per = 10
	best := math.Inf(1)
	for i := range 8 {
		in := torch.NewScope()
		t0 := time.Now()
		var c *torch.Tensor
		for range per {
			c = in.MatMul(a, b)
		}
		in.Item(in.Sum(in.Narrow(in.Narrow(c, 0, 0, 1), 1, 0, 1), false))
		dt := time.Since(t0).Seconds() / per
		if err := in.Close(); err != nil {
			return 0, err
		}
		if i >= 3 {
			best = min(best, dt)
		}
	}
	return 2 * float64(n*n*n) / best, nil
}

// runPeer runs gpu_peer.py and decodes its last stdout line.
func runPeer(python, dir string, out any, args ...string) error {
	script := filepath.Join(dir, "gpu_peer.py")
	cmd := exec.Command(python, append([]string{script}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("peer %s %s: %w\n%s", script, args[0], err, lastLines(stderr.String(), 20))
	}
	lines := bytes.Split(bytes.TrimSpace(stdout.Bytes()), []byte("\n"))
	if err := json.Unmarshal(lines[len(lines)-1], out); err != nil {
		return fmt.Errorf("peer %s %s printed no JSON result: %w", script, args[0], err)
	}
	return nil
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}
