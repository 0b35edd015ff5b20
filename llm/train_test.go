package llm

import (
	"math"
	"path/filepath"
	"runtime"
	"testing"

	"ragen/llm/safetensors"
	"ragen/torch"
)

// TestTokenLogProbs checks the fused log-prob/entropy op against a float64
// reference computed in Go from the logits:
// logp[b,t] = z[ids[b,t]] - logsumexp(z), z = logits[b,t-1]/T;
// H = logsumexp(z) - Σ softmax(z)·z.
func TestTokenLogProbs(t *testing.T) {
	m := tinyModel(t, 11, false)
	defer m.Close()
	seqs := [][]int{{5, 6, 7, 8, 9, 10, 11}, {100, 200, 3}}
	for _, temp := range []float64{1, 0.7, 1.3} {
		s := torch.NewScope()
		ids, pos, attn := batch(t, s, seqs, false)
		var logits, lp, ent []float32
		err := torch.NoGrad(func() error {
			logits = s.Float32s(m.Forward(s, ids, pos, attn))
			l, e := m.TokenLogProbs(s, ids, pos, attn, temp, true)
			lp, ent = s.Float32s(l), s.Float32s(e)
			return s.Err()
		})
		if err != nil {
			t.Fatal(err)
		}
		B, T, V := 2, 7, 300
		for b := range B {
			for tt := range T {
				wantLP, wantH := 0.0, 0.0
				if tt > 0 {
					z := make([]float64, V)
					mx := math.Inf(-1)
					for v := range V {
						z[v] = float64(logits[(b*T+tt-1)*V+v]) / temp
						mx = math.Max(mx, z[v])
					}
					se := 0.0
					for _, x := range z {
						se += math.Exp(x - mx)
					}
					lse := mx + math.Log(se)
					id := 0
					if tt < len(seqs[b]) {
						id = seqs[b][tt]
					}
					wantLP = z[id] - lse
					pz := 0.0
					for _, x := range z {
						pz += math.Exp(x-lse) * x
					}
					wantH = lse - pz
				}
				if d := math.Abs(float64(lp[b*T+tt]) - wantLP); d > 2e-5 {
					t.Fatalf("T=%v b=%d t=%d: logp %v want %v", temp, b, tt, lp[b*T+tt], wantLP)
				}
				if d := math.Abs(float64(ent[b*T+tt]) - wantH); d > 2e-5 {
					t.Fatalf("T=%v b=%d t=%d: entropy %v want %v", temp, b, tt, ent[b*T+tt], wantH)
				}
			}
		}
		s.Close()
	}
	s := torch.NewScope()
	defer s.Close()
	ids, pos, attn := batch(t, s, seqs, false)
	if _, e := m.TokenLogProbs(s, ids, pos, attn, 0, false); e != nil || s.Err() == nil {
		t.Fatal("temperature 0 accepted")
	}
}

// nonZeroGrads reports the tensors of ts whose gradient is missing or zero.
func zeroGrads(t *testing.T, ts []*torch.Tensor) int {
	t.Helper()
	bad := 0
	for _, p := range ts {
		g, err := p.Grad()
		if err != nil {
			t.Fatal(err)
		}
		if g == nil {
			bad++
			continue
		}
		v, err := torch.Data[float32](g)
		g.Free()
		if err != nil {
			t.Fatal(err)
		}
		nz := false
		for _, x := range v {
			if x != 0 {
				nz = true
				break
			}
		}
		if !nz {
			bad++
		}
	}
	return bad
}

func lossOf(t *testing.T, s *torch.Scope, m *Model, seqs [][]int) *torch.Tensor {
	t.Helper()
	ids, pos, attn := batch(t, s, seqs, false)
	lp, ent := m.TokenLogProbs(s, ids, pos, attn, 1, true)
	mask := s.Cast(attn, torch.Float32)
	// -mean(logp) - 0.01 mean(entropy) over real tokens
	loss := s.Sub(s.Neg(s.Div(s.Sum(s.Mul(lp, mask), false), s.Sum(mask, false))), s.MulS(s.Mean(ent, false), 0.01))
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return loss
}

