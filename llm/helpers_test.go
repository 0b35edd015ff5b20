package llm

import (
	"flag"
	"os"
	"testing"

	"ragen/torch"
)

var updateFixtures = flag.Bool("update-fixtures", false, "rewrite testdata/tiny and the PyTorch reference outputs")

func TestMain(m *testing.M) {
	flag.Parse()
	torch.SetNumThreads(1)
	torch.SetLeakCheck(true)
	os.Exit(m.Run())
}

// tinyModel is TinyConfig(300) with every parameter (biases and norms
// included) randomised, so that parity checks exercise all of them.
func tinyModel(t testing.TB, seed uint64, tied bool) *Model {
	t.Helper()
	cfg := TinyConfig(300)
	cfg.TieWordEmbeddings = tied
	eos := 258
	cfg.EOSTokenID = IDList{eos}
	m, err := New(cfg, Options{DType: torch.Float32, Device: torch.CPU, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	g, err := torch.NewGenerator(seed+100, torch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	s := torch.NewScope()
	defer s.Close()
	err = torch.NoGrad(func() error {
		for _, p := range m.Params() {
			scale := 0.0
			switch {
			case hasSuffix(p.Name, "norm.weight"):
				scale = 0.1
			case hasSuffix(p.Name, ".bias"):
				scale = 0.02
			case p.Name == "model.embed_tokens.weight" || p.Name == "lm_head.weight":
				scale = 0.3 // logits of a few units: no near-ties for greedy, yet spread for sampling
			}
			if scale != 0 {
				s.CopyInto(p.T, s.Add(p.T, s.MulS(s.Randn(g, p.T.Shape(), torch.Float32, torch.CPU), scale)))
			}
		}
		return s.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// batch builds (B,T) ids, positions and attention from sequences.
func batch(t testing.TB, s *torch.Scope, seqs [][]int, left bool) (ids, pos, attn *torch.Tensor) {
	t.Helper()
	ids, pos, attn = PadBatch(s, seqs, 0, left, torch.CPU)
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return
}
