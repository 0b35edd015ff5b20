package llm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ragen/llm/safetensors"
	"ragen/llm/tokenizer"
	"ragen/torch"
)

func paramValues(t *testing.T, m *Model) map[string][]float32 {
	t.Helper()
	out := map[string][]float32{}
	for _, p := range m.Params() {
		v, err := torch.Data[float32](p.T)
		if err != nil {
			t.Fatal(err)
		}
		out[p.Name] = v
	}
	return out
}

func TestSaveLoadRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tied  bool
		dtype torch.DType
		shard int64
	}{
		{"untied-f32", false, torch.Float32, DefaultMaxShardBytes},
		{"tied-f32", true, torch.Float32, DefaultMaxShardBytes},
		{"untied-f32-sharded", false, torch.Float32, 100_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := tinyModel(t, 3, tc.tied)
			defer m.Close()
			dir := t.TempDir()
			if err := m.SaveSharded(dir, tc.shard); err != nil {
				t.Fatal(err)
			}
			if tc.shard < DefaultMaxShardBytes {
				if _, err := os.Stat(filepath.Join(dir, WeightsIndexFile)); err != nil {
					t.Fatalf("expected a sharded save: %v", err)
				}
				ix, err := safetensors.ReadIndex(filepath.Join(dir, WeightsIndexFile))
				if err != nil {
					t.Fatal(err)
				}
				if len(ix.Shards()) < 2 {
					t.Fatalf("expected several shards, got %v", ix.Shards())
				}
			}
			m2, err := Load(dir, DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			defer m2.Close()
			a, b := paramValues(t, m), paramValues(t, m2)
			if len(a) != len(b) {
				t.Fatalf("%d params saved, %d loaded", len(a), len(b))
			}
			for name, va := range a {
				vb := b[name]
				for i := range va {
					if va[i] != vb[i] {
						t.Fatalf("%s[%d]: %v != %v", name, i, va[i], vb[i])
					}
				}
			}
			if m2.Config().TieWordEmbeddings != tc.tied {
				t.Fatalf("tie_word_embeddings not kept")
			}
		})
	}
}

func TestLoadBFloat16(t *testing.T) {
	m := tinyModel(t, 3, true)
	defer m.Close()
	dir := t.TempDir()
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	mb, err := Load(dir, Options{DType: torch.BFloat16, Device: torch.CPU})
	if err != nil {
		t.Fatal(err)
	}
	defer mb.Close()
	// bf16 keeps 8 bits of mantissa: relative error <= 2^-8 per weight
	a, b := paramValues(t, m), paramValues(t, mb)
	for name, va := range a {
		for i, x := range va {
			if d := math.Abs(float64(x - b[name][i])); d > math.Abs(float64(x))/256+1e-30 {
				t.Fatalf("%s[%d]: %v vs bf16 %v", name, i, x, b[name][i])
			}
		}
	}
	// a bf16 model saves as BF16 and reloads identically
	dir2 := t.TempDir()
	if err := mb.Save(dir2); err != nil {
		t.Fatal(err)
	}
	cfg, err := ReadConfig(dir2)
	if err != nil || cfg.TorchDType != "bfloat16" {
		t.Fatalf("torch_dtype %q, %v", cfg.TorchDType, err)
	}
	f, err := safetensors.Open(filepath.Join(dir2, WeightsFile))
	if err != nil {
		t.Fatal(err)
	}
	if f.Header.Tensors[0].DType != "BF16" {
		t.Fatalf("saved dtype %s", f.Header.Tensors[0].DType)
	}
	f.Close()
	// the bf16 forward is close to the fp32 one
	s := torch.NewScope()
	defer s.Close()
	ids, pos, attn := batch(t, s, [][]int{{1, 2, 3, 4, 5, 6}}, false)
	l32 := s.Float32s(m.Forward(s, ids, pos, attn))
	l16 := s.Float32s(s.Cast(mb.Forward(s, ids, pos, attn), torch.Float32))
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	for i := range l32 {
		worst = max(worst, math.Abs(float64(l32[i]-l16[i])))
	}
	if worst > 0.25 {
		t.Fatalf("bf16 logits differ from fp32 by %v", worst)
	}
}