func TestGradientsFlow(t *testing.T) {
	for _, tied := range []bool{false, true} {
		m := tinyModel(t, 12, tied)
		s := torch.NewScope()
		// every vocabulary id appears so that every embedding row gets a gradient
		seq := make([]int, 300)
		for i := range seq {
			seq[i] = (i * 7) % 300
		}
		loss := lossOf(t, s, m, [][]int{seq, seq[:100]})
		if err := loss.Backward(nil); err != nil {
			t.Fatal(err)
		}
		if n := zeroGrads(t, m.Trainable()); n != 0 {
			t.Fatalf("tied=%v: %d of %d trainable tensors have no gradient", tied, n, len(m.Trainable()))
		}
		s.Close()
		m.Close()
	}
}

func TestNoGradScoring(t *testing.T) {
	m := tinyModel(t, 12, false)
	defer m.Close()
	s := torch.NewScope()
	defer s.Close()
	var lp *torch.Tensor
	torch.NoGrad(func() error {
		ids, pos, attn := batch(t, s, [][]int{{1, 2, 3}}, false)
		lp, _ = m.TokenLogProbs(s, ids, pos, attn, 1, false)
		return nil
	})
	if s.Err() != nil || lp.RequiresGrad() {
		t.Fatalf("no-grad log-probs require grad (%v)", s.Err())
	}
}

