package algo

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"
)

// FuzzNames fuzzes the three name parsers (estimator, loss_agg_mode, KL
// type): every name either resolves or returns the matching sentinel error
// with the list of valid names, and never panics.
func FuzzNames(f *testing.F) {
	for _, s := range []string{"gae", "grpo", "opo", "token-mean", "seq-mean-token-sum-norm", "low_var_kl", "k3+", "low-var-kl", "full", "+", "", "kl++"} {
		f.Add(s)
	}
	one := ones(1, 1)
	f.Fuzz(func(t *testing.T, name string) {
		if fn, err := Estimator(name); err != nil {
			if !errors.Is(err, ErrUnknownEstimator) || !strings.Contains(err.Error(), "grpo") {
				t.Fatalf("Estimator(%q): %v", name, err)
			}
		} else if fn == nil {
			t.Fatalf("Estimator(%q): nil func without error", name)
		}
		if _, err := AggLoss(one, one, name); err != nil && !errors.Is(err, ErrUnknownLossAggMode) {
			t.Fatalf("AggLoss(%q): %v", name, err)
		}
		if v, g, err := KLPenalty(one, one, name); err != nil {
			if !errors.Is(err, ErrUnknownKLType) {
				t.Fatalf("KLPenalty(%q): %v", name, err)
			}
		} else if v.Data[0] != 0 || g.Data[0] != g.Data[0] {
			t.Fatalf("KLPenalty(%q) at lp = ref: value %v grad %v", name, v.Data[0], g.Data[0])
		}
	})
}

// floats decodes data into n float64 values in [−8, 8] (repeating data).
func floats(data []byte, n int) []float64 {
	out := make([]float64, n)
	if len(data) == 0 {
		return out
	}
	for k := range out {
		var b [2]byte
		b[0] = data[(2*k)%len(data)]
		b[1] = data[(2*k+1)%len(data)]
		out[k] = float64(int16(binary.LittleEndian.Uint16(b[:]))) / 4096
	}
	return out
}

// FuzzLosses feeds arbitrary finite inputs to the estimators and losses:
// nothing panics, and finite inputs give finite losses and gradients (or a
// clean error for too few tokens).
func FuzzLosses(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9}, uint8(2), uint8(3), uint8(0x5a))
	f.Add([]byte{0xff, 0x7f, 0, 0x80}, uint8(1), uint8(1), uint8(0))
	f.Add([]byte{}, uint8(4), uint8(4), uint8(0xff))
	f.Fuzz(func(t *testing.T, data []byte, bb, tb, maskBits uint8) {
		B, T := int(bb%5)+1, int(tb%6)+1
		n := B * T
		x := floats(data, 5*n)
		mk := func(k int) Mat { return Mat{B: B, T: T, Data: x[k*n : (k+1)*n]} }
		r, v, lp, old, adv := mk(0), mk(1), mk(2), mk(3), mk(4)
		m := NewMat(B, T)
		for k := range m.Data {
			if (maskBits>>(k%8))&1 == 1 || k%3 == 0 {
				m.Data[k] = 1
			}
		}
		uids := make([]int, B)
		for i := range uids {
			uids[i] = i % 2
		}
		finite := func(what string, vals ...float64) {
			for _, v := range vals {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("%s: non-finite %v", what, v)
				}
			}
		}
		for _, name := range EstimatorNames() {
			fn, _ := Estimator(name)
			out, _, err := fn(AdvantageInput{Rewards: r, Values: v, Mask: m, UIDs: uids, RewardBaselines: make([]float64, B)}, DefaultAdvantageConfig())
			if err != nil {
				if !errors.Is(err, ErrTooFewTokens) {
					t.Fatalf("%s: %v", name, err)
				}
				continue
			}
			finite(name, out.Advantages.Data...)
			finite(name+" returns", out.Returns.Data...)
		}
		for _, mode := range LossAggModes() {
			cfg := DefaultActorLossConfig()
			cfg.Policy.LossAggMode = mode
			cfg.UseKLLoss, cfg.KLLossType, cfg.KLLossCoef = true, "low_var_kl", 0.1
			o, _, err := ActorLoss(ActorLossInput{LogProb: lp, OldLogProb: old, Advantages: adv, Mask: m, Entropy: v, RefLogProb: r}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			finite("actor loss", o.Loss)
			finite("actor grad", o.GradLogProb.Data...)
			vc := DefaultValueLossConfig()
			vc.LossAggMode = mode
			l, g, _, err := ValueLoss(v, old, r, m, vc)
			if err != nil {
				t.Fatal(err)
			}
			finite("value loss", l)
			finite("value grad", g.Data...)
		}
	})
}
