package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"ragen/llm"
	"ragen/llm/llmbench"
	"ragen/torch"
)

// The Qwen-shaped rows of `make bench`: decode and training at Qwen2.5's
// 0.5B shape (2 layers and the full 24) and 1.5B shape (2 layers), against
// the plain-PyTorch Qwen2 of bench/qwen_peer.py on the same shapes and
// threads, and the peak memory of one RL update at 8 x 1024 tokens. Every
// ragen call here is made from an ordinary goroutine (no LockOSThread): the
// speed a library caller gets.

// QwenRow is one model shape of the table.
type QwenRow struct {
	Name string
	Cfg  llm.Config
	// Decode: batch, prompt length, new tokens. Train: batch x length.
	DecB, DecP, DecN, TrB, TrT int
}

// QwenRows are the shapes `make bench` runs; RAGEN_BENCH_QWEN=quick keeps
// the 2-layer 0.5B row only, any other value the rows whose name contains it
// (RAGEN_BENCH_QWEN=24L).
func QwenRows() []QwenRow {
	rows := []QwenRow{
		{"0.5B-shape 2L", llmbench.Qwen05B(2), 8, 128, 64, 1, 512},
		{"1.5B-shape 2L", llmbench.Qwen15B(2), 8, 128, 64, 1, 512},
		{"0.5B 24L", llmbench.Qwen05B(24), 8, 128, 32, 1, 512},
	}
	if os.Getenv("RAGEN_BENCH_QWEN") == "quick" {
		return rows[:1]
	}
	return selectRows(rows, os.Getenv("RAGEN_BENCH_QWEN"))
}

// selectRows keeps the rows whose name contains sel (all when sel is empty).
func selectRows(rows []QwenRow, sel string) []QwenRow {
	if sel == "" {
		return rows
	}
	var some []QwenRow
	for _, r := range rows {
		if strings.Contains(r.Name, sel) {
			some = append(some, r)
		}
	}
	return some
}

func init() {
	Register(Comparison{Name: "qwen-shaped models (ordinary goroutine caller)", Run: RunQwen})
}

// peerArgs are qwen_peer.py's positional arguments for a row.
func peerArgs(what string, r QwenRow, reps int) []string {
	c := r.Cfg
	v := []int{c.NumHiddenLayers, c.HiddenSize, c.IntermediateSize, c.NumAttentionHeads, c.NumKeyValueHeads,
		c.VocabSize, r.DecB, r.DecP, r.DecN, r.TrT, reps}
	if what == "train" || what == "train_bf16" || what == "update" {
		v[6] = r.TrB
	}
	out := []string{what}
	for _, x := range v {
		out = append(out, strconv.Itoa(x))
	}
	return out
}

// DecodeBytes is what one decode step must read from memory at context
// length ctx: every weight once (the tied head reads the whole embedding
// matrix; the embedding lookup reads B rows, not counted) and the KV cache.
func DecodeBytes(c llm.Config, batch, ctx int) float64 { return DecodeBytesOf(c, batch, ctx, 4) }

// DecodeBytesOf is DecodeBytes for weights and KV cache of elem bytes per
// value (2 for bf16).
func DecodeBytesOf(c llm.Config, batch, ctx int, elem float64) float64 {
	kv := 2 * float64(c.NumHiddenLayers) * float64(batch) * float64(c.NumKeyValueHeads*c.HeadDimension()) * float64(ctx)
	return elem * (float64(c.ParamCount()) + kv)
}

// DecodeStep is the time of one decode step alone: (generate n tokens -
// generate 1 token) / (n-1), best of reps, so the prompt's prefill (a GEMM
// workload) stays out of the bandwidth figure.
func DecodeStep(m *llm.Model, prompts [][]int, n, reps int) (float64, error) {
	stepS := math.Inf(1)
	for range reps {
		t0 := time.Now()
		if _, err := llmbench.Decode(m, prompts, 1); err != nil {
			return 0, err
		}
		one := time.Since(t0).Seconds()
		t0 = time.Now()
		if _, err := llmbench.Decode(m, prompts, n); err != nil {
			return 0, err
		}
		stepS = min(stepS, (time.Since(t0).Seconds()-one)/float64(n-1))
	}
	return stepS, nil
}

