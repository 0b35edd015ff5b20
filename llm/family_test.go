package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"ragen/internal/torch/fused"
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

// enableNoisyLoRA turns on rank-4 LoRA on every linear layer with random
// nonzero A and B, so that the adapters' deltas count.
func enableNoisyLoRA(t testing.TB, m *Model) {
	t.Helper()
	if err := m.EnableLoRA(LoRAConfig{Rank: 4, Alpha: 8, Targets: []string{"all-linear"}, Seed: 2}); err != nil {
		t.Fatal(err)
	}
	g, err := torch.NewGenerator(9, torch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	s := torch.NewScope()
	err = torch.NoGrad(func() error {
		for _, p := range m.LoRAParams() {
			s.CopyInto(p.T, s.MulS(s.Randn(g, p.T.Shape(), torch.Float32, torch.CPU), 0.1))
		}
		return s.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// fusedForward is Forward (head) or Hidden over the fused C++ forward
// without a KV cache, to compare with the Go forward.
func (m *Model) fusedForward(s *torch.Scope, ids, positions, attn *torch.Tensor, head bool) *torch.Tensor {
	if ids != nil && ids.Valid() && ids.Dim() == 2 {
		if err := m.ensureRope(int(ids.Size(1))); err != nil {
			s.Fail(fmt.Errorf("llm: rotary table: %w", err))
			return nil
		}
	}
	kb := s.KeyBias(attn)
	if kb != nil && kb.Device() != m.opt.Device {
		kb = s.To(kb, torch.Float32, m.opt.Device)
	}
	return fused.Forward(s, m.weights(head), m.shape(), fused.ForwardArgs{
		IDs: ids, Pos: positions, Cos: m.cos, Sin: m.sin, KeyBias: kb,
	})
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
					m.referenceOps = true // the Go forward from elementary ops
					if lora {
						enableNoisyLoRA(t, m)
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

// TestFusedOpsMatchReference holds the training forward's fused RMSNorm,
// RoPE, attention and SwiGLU (package torch) to the same forward composed
// from elementary ops: logits and every gradient, for every family, tied or
// untied, LoRA off or on, in float32 and in bf16 mixed precision. The batch
// is longer than the attention's block of query times and left-padded past
// it, so some blocks hold only padded queries (which attend every key
// evenly), others skip the keys causality hides; the loss weights every
// position's logits, padding included.
func TestFusedOpsMatchReference(t *testing.T) {
	long := make([]int, 300)
	for i := range long {
		long[i] = (i*37 + 5) % 300
	}
	seqs := [][]int{long, long[:100]}
	type variant struct {
		name           string
		fam            string
		tied, lora, bf bool
	}
	var vs []variant
	for _, fam := range Families() {
		for _, tied := range []bool{true, false} {
			for _, lora := range []bool{false, true} {
				vs = append(vs, variant{fmt.Sprintf("%s/tied=%v/lora=%v", fam, tied, lora), fam, tied, lora, false})
			}
		}
		vs = append(vs, variant{fam + "/bf16-mixed", fam, true, false, true})
	}
	for _, v := range vs {
		t.Run(v.name, func(t *testing.T) {
			m := familyModel(t, v.fam, 4, v.tied)
			defer m.Close()
			if v.lora {
				enableNoisyLoRA(t, m)
			}
			if v.bf {
				m.opt.ComputeDType = torch.BFloat16
			}
			ts := m.Trainable()
			names := make([]string, len(ts))
			for i := range ts {
				names[i] = fmt.Sprint("trainable ", i, " ", ts[i].Shape())
			}
			var logits [2][]float32
			run := func(i int, ref bool) [][]float32 {
				m.referenceOps = ref
				defer func() { m.referenceOps = false }()
				g, err := torch.NewGenerator(5, torch.CPU)
				if err != nil {
					t.Fatal(err)
				}
				defer g.Close()
				grads, _ := gradsWith(t, ts, func(s *torch.Scope) *torch.Tensor {
					ids, pos, attn := batch(t, s, seqs, true)
					z := s.Cast(m.forward(s, ids, pos, attn, true), torch.Float32) // (B,T,V)
					logits[i] = s.Float32s(z)
					r := s.Randn(g, z.Shape(), torch.Float32, torch.CPU)
					loss := s.MulS(s.Sum(s.Mul(z, r), false), 1e-3)
					if err := s.Err(); err != nil {
						t.Fatal(err)
					}
					return loss
				})
				return grads
			}
			ref, fast := run(0, true), run(1, false)
			top := 0.0
			for _, x := range logits[0] {
				top = max(top, math.Abs(float64(x)))
			}
			// float32: the fused ops sum in other orders (measured up to 1e-5 of
			// the largest gradient entry); bf16: they round once where the
			// composition rounds per op (measured about 1%)
			tol, gtol := 1e-5, 5e-5
			if v.bf {
				tol, gtol = 3e-2, 3e-2
			}
			d := maxDiff(logits[0], logits[1])
			t.Logf("max |fused - reference| logits %.2g of %.2g", d, top)
			if d > tol*top {
				t.Errorf("logits differ by %.3g (largest %.3g)", d, top)
			}
			compareGrads(t, names, ref, fast, gtol)
		})
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

// TestFamilyParity checks Llama 3 (tied head, llama3 RoPE scaling), Qwen3
// and Qwen2 (untied heads) tiny checkpoints, written by Save into a
// temporary folder, against the plain-PyTorch references
// testdata/ref_llama.py, ref_qwen3.py and parity_ref.py (one Python
// process for all): logits within 1e-4
// on a full and a left-padded batch (through Load, both forwards), and
// batched KV-cache greedy decoding equal to full recompute.
func TestFamilyParity(t *testing.T) {
	runner := refRunner(t)
	dir := t.TempDir()
	cases := []struct {
		fam  string
		tied bool
	}{{"llama", true}, {"qwen3", false}, {"qwen2", false}}
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

// Real config.json files parse, validate and give the published parameter
// counts (tied embeddings counted once). Llama-3.2-1B: embed 128256·2048 +
// 16 layers · (2·2048² + 2·2048·512 + 3·2048·8192 + 2·2048) + 2048 =
// 1,235,814,400. Qwen3-0.6B: embed 151936·1024 + 28 layers · (1024·2048 +
// 2·1024·1024 + 2048·1024 + 2·128 + 3·1024·3072 + 2·1024) + 1024 =
// 596,049,920.
func TestFamilyConfigs(t *testing.T) {
	llama := `{"architectures":["LlamaForCausalLM"],"attention_bias":false,"attention_dropout":0.0,
	"bos_token_id":128000,"eos_token_id":[128001,128008,128009],"head_dim":64,"hidden_act":"silu",
	"hidden_size":2048,"initializer_range":0.02,"intermediate_size":8192,"max_position_embeddings":131072,
	"mlp_bias":false,"model_type":"llama","num_attention_heads":32,"num_hidden_layers":16,
	"num_key_value_heads":8,"pretraining_tp":1,"rms_norm_eps":1e-05,"rope_scaling":{"factor":32.0,
	"high_freq_factor":4.0,"low_freq_factor":1.0,"original_max_position_embeddings":8192,"rope_type":"llama3"},
	"rope_theta":500000.0,"tie_word_embeddings":true,"torch_dtype":"bfloat16","transformers_version":"4.45.0.dev0",
	"use_cache":true,"vocab_size":128256}`
	qwen3 := `{"architectures":["Qwen3ForCausalLM"],"attention_bias":false,"attention_dropout":0.0,
	"bos_token_id":151643,"eos_token_id":151645,"head_dim":128,"hidden_act":"silu","hidden_size":1024,
	"initializer_range":0.02,"intermediate_size":3072,"max_position_embeddings":40960,"max_window_layers":28,
	"model_type":"qwen3","num_attention_heads":16,"num_hidden_layers":28,"num_key_value_heads":8,
	"rms_norm_eps":1e-06,"rope_scaling":null,"rope_theta":1000000,"sliding_window":null,
	"tie_word_embeddings":true,"torch_dtype":"bfloat16","transformers_version":"4.51.0","use_cache":true,
	"use_sliding_window":false,"vocab_size":151936}`
	for _, c := range []struct {
		json  string
		count int64
	}{{llama, 1_235_814_400}, {qwen3, 596_049_920}} {
		cfg, err := ParseConfig([]byte(c.json))
		if err != nil {
			t.Fatal(err)
		}
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		if n := cfg.ParamCount(); n != c.count {
			t.Errorf("%s: %d parameters, want %d", cfg.ModelType, n, c.count)
		}
		// round trip through MarshalConfig keeps rope_scaling and pretraining_tp
		b, err := MarshalConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseConfig(b)
		if err != nil || back.Validate() != nil || fmt.Sprint(back.RopeScaling) != fmt.Sprint(cfg.RopeScaling) ||
			string(back.Extra["pretraining_tp"]) != string(cfg.Extra["pretraining_tp"]) {
			t.Errorf("%s: config round trip: %v\n%s", cfg.ModelType, err, b)
		}
	}
	// the llama3 scaling keeps short wavelengths, slows long ones by factor
	cfg, _ := ParseConfig([]byte(llama))
	inv, plain := llamaInvFreq(cfg), ropeInvFreq(cfg)
	if inv[0] != plain[0] || math.Abs(inv[31]-plain[31]/32) > 1e-18 {
		t.Errorf("llama3 inv freq: %g vs %g, %g vs %g/32", inv[0], plain[0], inv[31], plain[31])
	}
	for _, bad := range []struct{ json, want string }{
		{`{"model_type":"llama","rope_scaling":{"rope_type":"yarn","factor":4}}`, `rope_type "yarn" is not supported`},
		{`{"model_type":"llama","mlp_bias":true}`, "mlp_bias true is not supported"},
		{`{"model_type":"qwen3","attention_bias":true}`, "attention_bias true is not supported for qwen3"},
		{`{"model_type":"qwen2","rope_scaling":{"rope_type":"llama3"}}`, "rope_scaling is not supported for qwen2"},
		{`{"model_type":"gemma"}`, `model_type "gemma" is not supported (valid: [llama qwen2 qwen3])`},
	} {
		cfg, err := ParseConfig([]byte(bad.json))
		if err == nil {
			err = cfg.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: got %v, want %q", bad.json, err, bad.want)
		}
	}
}

// LoRA and the critic work on the new families: adapters get gradients
// through the Go forward while the base stays frozen, and a critic built
// from the actor has the family's trunk and gives one value per token.
func TestFamilyLoRAAndCritic(t *testing.T) {
	for _, fam := range []string{"llama", "qwen3"} {
		m := familyModel(t, fam, 5, fam == "llama")
		if err := m.EnableLoRA(LoRAConfig{Rank: 2, Alpha: 4, Targets: []string{"all-linear"}, Seed: 1}); err != nil {
			t.Fatal(err)
		}
		s := torch.NewScope()
		ids, pos, attn := leftPadded(t, s)
		lp, _ := m.TokenLogProbs(s, ids, pos, attn, 1, false)
		loss := s.Mean(lp, false)
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		if err := loss.Backward(nil); err != nil {
			t.Fatal(err)
		}
		var gsum float64
		for _, p := range m.LoRAParams() {
			g, err := p.T.Grad()
			if err != nil {
				t.Fatal(err)
			}
			if g != nil {
				gsum += s.Item(s.Sum(s.Abs(g), false))
				g.Free()
			}
		}
		if !(gsum > 0) {
			t.Errorf("%s: LoRA adapters got no gradient", fam)
		}
		c, err := NewCritic(m)
		if err != nil {
			t.Fatal(err)
		}
		v := c.Values(s, ids, pos, attn)
		if err := s.Err(); err != nil || v.Dim() != 2 || v.Size(0) != 2 || v.Size(1) != 9 {
			t.Fatalf("%s: critic values %v: %v", fam, v.Shape(), err)
		}
		if c.Trunk().Config().ModelType != fam {
			t.Errorf("critic trunk is %q", c.Trunk().Config().ModelType)
		}
		c.Close()
		s.Close()
		m.Close()
	}
}
