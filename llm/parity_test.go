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

// Parity fixtures: testdata/tiny is a tiny untied GQA model saved by this
// package (tinyModel(7, false)); testdata/parity_ref.py, a plain-PyTorch
// Qwen2 (no transformers) run with Debian's python3-torch, wrote
// testdata/parity_expected.{safetensors,json} from it. Regenerate with
//
//	go test -run TestParity ./llm -update-fixtures
type parityInputs struct {
	Forward []struct {
		IDs       [][]int `json:"ids"`
		Positions [][]int `json:"positions"`
		Attn      [][]int `json:"attn"`
	} `json:"forward"`
	Greedy    [][]int `json:"greedy"`
	GreedyNew int     `json:"greedy_new"`
}

func writeParityFixtures(t *testing.T) {
	m := tinyModel(t, 7, false)
	defer m.Close()
	if err := m.Save("testdata/tiny"); err != nil {
		t.Fatal(err)
	}
	in := map[string]any{
		"forward": []map[string]any{
			{ // two full rows
				"ids":       [][]int{{1, 17, 42, 99, 250, 3, 7, 8, 120, 299, 0, 64}, {5, 5, 5, 6, 6, 6, 7, 7, 7, 8, 8, 8}},
				"positions": [][]int{{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}},
				"attn":      [][]int{{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
			},
			{ // left padding: row 1 has 5 pads, positions start at its first real token
				"ids":       [][]int{{11, 22, 33, 44, 55, 66, 77, 88}, {0, 0, 0, 0, 0, 200, 201, 202}},
				"positions": [][]int{{0, 1, 2, 3, 4, 5, 6, 7}, {0, 0, 0, 0, 0, 0, 1, 2}},
				"attn":      [][]int{{1, 1, 1, 1, 1, 1, 1, 1}, {0, 0, 0, 0, 0, 1, 1, 1}},
			},
		},
		"greedy":     [][]int{{10, 20, 30}, {200, 100, 50, 25, 12, 6}},
		"greedy_new": 24,
	}
	b, _ := json.MarshalIndent(in, "", " ")
	if err := os.WriteFile("testdata/parity_inputs.json", b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/usr/bin/python3", "testdata/parity_ref.py", "testdata/tiny", "testdata/parity_expected")
	cmd.Env = append(os.Environ(), "OMP_NUM_THREADS=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("parity_ref.py: %v\n%s", err, out)
	}
}

func TestParity(t *testing.T) {
	if *updateFixtures {
		writeParityFixtures(t)
	}
	var in parityInputs
	b, err := os.ReadFile("testdata/parity_inputs.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatal(err)
	}
	var exp struct {
		Greedy [][]int `json:"greedy"`
	}
	b, err = os.ReadFile("testdata/parity_expected.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &exp); err != nil {
		t.Fatal(err)
	}
	ref, err := safetensors.Open("testdata/parity_expected.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	opt := testOptions(t)
	m, err := Load(filepath.Join("testdata", "tiny"), opt)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for ci, c := range in.Forward {
		s := torch.NewScope()
		B, T := len(c.IDs), len(c.IDs[0])
		flat := func(x [][]int) *torch.Tensor {
			v := make([]int64, 0, B*T)
			for _, r := range x {
				for _, e := range r {
					v = append(v, int64(e))
				}
			}
			tt := s.Own(torch.From(v, int64(B), int64(T)))
			if opt.Device.IsCUDA() {
				tt = s.To(tt, torch.Int64, opt.Device)
			}
			return tt
		}
		var got []float32
		err := torch.NoGrad(func() error {
			got = s.Float32s(m.Forward(s, flat(c.IDs), flat(c.Positions), flat(c.Attn)))
			return s.Err()
		})
		if err != nil {
			t.Fatal(err)
		}
		raw, info, err := ref.Bytes(fmt.Sprintf("case%d", ci))
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(got)) != info.Numel() {
			t.Fatalf("case %d: %d logits, reference has %d", ci, len(got), info.Numel())
		}
		worst := 0.0
		for i := range got {
			want := math.Float32frombits(uint32(raw[4*i]) | uint32(raw[4*i+1])<<8 | uint32(raw[4*i+2])<<16 | uint32(raw[4*i+3])<<24)
			worst = max(worst, math.Abs(float64(got[i]-want)))
		}
		t.Logf("case %d: max |logit diff| = %.3g", ci, worst)
		tol := 1e-4
		if opt.Device.IsCUDA() {
			tol = 1e-3 // GPU kernels reduce in another order
		}
		if worst > tol {
			t.Errorf("case %d: max |logit diff| %.3g > %g", ci, worst, tol)
		}
		s.Close()
	}
	// greedy, batched with different prompt lengths, equals PyTorch's one-by-one full recompute
	res, err := m.Generate(context.Background(), nil, in.Greedy, GenOptions{MaxNewTokens: in.GreedyNew, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range res {
		if fmt.Sprint(res[i].IDs) != fmt.Sprint(exp.Greedy[i]) {
			t.Errorf("greedy %d:\n got %v\nwant %v", i, res[i].IDs, exp.Greedy[i])
		}
	}
}