// StreamBandwidth measures copy bandwidth (bytes read + written per second)
// on 256 MB float32 buffers, best of 5.
func StreamBandwidth() (float64, error) {
	s := torch.NewScope()
	defer s.Close()
	const n = 64 << 20
	a := s.Full([]int64{n}, 1, torch.Float32, torch.CPU)
	b := s.Zeros([]int64{n}, torch.Float32, torch.CPU)
	d, err := llmbench.TimeStep(func() error { s.CopyInto(b, a); return s.Err() }, 1, 5)
	if err != nil {
		return 0, err
	}
	return 2 * 4 * n / d.Seconds(), nil
}

// RunQwen prints the Qwen-shaped table.
func RunQwen(cfg RunConfig, w io.Writer) error {
	var pk struct {
		GFlops float64 `json:"matmul_gflops"`
		Stream float64 `json:"stream_gb_s"`
	}
	dummy := QwenRow{Cfg: llmbench.Qwen05B(1)}
	if err := RunPeer(cfg.Dir, "qwen_peer.py", &pk, peerArgs("peak", dummy, 1)...); err != nil {
		return err
	}
	bw, err := StreamBandwidth()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "copy bandwidth: ragen %.1f GB/s, pytorch %.1f GB/s; matmul peak: ragen %.1f, pytorch %.1f GFLOP/s\n",
		bw/1e9, pk.Stream, cfg.PeakFLOPs/1e9, pk.GFlops)
	fmt.Fprintf(w, "MFU: PaLM's (6N + 12·L·H·Q·T) FLOPs per token x tokens / float32 step time / the float32 matmul peak (the higher of the run's first measurement and one right after the step; the decode bound's bandwidth likewise); bf16 columns: bf16 compute on float32 master weights (training), and generation in bf16 as a mixed-precision model generates, against the PyTorch model cast to bf16\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "model\tparams\tdecode tok/s ragen\tpytorch\tratio\tpytorch2\tratio\tstep: bandwidth bound / measured\ttrain s ragen\tpytorch\tratio\tpytorch2\tratio\tMFU ragen (of GFLOP/s)\tbf16 mixed train s ragen\tpytorch autocast\tratio\tbf16 decode tok/s ragen\tpytorch bf16\tratio\t\n")
	var versions peerVersions
	for _, r := range QwenRows() {
		if err := qwenRow(cfg, tw, r, bw, &versions); err != nil {
			return fmt.Errorf("%s: %w", r.Name, err)
		}
		tw.Flush()
	}
	p2 := "not run (set RAGEN_PEER2, as make bench does with the libtorch 2.x chroot: make test-torch2)"
	if versions.second != "" {
		p2 = "PyTorch " + versions.second + " (" + strings.Join(Peer2(), " ") + ")"
	}
	fmt.Fprintf(w, "peers: pytorch = PyTorch %s (%s); pytorch2 = %s; every ratio is that peer's time over ragen's (above 1: ragen faster)\n",
		versions.first, Python(), p2)
	return QwenUpdateMemory(cfg, w)
}

// peerVersions are the PyTorch versions the two peers reported.
type peerVersions struct{ first, second string }

