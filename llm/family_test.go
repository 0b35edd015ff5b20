package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"ragen/llm/safetensors"
	"ragen/torch"
)

// familyModel is TinyConfigFor(family, 300) with every parameter (norms
// included) randomised, so that parity checks exercise all of them.
func familyModel(t testing.TB, family string, seed uint64, tied bool) *Model {
	t.Helper()
	cfg, err := TinyConfigFor(family, 300)
	if err != nil {
		t.Fatal(err)
	}
	cfg.TieWordEmbeddings = tied
	cfg.EOSTokenID = IDList{258}
	m, err := New(cfg, Options{DType: torch.Float32, Device: torch.CPU, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	randomize(t, m, seed+100)
	return m
}

// randomize adds noise to norms and biases and widens embeddings and head.
func randomize(t testing.TB, m *Model, seed uint64) {
	t.Helper()
	g, err := torch.NewGenerator(seed, torch.CPU)
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
			case p.Name == nameEmbed || p.Name == nameHead:
				scale = 0.3
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
}

// leftPadded is a batch of two rows, the second left-padded by 4.
func leftPadded(t testing.TB, s *torch.Scope) (ids, pos, attn *torch.Tensor) {
	return batch(t, s, [][]int{{11, 22, 33, 44, 55, 66, 77, 88, 99}, {200, 201, 202, 7, 8}}, true)
}

func maxDiff(a, b []float32) float64 {
	w := 0.0
	for i := range a {
		w = max(w, math.Abs(float64(a[i]-b[i])))
	}
	return w
}

// TestFusedMatchesGo checks the fused C++ forward against the Go forward of
// every family: tied and untied heads, left padding, LoRA on (with nonzero
// B so the deltas count), with and without gradients.
func TestFusedMatchesGo(t *testing.T) {
	for _, fam := range Families() {
		for _, tied := range []bool{true, false} {
			for _, lora := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/tied=%v/lora=%v", fam, tied, lora), func(t *testing.T) {
					m := familyModel(t, fam, 3, tied)
					defer m.Close()
					if lora {
						if err := m.EnableLoRA(LoRAConfig{Rank: 4, Alpha: 8, Targets: []string{"all-linear"}, Seed: 2}); err != nil {
							t.Fatal(err)
						}
						s := torch.NewScope()
						g, _ := torch.NewGenerator(9, torch.CPU)
						torch.NoGrad(func() error {
							for _, p := range m.LoRAParams() {
								s.CopyInto(p.T, s.MulS(s.Randn(g, p.T.Shape(), torch.Float32, torch.CPU), 0.1))
							}
							return nil
						})
						g.Close()
						if err := s.Close(); err != nil {
							t.Fatal(err)
						}
					}
					for _, grad := range []bool{false, true} {
						s := torch.NewScope()
						ids, pos, attn := leftPadded(t, s)
						var fast, slow, hf, hs []float32
						run := func() error {
							fast = s.Float32s(m.fusedForward(s, ids, pos, attn, true))
							slow = s.Float32s(m.goForward(s, ids, pos, attn, true))
							hf = s.Float32s(m.fusedForward(s, ids, pos, attn, false))
							hs = s.Float32s(m.goForward(s, ids, pos, attn, false))
							return s.Err()
						}
						var err error
						if grad {
							err = run()
						} else {
							err = torch.NoGrad(run)
						}
						if err != nil {
							t.Fatal(err)
						}
						if len(fast) != 2*9*300 || len(hf) != 2*9*64 {
							t.Fatalf("sizes %d, %d", len(fast), len(hf))
						}
						d, dh := maxDiff(fast, slow), maxDiff(hf, hs)
						t.Logf("grad=%v: max |fused - go| logits %.2g, hidden %.2g", grad, d, dh)
						if d > 1e-5 || dh > 1e-5 {
							t.Errorf("grad=%v: fused and Go forwards differ: logits %.3g, hidden %.3g", grad, d, dh)
						}
						s.Close()
					}
				})
			}
		}
	}
}

