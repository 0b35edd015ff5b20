package llm

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"ragen/torch"
)

// BenchmarkCheckpointStep is one forward+backward (per-token log-probs and
// entropies through the chunked head, loss = -mean logp) at Qwen2.5-0.5B's
// layer shape with 2 layers (hidden 896, 14/2 heads, intermediate 4864),
// batch 4 x 512, with and without activation checkpointing. It reports the
// process's peak RSS during the steps (Linux: the high-water mark is reset
// after set-up), how far it rose above the RSS at the start, and the RSS
// kept between forward and backward (after-forward, over the start). Run
// one case per process, e.g.
//
//	go test ./llm -run '^$' -bench 'CheckpointStep/lora=false/ckpt=true' -benchtime 1x
//
// The vocabulary is 151,936 as the real model's (tied head;
// RAGEN_CKPT_BENCH_VOCAB overrides it); lora=true
// trains rank-8 adapters on all linear layers (no embedding gradient).
func BenchmarkCheckpointStep(b *testing.B) {
	for _, lora := range []bool{false, true} {
		for _, ck := range []bool{false, true} {
			b.Run(fmt.Sprintf("lora=%v/ckpt=%v", lora, ck), func(b *testing.B) { checkpointStep(b, lora, ck) })
		}
	}
}

func checkpointStep(b *testing.B, lora, ck bool) {
	vocab := 151936
	if v, err := strconv.Atoi(os.Getenv("RAGEN_CKPT_BENCH_VOCAB")); err == nil && v > 0 {
		vocab = v // a small vocabulary leaves the layers' time, which checkpointing changes
	}
	cfg := TinyConfig(vocab)
	cfg.HiddenSize, cfg.IntermediateSize = 896, 4864
	cfg.NumHiddenLayers, cfg.NumAttentionHeads, cfg.NumKeyValueHeads = 2, 14, 2
	cfg.MaxPositionEmbeddings = 1024
	cfg.TieWordEmbeddings = true
	m, err := New(cfg, Options{DType: torch.Float32, Device: torch.CPU, Seed: 1, GradientCheckpointing: ck})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	if lora {
		if err := m.EnableLoRA(LoRAConfig{Rank: 8, Alpha: 16, Targets: ParseTargets("all-linear"), Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	seqs := make([][]int, 4)
	for i := range seqs {
		seqs[i] = make([]int, 512)
		for j := range seqs[i] {
			seqs[i][j] = r.IntN(cfg.VocabSize)
		}
	}
	ts := m.Trainable()
	// the high-water mark from here on: model set-up is not counted
	base, resetOK := rssKiB("VmRSS"), os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	var fwd int64
	b.ResetTimer()
	for range b.N {
		s := torch.NewScope()
		ids, pos, attn := PadBatch(s, seqs, 0, false, torch.CPU)
		lp, _ := m.TokenLogProbs(s, ids, pos, attn, 1, true)
		loss := s.Neg(s.Mean(lp, false))
		if err := s.Err(); err != nil {
			b.Fatal(err)
		}
		fwd = max(fwd, rssKiB("VmRSS")-base)
		if err := loss.Backward(nil); err != nil {
			b.Fatal(err)
		}
		s.Close()
		if err := torch.ZeroGrad(ts); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if resetOK {
		b.ReportMetric(float64(rssKiB("VmHWM"))/1024, "peak-RSS-MiB")
		b.ReportMetric(float64(rssKiB("VmHWM")-base)/1024, "step-peak-over-start-MiB")
		b.ReportMetric(float64(fwd)/1024, "after-forward-MiB")
	}
}

// rssKiB reads a "Vm..." line of /proc/self/status in KiB (0 if absent).
func rssKiB(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return n
		}
	}
	return 0
}