// peer2Cells runs the second peer's decode and training step for a row and
// returns the four cells of its columns (tok/s, ratio, s, ratio), dashes
// when there is no second peer.
func peer2Cells(cfg RunConfig, r QwenRow, reps int, dec, train float64, v *peerVersions) ([4]string, error) {
	cells := [4]string{"-", "-", "-", "-"}
	p2 := Peer2()
	if p2 == nil {
		return cells, nil
	}
	var pd, pt struct {
		Decode float64 `json:"decode_tok_s"`
		Train  float64 `json:"train_step_s"`
		Torch  string  `json:"torch"`
	}
	if err := RunPeerWith(p2, cfg.Dir, "qwen_peer.py", &pd, peerArgs("decode", r, reps)...); err != nil {
		return cells, err
	}
	if err := RunPeerWith(p2, cfg.Dir, "qwen_peer.py", &pt, peerArgs("train", r, reps)...); err != nil {
		return cells, err
	}
	v.second = pd.Torch
	cells[0], cells[1] = fmt.Sprintf("%.1f", pd.Decode), fmt.Sprintf("%.2fx", dec/pd.Decode)
	cells[2], cells[3] = fmt.Sprintf("%.2f", pt.Train), fmt.Sprintf("%.2fx", pt.Train/train)
	return cells, nil
}

func qwenRow(cfg RunConfig, w io.Writer, r QwenRow, bw float64, versions *peerVersions) error {
	reps := max(1, min(cfg.Runs, 2))
	var pd, pt struct {
		Decode float64 `json:"decode_tok_s"`
		Train  float64 `json:"train_step_s"`
		Torch  string  `json:"torch"`
	}
	if err := RunPeer(cfg.Dir, "qwen_peer.py", &pd, peerArgs("decode", r, reps)...); err != nil {
		return err
	}
	if err := RunPeer(cfg.Dir, "qwen_peer.py", &pt, peerArgs("train", r, reps)...); err != nil {
		return err
	}
	m, err := llm.New(r.Cfg, llm.Options{DType: torch.Float32, Device: torch.CPU, Seed: 1})
	if err != nil {
		return err
	}
	defer m.Close()
	prompts := llmbench.Prompts(r.DecB, r.DecP, r.Cfg.VocabSize, 1)
	dec, err := bestDecode(m, prompts, r.DecN, reps)
	if err != nil {
		return err
	}
	stepS, err := DecodeStep(m, prompts, r.DecN, reps)
	if err != nil {
		return err
	}
	// the bandwidth again, right after the decode steps (the higher of the
	// two makes the bound, as for the peak below)
	bw2, err := StreamBandwidth()
	if err != nil {
		return err
	}
	bw = max(bw, bw2)
	d, err := trainStep(m, r, reps)
	if err != nil {
		return err
	}
	m.Close() // before the bf16 model is built; the deferred Close is then a no-op
	versions.first = pd.Torch
	p2, err := peer2Cells(cfg, r, reps, dec, d.Seconds(), versions)
	if err != nil {
		return err
	}
	// the peak again, right after the step: MFU divides by the higher of the
	// run's two measurements, so a slow moment of a shared machine during
	// the first one cannot inflate it
	peak, err := MatmulPeak(2048)
	if err != nil {
		return err
	}
	peak = max(peak, cfg.PeakFLOPs)
	// mixed precision: bf16 compute on float32 master weights, against
	// PyTorch's CPU autocast
	var pb struct {
		Train float64 `json:"train_step_s"`
	}
	if err := RunPeer(cfg.Dir, "qwen_peer.py", &pb, peerArgs("train_bf16", r, reps)...); err != nil {
		return err
	}
	mb, err := llm.New(r.Cfg, llm.Options{DType: torch.Float32, ComputeDType: torch.BFloat16, Device: torch.CPU, Seed: 1})
	if err != nil {
		return err
	}
	defer mb.Close()
	db, err := trainStep(mb, r, reps)
	if err != nil {
		return err
	}
	// bf16 generation (a mixed-precision model generates in bf16, as veRL's
	// rollouts), against the PyTorch model cast to bf16
	var pdb struct {
		Decode float64 `json:"decode_tok_s"`
	}
	if err := RunPeer(cfg.Dir, "qwen_peer.py", &pdb, peerArgs("decode_bf16", r, reps)...); err != nil {
		return err
	}
	decb, err := bestDecode(mb, prompts, r.DecN, reps)
	if err != nil {
		return err
	}
	// bound: B tokens per step at the mean context of the generation
	// the bound: one step reads every weight and the KV cache at the mean context once
	boundS := DecodeBytes(r.Cfg, r.DecB, r.DecP+r.DecN/2) / bw
	mfu := llmbench.TrainFLOPs(r.Cfg, r.TrB, r.TrT) / d.Seconds() / peak
	fmt.Fprintf(w, "%s\t%.0fM\t%.1f\t%.1f\t%.2fx\t%s\t%s\t%.1f ms / %.1f ms = %.0f%%\t%.2f\t%.2f\t%.2fx\t%s\t%s\t%.0f%% of %.0f\t%.2f\t%.2f\t%.2fx\t%.1f\t%.1f\t%.2fx\t\n", r.Name,
		float64(r.Cfg.ParamCount())/1e6, dec, pd.Decode, dec/pd.Decode, p2[0], p2[1], 1e3*boundS, 1e3*stepS, 100*boundS/stepS,
		d.Seconds(), pt.Train, pt.Train/d.Seconds(), p2[2], p2[3], 100*mfu, peak/1e9, db.Seconds(), pb.Train, pb.Train/db.Seconds(),
		decb, pdb.Decode, decb/pdb.Decode)
	return nil
}

