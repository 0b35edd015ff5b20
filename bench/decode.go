package bench

import (
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"ragen/llm"
	"ragen/llm/llmbench"
	"ragen/torch"
)

// DecodeRows are the shapes of the decode table: the 0.5B shape with 2 and
// with 24 layers (RAGEN_BENCH_DECODE=2L or =24L keeps one).
func DecodeRows() []QwenRow {
	rows := []QwenRow{
		{Name: "0.5B-shape 2L", Cfg: llmbench.Qwen05B(2), DecB: 8, DecP: 128, DecN: 64},
		{Name: "0.5B 24L", Cfg: llmbench.Qwen05B(24), DecB: 8, DecP: 128, DecN: 32},
	}
	return selectRows(rows, os.Getenv("RAGEN_BENCH_DECODE"))
}

func init() {
	Register(Comparison{Name: "decode against the bandwidth bound (float32, bf16)", Run: RunDecode})
}

// RunDecode prints decode speed in float32 and in bf16 (weights,
// activations and KV cache: a bf16 model, against the PyTorch model cast to
// bf16) with each step's share of its bandwidth bound: every weight and the
// KV cache at the mean context read once per step, at the copy bandwidth
// measured in the same run (before and after the rows; the higher counts).
func RunDecode(cfg RunConfig, w io.Writer) error {
	reps := max(1, min(cfg.Runs, 2))
	bw, err := StreamBandwidth()
	if err != nil {
		return err
	}
	type result struct {
		name, dt             string
		tok, peer, bound, st float64
	}
	var res []result
	for _, r := range DecodeRows() {
		for _, dt := range []torch.DType{torch.Float32, torch.BFloat16} {
			what, elem := "decode", 4.0
			if dt == torch.BFloat16 {
				what, elem = "decode_bf16", 2
			}
			var pd struct {
				Decode float64 `json:"decode_tok_s"`
			}
			if err := RunPeer(cfg.Dir, "qwen_peer.py", &pd, peerArgs(what, r, reps)...); err != nil {
				return err
			}
			m, err := llm.New(r.Cfg, llm.Options{DType: dt, Device: torch.CPU, Seed: 1})
			if err != nil {
				return err
			}
			prompts := llmbench.Prompts(r.DecB, r.DecP, r.Cfg.VocabSize, 1)
			tok, err := bestDecode(m, prompts, r.DecN, reps)
			if err == nil {
				var st float64
				st, err = DecodeStep(m, prompts, r.DecN, reps)
				res = append(res, result{r.Name, dt.String(), tok, pd.Decode, DecodeBytesOf(r.Cfg, r.DecB, r.DecP+r.DecN/2, elem), st})
			}
			m.Close()
			if err != nil {
				return fmt.Errorf("%s %s: %w", r.Name, dt, err)
			}
		}
	}
	bw2, err := StreamBandwidth()
	if err != nil {
		return err
	}
	bw = max(bw, bw2)
	fmt.Fprintf(w, "batch 8, prompt 128; copy bandwidth %.1f GB/s; bound = bytes of the weights and the KV cache at the mean context / bandwidth\n", bw/1e9)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "model\tdtype\tdecode tok/s ragen\tpytorch\tratio\tstep: bound / measured\t\n")
	for _, x := range res {
		b := x.bound / bw
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.1f\t%.2fx\t%.1f ms / %.1f ms = %.0f%%\t\n", x.name, x.dt, x.tok, x.peer, x.tok/x.peer,
			1e3*b, 1e3*x.st, 100*b/x.st)
	}
	return tw.Flush()
}