func TestLoRA(t *testing.T) {
	m := tinyModel(t, 13, false)
	defer m.Close()
	s := torch.NewScope()
	defer s.Close()
	seqs := [][]int{{1, 2, 3, 4, 5, 6, 7, 8}}
	ids, pos, attn := batch(t, s, seqs, false)
	var before []float32
	torch.NoGrad(func() error { before = s.Float32s(m.Forward(s, ids, pos, attn)); return nil })

	if err := m.EnableLoRA(LoRAConfig{Rank: 4, Alpha: 8, Targets: []string{"bogus"}}); err == nil {
		t.Fatal("bad target accepted")
	}
	if err := m.EnableLoRA(LoRAConfig{Rank: 4, Alpha: 8, Targets: ParseTargets("all-linear"), Seed: 1}); err != nil {
		t.Fatal(err)
	}
	// 7 targets x (A,B) x 2 layers
	if n := len(m.Trainable()); n != 28 {
		t.Fatalf("%d trainable tensors with LoRA, want 28", n)
	}
	if n := len(m.LoRAParams()); n != 28 {
		t.Fatalf("%d named LoRA params", n)
	}
	// B = 0: outputs unchanged
	var same []float32
	torch.NoGrad(func() error { same = s.Float32s(m.Forward(s, ids, pos, attn)); return nil })
	for i := range before {
		if before[i] != same[i] {
			t.Fatalf("fresh LoRA changed logit %d: %v -> %v", i, before[i], same[i])
		}
	}
	baseBefore := paramValues(t, m)
	opt, err := torch.NewAdamW(m.Trainable(), torch.AdamWConfig{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8})
	if err != nil {
		t.Fatal(err)
	}
	defer opt.Close()
	for step := range 3 {
		ls := torch.NewScope()
		loss := lossOf(t, ls, m, [][]int{{9, 8, 7, 6, 5, 4, 3, 2, 1}})
		torch.ZeroGrad(m.Trainable())
		if err := loss.Backward(nil); err != nil {
			t.Fatal(err)
		}
		if step == 2 { // after B moved, every adapter gets a gradient
			if n := zeroGrads(t, m.Trainable()); n != 0 {
				t.Fatalf("%d adapters without gradient", n)
			}
		}
		if err := opt.Step(1e-2); err != nil {
			t.Fatal(err)
		}
		ls.Close()
	}
	// base weights did not move and have no gradients
	for name, v := range paramValues(t, m) {
		for i := range v {
			if v[i] != baseBefore[name][i] {
				t.Fatalf("base weight %s moved", name)
			}
		}
	}
	for _, p := range m.base() {
		if g, _ := p.Grad(); g != nil {
			g.Free()
			t.Fatal("base weight has a gradient")
		}
	}
	var adapted []float32
	torch.NoGrad(func() error { adapted = s.Float32s(m.Forward(s, ids, pos, attn)); return nil })
	// export merges: reloading the saved model gives the adapter forward
	dir := t.TempDir()
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	m2, err := Load(dir, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	var merged []float32
	torch.NoGrad(func() error { merged = s.Float32s(m2.Forward(s, ids, pos, attn)); return nil })
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	moved, worst := 0.0, 0.0
	for i := range adapted {
		moved = max(moved, math.Abs(float64(adapted[i]-before[i])))
		worst = max(worst, math.Abs(float64(adapted[i]-merged[i])))
	}
	if moved < 1e-3 {
		t.Fatalf("LoRA training did not change the outputs (%v)", moved)
	}
	if worst > 1e-4 {
		t.Fatalf("merged export differs from the adapter forward by %v", worst)
	}
	// MergeLoRA in place gives the same and makes the base trainable again
	if err := m.MergeLoRA(); err != nil {
		t.Fatal(err)
	}
	var inPlace []float32
	torch.NoGrad(func() error { inPlace = s.Float32s(m.Forward(s, ids, pos, attn)); return nil })
	for i := range inPlace {
		if math.Abs(float64(inPlace[i]-adapted[i])) > 1e-4 {
			t.Fatalf("MergeLoRA logit %d: %v vs %v", i, inPlace[i], adapted[i])
		}
	}
	if len(m.Trainable()) != len(m.base()) {
		t.Fatal("base not trainable after merge")
	}
}

func TestCritic(t *testing.T) {
	actor := tinyModel(t, 14, false)
	defer actor.Close()
	c, err := NewCritic(actor)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := torch.NewScope()
	defer s.Close()
	ids, pos, attn := batch(t, s, [][]int{{1, 2, 3, 4}, {5, 6}}, false)
	v := c.Values(s, ids, pos, attn)
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if sh := v.Shape(); len(sh) != 2 || sh[0] != 2 || sh[1] != 4 {
		t.Fatalf("values shape %v", sh)
	}
	// values = w·h + b from the trunk's hidden states (hand check on one position)
	h := s.Float32s(c.Trunk().Hidden(s, ids, pos, attn))
	w, _ := c.Head()
	wv := s.Float32s(w)
	vals := s.Float32s(v)
	want := 0.0
	for e := range 64 {
		want += float64(h[e]) * float64(wv[e])
	}
	if math.Abs(want-float64(vals[0])) > 1e-5 {
		t.Fatalf("V[0,0] = %v, want %v", vals[0], want)
	}
	loss := s.Mean(s.Square(v), false)
	if err := loss.Backward(nil); err != nil {
		t.Fatal(err)
	}
	// the trunk's embedding rows of unused ids get no gradient; check the rest
	ts := c.Trainable()
	if n := zeroGrads(t, ts[1:]); n != 0 {
		t.Fatalf("%d critic tensors without gradient", n)
	}
	// the critic trunk is a copy: training it leaves the actor alone
	if c.Trunk().embed == actor.embed {
		t.Fatal("critic shares the actor's tensors")
	}
	// the trunk's hidden states equal the actor's
	ha := s.Float32s(actor.Hidden(s, ids, pos, attn))
	for i := range ha {
		if ha[i] != h[i] {
			t.Fatalf("trunk hidden %d: %v vs actor %v", i, h[i], ha[i])
		}
	}
	// Save/LoadCritic round trip gives the same values
	dir := t.TempDir()
	if err := c.Save(dir); err != nil {
		t.Fatal(err)
	}
	names, err := ListTensors(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if n == "lm_head.weight" {
			t.Fatal("critic folder has an lm_head")
		}
	}
	c2, err := LoadCritic(dir, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	v2 := s.Float32s(c2.Values(s, ids, pos, attn))
	for i := range vals {
		if vals[i] != v2[i] {
			t.Fatalf("reloaded value %d: %v vs %v", i, v2[i], vals[i])
		}
	}
	if _, err := LoadCritic("testdata/tiny", DefaultOptions()); err == nil {
		t.Fatal("a causal LM folder loaded as a critic")
	}
}

func TestCloneAndCopy(t *testing.T) {
	m := tinyModel(t, 15, false)
	defer m.Close()
	c, err := m.Clone()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a, b := paramValues(t, m), paramValues(t, c)
	for k := range a {
		for i := range a[k] {
			if a[k][i] != b[k][i] {
				t.Fatalf("clone differs at %s", k)
			}
		}
	}
	o := tinyModel(t, 16, false)
	defer o.Close()
	if err := c.CopyWeightsFrom(o); err != nil {
		t.Fatal(err)
	}
	if paramValues(t, c)["model.norm.weight"][0] != paramValues(t, o)["model.norm.weight"][0] {
		t.Fatal("CopyWeightsFrom did not copy")
	}
	if paramValues(t, m)["model.norm.weight"][0] == paramValues(t, o)["model.norm.weight"][0] {
		t.Fatal("clone shares storage with the original")
	}
	tied := tinyModel(t, 16, true)
	defer tied.Close()
	if err := c.CopyWeightsFrom(tied); err == nil {
		t.Fatal("copy between tied and untied accepted")
	}
}

func TestLiveTensors(t *testing.T) {
	start := torch.Live()
	m := tinyModel(t, 17, false)
	s := torch.NewScope()
	ids, pos, attn := batch(t, s, [][]int{{1, 2, 3}}, false)
	m.Forward(s, ids, pos, attn)
	m.TokenLogProbs(s, ids, pos, attn, 1, true)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	mid := torch.Live()
	if _, err := m.Generate(t.Context(), nil, [][]int{{1, 2}, {3, 4, 5, 6}, {7}, {8}}, GenOptions{MaxNewTokens: 9, Temperature: 1, TopK: 5, TopP: 0.9, IgnoreEOS: true, StopIDs: []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}}); err != nil {
		t.Fatal(err)
	}
	if got := torch.Live(); got != mid {
		t.Fatalf("Generate leaked %d tensors", got-mid)
	}
	c, err := NewCritic(m)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := m.EnableLoRA(LoRAConfig{Rank: 2, Alpha: 4, Targets: []string{"q_proj", "down_proj"}}); err != nil {
		t.Fatal(err)
	}
	m.Close()
	if got := torch.Live(); got != start {
		t.Fatalf("live tensors %d -> %d after Close", start, got)
	}
	runtime.GC()
	runtime.GC()
	if n := torch.Leaked(); n != 0 {
		t.Fatalf("%d tensors were garbage-collected without being freed", n)
	}
}

// A closed model reports errors instead of panicking.
func TestUseAfterClose(t *testing.T) {
	m := tinyModel(t, 33, false)
	m.Close()
	m.Close() // twice is fine
	s := torch.NewScope()
	defer s.Close()
	ids, pos, attn := batch(t, s, [][]int{{1, 2}}, false)
	if m.Forward(s, ids, pos, attn) != nil || s.Err() == nil {
		t.Fatal("Forward on a closed model succeeded")
	}
	if _, err := m.Generate(t.Context(), nil, [][]int{{1}}, GenOptions{MaxNewTokens: 2}); err == nil {
		t.Fatal("Generate on a closed model succeeded")
	}
	if err := m.Save(t.TempDir()); err == nil {
		t.Fatal("Save of a closed model succeeded")
	}
}

func TestSaveLoadLoRA(t *testing.T) {
	m := tinyModel(t, 35, false)
	defer m.Close()
	if err := m.SaveLoRA(t.TempDir()); err == nil {
		t.Fatal("SaveLoRA without LoRA succeeded")
	}
	if err := m.EnableLoRA(LoRAConfig{Rank: 2, Alpha: 4, Targets: []string{"v_proj", "q_proj", "up_proj"}, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	// give B non-zero values so the adapters matter
	s := torch.NewScope()
	defer s.Close()
	g, _ := torch.NewGenerator(5, torch.CPU)
	defer g.Close()
	torch.NoGrad(func() error {
		for _, p := range m.LoRAParams() {
			s.CopyInto(p.T, s.Randn(g, p.T.Shape(), torch.Float32, torch.CPU))
		}
		return nil
	})
	dir := t.TempDir()
	if err := m.SaveLoRA(dir); err != nil {
		t.Fatal(err)
	}
	base := tinyModel(t, 35, false) // same base weights
	defer base.Close()
	if err := base.LoadLoRA(dir); err != nil {
		t.Fatal(err)
	}
	cfg, on := base.LoRAConfig()
	if !on || cfg.Rank != 2 || cfg.Alpha != 4 {
		t.Fatalf("loaded config %+v %v", cfg, on)
	}
	ids, pos, attn := batch(t, s, [][]int{{1, 2, 3, 4}}, false)
	var a, b []float32
	torch.NoGrad(func() error {
		a = s.Float32s(m.Forward(s, ids, pos, attn))
		b = s.Float32s(base.Forward(s, ids, pos, attn))
		return s.Err()
	})
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("logit %d: %v vs reloaded %v", i, a[i], b[i])
		}
	}
	names, _ := safetensors.Open(filepath.Join(dir, AdapterWeightsFile))
	defer names.Close()
	if _, ok := names.Header.Lookup("base_model.model.model.layers.1.mlp.up_proj.lora_B.weight"); !ok {
		t.Fatalf("PEFT names missing: %v", names.Header.Tensors)
	}
}