// corrupt writes a valid tiny model and then damages model.safetensors.
func corruptDir(t *testing.T, edit func(b []byte) []byte) string {
	t.Helper()
	m := tinyModel(t, 3, false)
	defer m.Close()
	dir := t.TempDir()
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, WeightsFile)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, edit(b), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// rewriteHeader parses the header JSON, lets edit change it and re-encodes the file.
func rewriteHeader(edit func(h string) string) func([]byte) []byte {
	return func(b []byte) []byte {
		n := int(b[0]) | int(b[1])<<8 | int(b[2])<<16 | int(b[3])<<24
		h := edit(string(b[8 : 8+n]))
		out := make([]byte, 8, 8+len(h)+len(b))
		l := len(h)
		for i := 0; i < 8; i++ {
			out[i] = byte(l >> (8 * i))
		}
		out = append(out, h...)
		return append(out, b[8+n:]...)
	}
}

func TestLoadErrors(t *testing.T) {
	const emb = `"model.embed_tokens.weight"`
	cases := []struct {
		name string
		edit func([]byte) []byte
		want []string // substrings of the error
	}{
		{"truncated data", func(b []byte) []byte { return b[:len(b)-1000] }, []string{WeightsFile, "out of range"}},
		{"too short", func(b []byte) []byte { return b[:5] }, []string{WeightsFile, "too short"}},
		{"bad header length", func(b []byte) []byte { b[6] = 0x7f; return b }, []string{WeightsFile, "header length"}},
		{"bad json", rewriteHeader(func(h string) string { return strings.Replace(h, "{", "[", 1) }), []string{WeightsFile, "JSON"}},
		{"offsets out of range", rewriteHeader(func(h string) string {
			return strings.Replace(h, `"data_offsets":[0,`, `"data_offsets":[0,99999999`, 1)
		}), []string{WeightsFile}},
		{"dtype mismatch", rewriteHeader(func(h string) string {
			i := strings.Index(h, emb)
			return h[:i] + strings.Replace(h[i:], `"F32"`, `"I32"`, 1)
		}), []string{WeightsFile, "model.embed_tokens.weight", "I32"}},
		{"size mismatch", rewriteHeader(func(h string) string {
			i := strings.Index(h, emb)
			return h[:i] + strings.Replace(h[i:], `"F32"`, `"F16"`, 1)
		}), []string{WeightsFile, "model.embed_tokens.weight", "bytes"}},
		{"missing tensor", rewriteHeader(func(h string) string {
			return strings.Replace(h, `"model.norm.weight"`, `"model.normx.weight"`, 1)
		}), []string{WeightsFile, "model.norm.weight", "not found"}},
		{"shape mismatch", rewriteHeader(func(h string) string {
			i := strings.Index(h, `"model.norm.weight"`)
			return h[:i] + strings.Replace(h[i:], `"shape":[64]`, `"shape":[8,8]`, 1)
		}), []string{WeightsFile, "model.norm.weight", "shape"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := corruptDir(t, tc.edit)
			m, err := Load(dir, DefaultOptions())
			if err == nil {
				m.Close()
				t.Fatal("Load succeeded on a corrupt file")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	t.Run("no weights", func(t *testing.T) {
		dir := corruptDir(t, func(b []byte) []byte { return b })
		os.Remove(filepath.Join(dir, WeightsFile))
		if _, err := Load(dir, DefaultOptions()); err == nil || !strings.Contains(err.Error(), WeightsIndexFile) {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("bad config", func(t *testing.T) {
		dir := corruptDir(t, func(b []byte) []byte { return b })
		os.WriteFile(filepath.Join(dir, ConfigFile), []byte(`{"vocab_size": 0, "hidden_act": "gelu", "num_attention_heads": 3, "num_key_value_heads": 2}`), 0o644)
		_, err := Load(dir, DefaultOptions())
		if err == nil {
			t.Fatal("no error")
		}
		for _, w := range []string{"vocab_size", "hidden_act", "num_key_value_heads"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not mention %q", err, w)
			}
		}
	})
	t.Run("index missing tensor", func(t *testing.T) {
		m := tinyModel(t, 3, false)
		defer m.Close()
		dir := t.TempDir()
		if err := m.SaveSharded(dir, 100_000); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, WeightsIndexFile)
		b, _ := os.ReadFile(p)
		os.WriteFile(p, []byte(strings.Replace(string(b), `"model.norm.weight"`, `"model.gone.weight"`, 1)), 0o644)
		_, err := Load(dir, DefaultOptions())
		if err == nil || !strings.Contains(err.Error(), "model.norm.weight") || !strings.Contains(err.Error(), WeightsIndexFile) {
			t.Fatalf("error %v", err)
		}
	})
}

func TestConfigJSON(t *testing.T) {
	// A Qwen2.5-0.5B-Instruct config.json; unknown keys survive a round trip.
	src := `{"architectures":["Qwen2ForCausalLM"],"attention_dropout":0.0,"bos_token_id":151643,"eos_token_id":151645,
"hidden_act":"silu","hidden_size":896,"initializer_range":0.02,"intermediate_size":4864,"max_position_embeddings":32768,
"max_window_layers":21,"model_type":"qwen2","num_attention_heads":14,"num_hidden_layers":24,"num_key_value_heads":2,
"rms_norm_eps":1e-06,"rope_theta":1000000.0,"sliding_window":32768,"tie_word_embeddings":true,"torch_dtype":"bfloat16",
"transformers_version":"4.43.1","use_cache":true,"use_sliding_window":false,"vocab_size":151936,"custom_key":{"a":1}}`
	c, err := ParseConfig([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.HeadDimension() != 64 || c.NumKeyValueHeads != 2 || !c.TieWordEmbeddings || c.EOSTokenID[0] != 151645 {
		t.Fatalf("parsed %+v", c)
	}
	// 0.5B: 494,032,768 parameters (tied), as Hugging Face reports
	if n := c.ParamCount(); n != 494032768 {
		t.Fatalf("ParamCount = %d, want 494032768", n)
	}
	b, err := MarshalConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"custom_key"`) {
		t.Fatalf("extra key lost:\n%s", b)
	}
	c2, err := ParseConfig(b)
	if err != nil || c2.ParamCount() != c.ParamCount() {
		t.Fatalf("round trip: %v", err)
	}
}

// recomputeGreedy decodes greedily by re-running the full forward on the
// growing sequence (no KV cache).
func recomputeGreedy(t *testing.T, m *Model, prompt []int, n int) []int {
	t.Helper()
	seq := append([]int(nil), prompt...)
	for range n {
		s := torch.NewScope()
		ids, pos, attn := batch(t, s, [][]int{seq}, false)
		var next int64
		err := torch.NoGrad(func() error {
			lg := m.Forward(s, ids, pos, attn)
			am := s.Argmax(s.Narrow(lg, 1, int64(len(seq)-1), 1), -1, false)
			v := s.Int64s(am)
			if s.Err() == nil {
				next = v[0]
			}
			return s.Err()
		})
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		seq = append(seq, int(next))
	}
	return seq[len(prompt):]
}

func TestKVCacheEqualsRecompute(t *testing.T) {
	m := tinyModel(t, 5, false)
	defer m.Close()
	prompt := []int{3, 1, 4, 1, 5, 9, 2, 6}
	want := recomputeGreedy(t, m, prompt, 12)
	res, err := m.Generate(context.Background(), nil, [][]int{prompt}, GenOptions{MaxNewTokens: 12, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(res[0].IDs) != fmt.Sprint(want) {
		t.Fatalf("KV cache %v\nrecompute %v", res[0].IDs, want)
	}
}

func TestBatchedEqualsSingle(t *testing.T) {
	m := tinyModel(t, 6, true)
	defer m.Close()
	tok := tokenizer.NewByte()
	prompts := [][]int{{72, 105}, {1, 2, 3, 4, 5, 6, 7, 8, 9}, {200}, {50, 60, 70, 80}}
	opt := GenOptions{MaxNewTokens: 10, StopIDs: []int{7, 11, 13}}
	batched, err := m.Generate(context.Background(), tok, prompts, opt)
	if err != nil {
		t.Fatal(err)
	}
	stopped := 0
	for i, p := range prompts {
		one, err := m.Generate(context.Background(), tok, [][]int{p}, opt)
		if err != nil {
			t.Fatal(err)
		}
		sameResult(t, fmt.Sprintf("prompt %d", i), batched[i], one[0])
		if batched[i].FinishReason == "stop" {
			stopped++
		}
	}
	t.Logf("%d of %d stopped early", stopped, len(prompts))
}

func TestSampling(t *testing.T) {
	m := tinyModel(t, 8, false)
	defer m.Close()
	prompts := [][]int{{1, 2, 3}, {9, 8, 7, 6, 5}}
	gen := func(o GenOptions) []GenResult {
		t.Helper()
		r, err := m.Generate(context.Background(), nil, prompts, o)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	base := GenOptions{MaxNewTokens: 16, Temperature: 2.0, TopP: 0.95, TopK: 50, Seed: 42, IgnoreEOS: true}
	a, b := gen(base), gen(base)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("same seed, different samples:\n%v\n%v", a, b)
	}
	other := base
	other.Seed = 43
	if c := gen(other); fmt.Sprint(c) == fmt.Sprint(a) {
		t.Fatalf("different seeds gave identical samples")
	}
	greedy := gen(GenOptions{MaxNewTokens: 16, IgnoreEOS: true})
	k1 := gen(GenOptions{MaxNewTokens: 16, Temperature: 0.7, TopK: 1, Seed: 1, IgnoreEOS: true})
	for i := range greedy {
		if fmt.Sprint(greedy[i].IDs) != fmt.Sprint(k1[i].IDs) {
			t.Fatalf("top-k=1 %v != greedy %v", k1[i].IDs, greedy[i].IDs)
		}
	}
	// tiny top-p keeps only the most likely token: greedy again
	p0 := gen(GenOptions{MaxNewTokens: 16, Temperature: 1, TopP: 1e-6, Seed: 1, IgnoreEOS: true})
	for i := range greedy {
		if fmt.Sprint(greedy[i].IDs) != fmt.Sprint(p0[i].IDs) {
			t.Fatalf("top-p→0 %v != greedy %v", p0[i].IDs, greedy[i].IDs)
		}
	}
	// sampled log-probs are those of softmax(logits/T) at the chosen ids
	for _, r := range a {
		for _, lp := range r.LogProbs {
			if !(lp <= 0) || math.IsInf(lp, -1) {
				t.Fatalf("log-prob %v", lp)
			}
		}
	}
	checkLogProbs(t, m, prompts[0], a[0], 2.0)
}

// checkLogProbs recomputes the log-probs of a generation by teacher forcing.
func checkLogProbs(t *testing.T, m *Model, prompt []int, r GenResult, temp float64) {
	t.Helper()
	seq := append(append([]int(nil), prompt...), r.IDs...)
	s := torch.NewScope()
	defer s.Close()
	ids, pos, attn := batch(t, s, [][]int{seq}, false)
	var lp []float32
	torch.NoGrad(func() error {
		l, _ := m.TokenLogProbs(s, ids, pos, attn, temp, false)
		lp = s.Float32s(l)
		return nil
	})
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	for i, want := range r.LogProbs {
		if d := math.Abs(float64(lp[len(prompt)+i]) - want); d > 1e-4 {
			t.Fatalf("token %d: generation log-prob %v, teacher forcing %v", i, want, lp[len(prompt)+i])
		}
	}
}

func TestStopStringsAndStream(t *testing.T) {
	m := tinyModel(t, 9, true)
	defer m.Close()
	tok := tokenizer.NewByte()
	prompt := []int{65, 66, 67}
	free, err := m.Generate(context.Background(), tok, [][]int{prompt}, GenOptions{MaxNewTokens: 30, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	text := free[0].Text
	if len([]rune(text)) < 6 {
		t.Skipf("free text too short to cut: %q", text)
	}
	// stop at a substring that first appears in the middle of the free text
	cut := len(text) / 2
	stopStr := text[cut : cut+2]
	first := strings.Index(text, stopStr)
	var streamed strings.Builder
	res, err := m.Generate(context.Background(), tok, [][]int{prompt}, GenOptions{MaxNewTokens: 30, IgnoreEOS: true,
		StopStrings: []string{stopStr}, Stream: func(seq int, d string) {
			if seq != 0 {
				t.Errorf("stream seq %d", seq)
			}
			streamed.WriteString(d)
		}})
	if err != nil {
		t.Fatal(err)
	}
	r := res[0]
	if r.FinishReason != "stop" || r.Text != text[:first] {
		t.Fatalf("stop %q: got %q (%s), want %q", stopStr, r.Text, r.FinishReason, text[:first])
	}
	if streamed.String() != r.Text {
		t.Fatalf("streamed %q, text %q", streamed.String(), r.Text)
	}
	if fmt.Sprint(r.IDs) != fmt.Sprint(free[0].IDs[:len(r.IDs)]) {
		t.Fatalf("ids differ from the free run")
	}
	// a stop id ends the sequence and its text is left out
	sid := free[0].IDs[3]
	res, err = m.Generate(context.Background(), tok, [][]int{prompt}, GenOptions{MaxNewTokens: 30, IgnoreEOS: true, StopIDs: []int{sid}})
	if err != nil {
		t.Fatal(err)
	}
	k := 0
	for free[0].IDs[k] != sid {
		k++
	}
	if got := res[0]; got.FinishReason != "stop" || len(got.IDs) != k+1 || got.Text != tok.Decode(free[0].IDs[:k]) {
		t.Fatalf("stop id %d: %+v", sid, got)
	}
	// length
	res, _ = m.Generate(context.Background(), tok, [][]int{prompt}, GenOptions{MaxNewTokens: 4, IgnoreEOS: true})
	if res[0].FinishReason != "length" || len(res[0].IDs) != 4 {
		t.Fatalf("length: %+v", res[0])
	}
}

func TestGenerateErrors(t *testing.T) {
	m := tinyModel(t, 9, true)
	defer m.Close()
	ctx := context.Background()
	for _, tc := range []struct {
		prompts [][]int
		opt     GenOptions
		want    string
	}{
		{[][]int{{}}, GenOptions{MaxNewTokens: 1}, "empty"},
		{[][]int{{300}}, GenOptions{MaxNewTokens: 1}, "outside the vocabulary"},
		{[][]int{{1}}, GenOptions{MaxNewTokens: 0}, "max new tokens"},
		{[][]int{{1}}, GenOptions{MaxNewTokens: 2000}, "max_position_embeddings"},
		{[][]int{{1}}, GenOptions{MaxNewTokens: 2, StopStrings: []string{"x"}}, "tokenizer"},
		{[][]int{{1}}, GenOptions{MaxNewTokens: 2, AllowedIDs: []int{3, 300}}, "allowed id 300"},
		{[][]int{{1}}, GenOptions{MaxNewTokens: 2, AllowedIDs: []int{-1}}, "allowed id -1"},
	} {
		if _, err := m.Generate(ctx, nil, tc.prompts, tc.opt); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %+v: error %v, want %q", tc.prompts, tc.opt, err, tc.want)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := m.Generate(cctx, nil, [][]int{{1}}, GenOptions{MaxNewTokens: 3}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

// FuzzParseConfig: no input panics ParseConfig or Validate, and a config
// that parses and validates survives MarshalConfig/ParseConfig with the
// same parameter count.
func FuzzParseConfig(f *testing.F) {
	b, _ := MarshalConfig(TinyConfig(300))
	f.Add(b)
	f.Add([]byte(`{"eos_token_id":[1,2],"vocab_size":3}`))
	f.Add([]byte(`{"num_attention_heads":0}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data)
		if err != nil || c.Validate() != nil {
			return
		}
		out, err := MarshalConfig(c)
		if err != nil {
			t.Fatal(err)
		}
		c2, err := ParseConfig(out)
		if err != nil || c2.Validate() != nil || c2.ParamCount() != c.ParamCount() {
			t.Fatalf("round trip: %v", err)
		}
	})
}

// AllowedIDs restricts sampling: every id, greedy or sampled (with a
// stream per row or one for the batch, through prefix sharing), is allowed;
// greedy picks the best allowed logit; an allowed set of one id has
// log-prob 0; allowing every id changes nothing.
func TestGenerateAllowedIDs(t *testing.T) {
	m := tinyModel(t, 35, false)
	defer m.Close()
	ctx := context.Background()
	gen := func(prompts [][]int, opt GenOptions) []GenResult {
		t.Helper()
		res, err := m.Generate(ctx, nil, prompts, opt)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	prompts := [][]int{{1, 2, 3, 4}, {5, 6}, {1, 2, 3, 4}}
	allowed := []int{7, 40, 41, 42, 120, 255}
	in := map[int]bool{}
	for _, id := range allowed {
		in[id] = true
	}
	for _, opt := range []GenOptions{
		{MaxNewTokens: 6, IgnoreEOS: true},
		{MaxNewTokens: 6, IgnoreEOS: true, Temperature: 1, Seed: 3},
		{MaxNewTokens: 6, IgnoreEOS: true, Temperature: 1.5, TopK: 3, TopP: 0.9, RowSeeds: []uint64{1, 2, 3}},
		{MaxNewTokens: 6, IgnoreEOS: true, Temperature: 1, Seed: 3, NoPrefixCaching: true},
	} {
		opt.AllowedIDs = allowed
		for i, r := range gen(prompts, opt) {
			if len(r.IDs) != 6 || len(r.LogProbs) != 6 {
				t.Fatalf("%+v: prompt %d: %+v", opt, i, r)
			}
			for k, id := range r.IDs {
				if lp := r.LogProbs[k]; !in[id] || lp > 0 || math.IsInf(lp, 0) || math.IsNaN(lp) {
					t.Fatalf("%+v: prompt %d token %d: id %d (allowed: %v), log-prob %v", opt, i, k, id, in[id], lp)
				}
			}
		}
	}
	// greedy: the first id is the prompt's best allowed logit
	var lg []float32
	s := torch.NewScope()
	ids, pos, attn := batch(t, s, prompts[:1], false)
	if err := torch.NoGrad(func() error {
		lg = s.Float32s(s.Narrow(m.Forward(s, ids, pos, attn), 1, int64(len(prompts[0])-1), 1))
		return s.Err()
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	best := allowed[0]
	for _, id := range allowed {
		if lg[id] > lg[best] {
			best = id
		}
	}
	if got := gen(prompts[:1], GenOptions{MaxNewTokens: 1, AllowedIDs: allowed, IgnoreEOS: true})[0].IDs; fmt.Sprint(got) != fmt.Sprint([]int{best}) {
		t.Fatalf("greedy: %v, best allowed %d", got, best)
	}
	for _, r := range gen(prompts, GenOptions{MaxNewTokens: 3, AllowedIDs: []int{42}, IgnoreEOS: true, Temperature: 1, Seed: 1}) {
		if fmt.Sprint(r.IDs, r.LogProbs) != "[42 42 42] [0 0 0]" {
			t.Fatalf("one allowed id: %v %v", r.IDs, r.LogProbs)
		}
	}
	all := make([]int, m.Config().VocabSize)
	for i := range all {
		all[i] = i
	}
	for _, opt := range []GenOptions{{MaxNewTokens: 5, IgnoreEOS: true}, {MaxNewTokens: 5, IgnoreEOS: true, Temperature: 1, Seed: 9}} {
		free := gen(prompts, opt)
		opt.AllowedIDs = all
		for i, r := range gen(prompts, opt) {
			if fmt.Sprint(r.IDs) != fmt.Sprint(free[i].IDs) {
				t.Errorf("prompt %d: every id allowed %v, unrestricted %v", i, r.IDs, free[i].IDs)
			}
		}
	}
}

func TestRopeGrowth(t *testing.T) {
	cfg := TinyConfig(300)
	cfg.MaxPositionEmbeddings = 10000
	m, err := New(cfg, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if n := m.cos.Size(0); n != initialRope {
		t.Fatalf("initial table %d", n)
	}
	// a prompt longer than the initial table still decodes
	long := make([]int, initialRope+10)
	for i := range long {
		long[i] = i % 300
	}
	res, err := m.Generate(context.Background(), nil, [][]int{long}, GenOptions{MaxNewTokens: 2, IgnoreEOS: true})
	if err != nil || len(res[0].IDs) != 2 {
		t.Fatalf("%v %v", res, err)
	}
	if n := m.cos.Size(0); n < int64(initialRope+12) || n > 10000 {
		t.Fatalf("grown table %d", n)
	}
}

func TestGenerateBFloat16(t *testing.T) {
	m := tinyModel(t, 31, false)
	dir := t.TempDir()
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	m.Close()
	mb, err := Load(dir, Options{DType: torch.BFloat16, Device: torch.CPU})
	if err != nil {
		t.Fatal(err)
	}
	defer mb.Close()
	prompts := [][]int{{1, 2, 3, 4}, {5, 6}}
	res, err := mb.Generate(context.Background(), nil, prompts, GenOptions{MaxNewTokens: 6, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if len(r.IDs) != 6 || r.FinishReason != "length" {
			t.Fatalf("prompt %d: %+v", i, r)
		}
		// bf16 decoding with the cache equals bf16 recomputation
		if want := recomputeGreedy(t, mb, prompts[i], 6); fmt.Sprint(want) != fmt.Sprint(r.IDs) {
			t.Errorf("prompt %d: cache %v recompute %v", i, r.IDs, want)
		}
	}
}

// With two intra-op threads the prefill's attention runs its (batch row, KV
// head) pairs as parallel tasks under the caller's inference mode: greedy
// generation of a batch equals the one-thread run's, token for token.
func TestGenerateTwoThreads(t *testing.T) {
	m := tinyModel(t, 31, false)
	defer m.Close()
	prompts := [][]int{{1, 2, 3, 4}, {5, 6}, {7}}
	gen := func() []GenResult {
		res, err := m.Generate(context.Background(), nil, prompts, GenOptions{MaxNewTokens: 5, IgnoreEOS: true})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	one := gen()
	torch.SetNumThreads(2)
	defer torch.SetNumThreads(1)
	two := gen()
	for i := range prompts {
		if fmt.Sprint(one[i].IDs) != fmt.Sprint(two[i].IDs) {
			t.Errorf("prompt %d: 1 thread %v, 2 threads %v", i, one[i].IDs, two[i].IDs)
		}
	}
}

// Under bf16 mixed precision generation computes in bf16 (weights cast per
// call, bf16 KV caches): greedy decoding with the cache equals greedy
// recomputation by the mixed-precision forward, and its log-probs are bf16's,
// close to but not float32's.
func TestGenerateMixedPrecision(t *testing.T) {
	m := tinyModel(t, 33, false)
	defer m.Close()
	prompts := [][]int{{1, 2, 3, 4, 5, 6, 7, 8}, {9, 10}}
	opt := GenOptions{MaxNewTokens: 8, IgnoreEOS: true}
	f32, err := m.Generate(context.Background(), nil, prompts, opt)
	if err != nil {
		t.Fatal(err)
	}
	m.opt.ComputeDType = torch.BFloat16
	res, err := m.Generate(context.Background(), nil, prompts, opt)
	if err != nil {
		t.Fatal(err)
	}
	moved := 0.0
	for i, r := range res {
		if want := recomputeGreedy(t, m, prompts[i], 8); fmt.Sprint(want) != fmt.Sprint(r.IDs) {
			t.Errorf("prompt %d: bf16 cache %v, bf16 recompute %v", i, r.IDs, want)
		}
		for j := range min(len(r.LogProbs), len(f32[i].LogProbs)) {
			if r.IDs[j] != f32[i].IDs[j] {
				break
			}
			d := math.Abs(r.LogProbs[j] - f32[i].LogProbs[j])
			moved = max(moved, d)
			if d > 0.1 {
				t.Errorf("prompt %d token %d: bf16 log-prob %g, float32 %g", i, j, r.LogProbs[j], f32[i].LogProbs[j])
			}
		}
	}
	if moved == 0 {
		t.Error("bf16 generation gave float32's log-probs: it did not compute in bf16")
	}
}

func TestStreamBatched(t *testing.T) {
	m := tinyModel(t, 32, false)
	defer m.Close()
	tok := tokenizer.NewByte()
	got := map[int]*strings.Builder{}
	res, err := m.Generate(context.Background(), tok, [][]int{{72, 105}, {65}, {1, 2, 3}}, GenOptions{MaxNewTokens: 12, Temperature: 1, Seed: 3,
		Stream: func(seq int, d string) {
			if got[seq] == nil {
				got[seq] = &strings.Builder{}
			}
			got[seq].WriteString(d)
		}})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		s := ""
		if got[i] != nil {
			s = got[i].String()
		}
		if s != r.Text {
			t.Fatalf("seq %d: streamed %q, text %q", i, s, r.Text)
		}
	}
}

// Sequences that stop early are dropped from the batch (KV caches
// compacted); the others must continue exactly as when decoded alone.
func TestBatchCompaction(t *testing.T) {
	m := tinyModel(t, 34, false)
	defer m.Close()
	prompts := [][]int{{1, 2}, {3, 4, 5}, {6}, {7, 8, 9, 10}, {11, 12}, {13}}
	free, err := m.Generate(context.Background(), nil, prompts, GenOptions{MaxNewTokens: 12, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	// stop ids that end prompts 0-3 early but never occur in 4 and 5
	keep := map[int]bool{}
	for _, r := range free[4:] {
		for _, id := range r.IDs {
			keep[id] = true
		}
	}
	var stops []int
	for _, r := range free[:4] {
		for _, id := range r.IDs[1:] {
			if !keep[id] {
				stops = append(stops, id)
				break
			}
		}
	}
	opt := GenOptions{MaxNewTokens: 12, IgnoreEOS: true, StopIDs: stops}
	batched, err := m.Generate(context.Background(), nil, prompts, opt)
	if err != nil {
		t.Fatal(err)
	}
	early, full := 0, 0
	for i, p := range prompts {
		one, err := m.Generate(context.Background(), nil, [][]int{p}, opt)
		if err != nil {
			t.Fatal(err)
		}
		sameResult(t, fmt.Sprintf("prompt %d", i), batched[i], one[0])
		if len(batched[i].IDs) < 12 {
			early++
		} else {
			full++
		}
	}
	if early < 3 || full < 1 {
		t.Fatalf("compaction not exercised: %d early, %d full", early, full)
	}
}

// sameResult compares generations: ids, text and finish reason exactly,
// log-probs to 1e-4 (batch shapes change float rounding).
func sameResult(t *testing.T, what string, a, b GenResult) {
	t.Helper()
	if fmt.Sprint(a.IDs) != fmt.Sprint(b.IDs) || a.Text != b.Text || a.FinishReason != b.FinishReason || len(a.LogProbs) != len(b.LogProbs) {
		t.Errorf("%s: %+v\nvs %+v", what, a, b)
		return
	}
	for i := range a.LogProbs {
		if math.Abs(a.LogProbs[i]-b.LogProbs[i]) > 1e-4 {
			t.Errorf("%s: log-prob %d: %v vs %v", what, i, a.LogProbs[i], b.LogProbs[i])
		}
	}
}

// Prefilling the prompts in row groups (to bound the attention scores)
// generates exactly what one whole-batch prefill does, left padding,
// per-row sampling streams and all.
func TestPrefillRowGroups(t *testing.T) {
	m := familyModel(t, "qwen2", 12, true)
	defer m.Close()
	// weights large enough that the prompt (through the KV cache) shapes every token
	s := torch.NewScope()
	if err := torch.NoGrad(func() error {
		for _, p := range m.Params() {
			if p.T.Dim() == 2 {
				s.CopyInto(p.T, s.MulS(p.T, 8))
			}
		}
		return s.Err()
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	prompts := [][]int{{1, 2, 3, 4, 5, 6, 7}, {9, 8}, {40, 41, 42}, {5}, {100, 101, 102, 103, 104, 105, 106}}
	opt := GenOptions{MaxNewTokens: 6, IgnoreEOS: true, Temperature: 0.9, RowSeeds: []uint64{1, 2, 3, 4, 5}}
	whole, err := m.Generate(context.Background(), nil, prompts, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer func(v int64) { prefillScoreElems = v }(prefillScoreElems)
	prefillScoreElems = 2 * int64(m.Config().NumAttentionHeads) * 7 * 7 // two rows per group
	grouped, err := m.Generate(context.Background(), nil, prompts, opt)
	if err != nil {
		t.Fatal(err)
	}
	for i := range prompts {
		sameResult(t, fmt.Sprintf("prompt %d", i), grouped[i], whole[i])
	}
}

// The weights are allocated on huge pages (torch.OnHugePages), matrices of
// 2 MiB or more as their own mappings, and closing the model unmaps them.
func TestWeightsOnHugePages(t *testing.T) {
	if os.Getenv("RAGEN_HUGEPAGES") == "0" {
		t.Skip("RAGEN_HUGEPAGES=0: libtorch's allocator")
	}
	cfg := TinyConfig(8192) // embedding and head 8192 x 64 float32: 2 MiB each
	cfg.TieWordEmbeddings = false
	base := torch.HugePageBytes()
	m, err := New(cfg, Options{DType: torch.Float32, Device: torch.CPU})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := torch.HugePageBytes()-base, int64(2*8192*64*4); got < want {
		t.Fatalf("%d bytes on huge pages, want at least %d (embedding and head)", got, want)
	}
	m.Close()
	if got := torch.HugePageBytes(); got != base {
		t.Fatalf("%d bytes on huge pages after Close, want %d", got, base)
	}
}