// bestDecode is the best tokens/s of reps generations of n tokens after a
// 4-token warm-up.
func bestDecode(m *llm.Model, prompts [][]int, n, reps int) (float64, error) {
	if _, err := llmbench.Decode(m, prompts, 4); err != nil {
		return 0, err
	}
	best := 0.0
	for range reps {
		v, err := llmbench.Decode(m, prompts, n)
		if err != nil {
			return 0, err
		}
		best = max(best, v)
	}
	return best, nil
}

// trainWarmup is the untimed training steps before the timed ones (as
// qwen_peer.py's TRAIN_WARMUP): the first steps grow the heap (gradients,
// then AdamW's state), and on this project's VMs a fresh page costs
// microseconds, so the first two steps run up to twice as long as the
// steady state a training run lives in.
const trainWarmup = 2

// trainStep is the best of reps training steps (after trainWarmup) of m at
// the row's batch.
func trainStep(m *llm.Model, r QwenRow, reps int) (time.Duration, error) {
	tr, err := llmbench.NewTrainer(m, r.TrB, r.TrT, 1e-4)
	if err != nil {
		return 0, err
	}
	defer tr.Close()
	return llmbench.TimeStep(func() error { _, err := tr.Step(); return err }, trainWarmup, reps)
}

// UpdateResult is one RL update's cost in a fresh process.
type UpdateResult struct {
	Seconds    float64 `json:"update_s"`
	RSSBefore  float64 `json:"rss_before_mb"`
	PeakRSSMiB float64 `json:"peak_rss_mb"`
}

// childEnv selects UpdateChild's mode in a re-executed benchall.
const childEnv = "RAGEN_BENCH_UPDATE_CHILD"