// refRunner returns testdata/ref_run.py, skipping the test when Debian's
// python3-torch is absent.
func refRunner(t *testing.T) string {
	t.Helper()
	if err := exec.Command("/usr/bin/python3", "-c", "import torch").Run(); err != nil {
		t.Skip("PyTorch reference skipped: /usr/bin/python3 with torch not found (make deps-bench installs python3-torch)")
	}
	p, err := filepath.Abs(filepath.Join("testdata", "ref_run.py"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFamilyParity checks Llama 3 (tied head, llama3 RoPE scaling) and
// Qwen3 (untied head) tiny checkpoints, written by Save into a temporary
// folder, against the plain-PyTorch references testdata/ref_llama.py and
// testdata/ref_qwen3.py (one Python process for both): logits within 1e-4
// on a full and a left-padded batch (through Load, both forwards), and
// batched KV-cache greedy decoding equal to full recompute.
func TestFamilyParity(t *testing.T) {
	runner := refRunner(t)
	dir := t.TempDir()
	cases := []struct {
		fam  string
		tied bool
	}{{"llama", true}, {"qwen3", false}}
	in := map[string]any{
		"forward": []map[string]any{
			{
				"ids":       [][]int{{1, 17, 42, 99, 250, 3, 7, 8, 120, 299}, {5, 5, 6, 6, 7, 7, 8, 8, 9, 9}},
				"positions": [][]int{{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
				"attn":      [][]int{{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
			},
			{ // left padding; positions beyond original_max_position_embeddings (64) for llama3 scaling
				"ids":       [][]int{{11, 22, 33, 44, 55, 66}, {0, 0, 0, 200, 201, 202}},
				"positions": [][]int{{90, 91, 92, 93, 94, 95}, {0, 0, 0, 0, 1, 2}},
				"attn":      [][]int{{1, 1, 1, 1, 1, 1}, {0, 0, 0, 1, 1, 1}},
			},
		},
		"greedy":     [][]int{{10, 20, 30}, {200, 100, 50, 25, 12, 6}},
		"greedy_new": 8,
	}
	b, _ := json.Marshal(in)
	inPath := filepath.Join(dir, "inputs.json")
	if err := os.WriteFile(inPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{runner, inPath}
	for _, c := range cases {
		src := familyModel(t, c.fam, 21, c.tied)
		err := src.Save(filepath.Join(dir, c.fam))
		src.Close()
		if err != nil {
			t.Fatal(err)
		}
		args = append(args, c.fam, filepath.Join(dir, c.fam), filepath.Join(dir, c.fam+"_ref"))
	}
	cmd := exec.Command("/usr/bin/python3", args...)
	cmd.Env = append(os.Environ(), "OMP_NUM_THREADS=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ref_run.py: %v\n%s", err, out)
	}
	for _, c := range cases {
		fam := c.fam
		t.Run(fmt.Sprintf("%s/tied=%v", fam, c.tied), func(t *testing.T) {
			m, err := Load(filepath.Join(dir, fam), DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if m.Config().ModelType != fam {
				t.Fatalf("loaded model_type %q", m.Config().ModelType)
			}
			ref, err := safetensors.Open(filepath.Join(dir, fam+"_ref.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			defer ref.Close()
			for ci, c := range in["forward"].([]map[string]any) {
				s := torch.NewScope()
				flat := func(x [][]int) *torch.Tensor {
					var v []int64
					for _, r := range x {
						for _, e := range r {
							v = append(v, int64(e))
						}
					}
					return s.Own(torch.From(v, int64(len(x)), int64(len(x[0]))))
				}
				ids, pos, attn := flat(c["ids"].([][]int)), flat(c["positions"].([][]int)), flat(c["attn"].([][]int))
				var fast, slow []float32
				err := torch.NoGrad(func() error {
					fast = s.Float32s(m.fusedForward(s, ids, pos, attn, true))
					slow = s.Float32s(m.goForward(s, ids, pos, attn, true))
					return s.Err()
				})
				if err != nil {
					t.Fatal(err)
				}
				raw, info, err := ref.Bytes(fmt.Sprintf("case%d", ci))
				if err != nil {
					t.Fatal(err)
				}
				if int64(len(fast)) != info.Numel() {
					t.Fatalf("case %d: %d logits, reference has %d", ci, len(fast), info.Numel())
				}
				want := make([]float32, len(fast))
				for i := range want {
					want[i] = math.Float32frombits(uint32(raw[4*i]) | uint32(raw[4*i+1])<<8 | uint32(raw[4*i+2])<<16 | uint32(raw[4*i+3])<<24)
				}
				df, dg := maxDiff(fast, want), maxDiff(slow, want)
				t.Logf("case %d: max |logit - PyTorch|: fused %.3g, Go %.3g", ci, df, dg)
				if df > 1e-4 || dg > 1e-4 {
					t.Errorf("case %d: max |logit diff| fused %.3g, Go %.3g > 1e-4", ci, df, dg)
				}
				s.Close()
			}
			var exp struct {
				Greedy [][]int `json:"greedy"`
			}
			b, err := os.ReadFile(filepath.Join(dir, fam+"_ref.json"))
			if err == nil {
				err = json.Unmarshal(b, &exp)
			}
			if err != nil {
				t.Fatal(err)
			}
			res, err := m.Generate(context.Background(), nil, in["greedy"].([][]int), GenOptions{MaxNewTokens: 8, IgnoreEOS: true})
			if err != nil {
				t.Fatal(err)
			}
			for i := range res {
				if fmt.Sprint(res[i].IDs) != fmt.Sprint(exp.Greedy[i]) {
					t.Errorf("greedy %d:\n got %v\nwant %v", i, res[i].IDs, exp.Greedy[i])
				}
			}
		})
	}
}