// QwenUpdateMemory prints the peak RSS of one update (log-probs and entropy
// of every token, loss, backward, AdamW) at the 0.5B shape, each measured in
// a fresh process, ragen against the PyTorch peer. RAGEN_BENCH_UPDATE sets
// "layers,batch,len;..." (default "2,8,1024;2,2,1024": the peer's naive
// logits would need about 20 GB at 8 x 1024, so it runs the smaller batch),
// or "off".
func QwenUpdateMemory(cfg RunConfig, w io.Writer) error {
	spec := os.Getenv("RAGEN_BENCH_UPDATE")
	switch spec {
	case "off":
		return nil
	case "":
		spec = "2,8,1024;2,2,1024"
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\none update at the 0.5B shape (log-probs + entropy of every token, backward, AdamW), peak RSS, fresh process each:\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "layers\tbatch x len\tragen peak MiB\tragen s\tpytorch peak MiB\tpytorch s\t\n")
	for _, one := range strings.Split(spec, ";") {
		var L, B, T int
		if _, err := fmt.Sscanf(one, "%d,%d,%d", &L, &B, &T); err != nil {
			return fmt.Errorf("RAGEN_BENCH_UPDATE %q: want layers,batch,len;...", spec)
		}
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d,%d,%d,%d", childEnv, L, B, T, cfg.Threads))
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("update child: %w", err)
		}
		var g UpdateResult
		if err := lastJSON(out, &g); err != nil {
			return err
		}
		var p UpdateResult
		r := QwenRow{Cfg: llmbench.Qwen05B(L), TrB: B, TrT: T}
		if B*T <= 2048 || os.Getenv("RAGEN_BENCH_UPDATE_PEER_ALL") != "" {
			if err := RunPeer(cfg.Dir, "qwen_peer.py", &p, peerArgs("update", r, 1)...); err != nil {
				return err
			}
		}
		ps, pm := "-", "not run"
		if p.PeakRSSMiB > 0 {
			ps, pm = fmt.Sprintf("%.1f", p.Seconds), fmt.Sprintf("%.0f", p.PeakRSSMiB)
		}
		fmt.Fprintf(tw, "%d\t%dx%d\t%.0f\t%.1f\t%s\t%s\t\n", L, B, T, g.PeakRSSMiB, g.Seconds, pm, ps)
	}
	return tw.Flush()
}

func lastJSON(out []byte, v any) error {
	var last string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if t := strings.TrimSpace(sc.Text()); t != "" {
			last = t
		}
	}
	if err := json.Unmarshal([]byte(last), v); err != nil {
		return fmt.Errorf("no JSON result in %q: %w", out, err)
	}
	return nil
}

// UpdateChild runs one update when the process was started by
// QwenUpdateMemory, prints its result and reports true; otherwise it does
// nothing and reports false. Call it first in main.
func UpdateChild() bool {
	spec := os.Getenv(childEnv)
	if spec == "" {
		return false
	}
	var L, B, T, threads int
	if _, err := fmt.Sscanf(spec, "%d,%d,%d,%d", &L, &B, &T, &threads); err != nil {
		fmt.Fprintln(os.Stderr, "bad", childEnv, spec)
		os.Exit(2)
	}
	res, err := OneUpdate(llmbench.Qwen05B(L), B, T, threads)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	b, _ := json.Marshal(res)
	fmt.Println(string(b))
	return true
}

// OneUpdate builds a random model of cfg and times one update on a batch
// of b x t random tokens; RSS figures are this process's.
func OneUpdate(cfg llm.Config, b, t, threads int) (UpdateResult, error) {
	torch.SetNumThreads(threads)
	m, err := llm.New(cfg, llm.Options{DType: torch.Float32, Device: torch.CPU, Seed: 1})
	if err != nil {
		return UpdateResult{}, err
	}
	defer m.Close()
	o, err := torch.NewAdamW(m.Trainable(), torch.DefaultAdamW())
	if err != nil {
		return UpdateResult{}, err
	}
	defer o.Close()
	res := UpdateResult{RSSBefore: PeakRSSMiB()}
	s := torch.NewScope()
	defer s.Close()
	ids, pos, attn := llm.PadBatch(s, llmbench.Prompts(b, t, cfg.VocabSize, 3), 0, false, torch.CPU)
	t0 := time.Now()
	lp, ent := m.TokenLogProbs(s, ids, pos, attn, 1, true)
	loss := s.Sub(s.Neg(s.Mean(s.Narrow(lp, 1, 1, int64(t-1)), false)),
		s.MulS(s.Mean(s.Narrow(ent, 1, 1, int64(t-1)), false), 0.001))
	if err := s.Err(); err != nil {
		return res, err
	}
	if err := loss.Backward(nil); err != nil {
		return res, err
	}
	if err := o.Step(1e-6); err != nil {
		return res, err
	}
	res.Seconds = time.Since(t0).Seconds()
	res.PeakRSSMiB = PeakRSSMiB()
	return res, nil
}

// PeakRSSMiB is this process's peak resident set (VmHWM), MiB.
func PeakRSSMiB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return kb / 1024
		}
	}
	return 0
}
