package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"ragen/config"
	"ragen/llm"
	"ragen/llm/tokenizer"
	"ragen/llmpolicy"
	"ragen/ragen"
	"ragen/torch"
)

// initTorch sets libtorch's thread count once (trainer.num_threads or the
// number of cores) and warns when the BLAS is not the OpenMP OpenBLAS.
func initTorch(t *config.Tree) {
	n := runtime.NumCPU()
	if t != nil && t.Has("system.num_threads") {
		if v, err := t.Int("system.num_threads"); err == nil && v > 0 {
			n = v
		}
	}
	torch.SetNumThreads(n)
	// keep up to 1 GiB of freed tensor memory for reuse (about 10% per train step)
	torch.KeepFreedMemory(1 << 30)
	if maps, err := os.ReadFile("/proc/self/maps"); err == nil {
		s := string(maps)
		if strings.Contains(s, "libblas.so.3") && !strings.Contains(s, "openblas-openmp") {
			fmt.Fprintln(os.Stderr, "ragen: warning: the loaded BLAS is not the OpenMP OpenBLAS; run `make deps` (or update-alternatives) for 2-30x faster matmuls")
		}
	}
}

// modelOptions reads the device and dtypes (ragen keys system.device,
// actor_rollout_ref.model.dtype and .compute_dtype; defaults cpu, float32
// and compute_dtype auto: llm.AutoComputeDType's choice for the model).
func modelOptions(t *config.Tree, deviceFlag string) (llm.Options, error) {
	opt := llm.DefaultOptions()
	dev := deviceFlag
	if dev == "" && t.Has("system.device") {
		dev, _ = t.String("system.device")
	}
	if dev != "" {
		d, err := torch.ParseDevice(dev)
		if err != nil {
			return opt, err
		}
		if d != torch.CPU && !torch.CUDAAvailable() {
			return opt, fmt.Errorf("device %s requested but this build has no CUDA (%s); build with -tags torchpc,cuda (doc/design.md)", d, torch.BuildInfo())
		}
		opt.Device = d
	}
	if t.Has("actor_rollout_ref.model.dtype") {
		s, err := t.String("actor_rollout_ref.model.dtype")
		if err != nil {
			return opt, err
		}
		if opt.DType, err = torch.ParseDType(s); err != nil {
			return opt, err
		}
	}
	// mixed precision as FSDP's mixed_precision.param_dtype: bf16 compute on
	// float32 master weights (llm.Options.ComputeDType); absent or "auto":
	// llm.AutoComputeDType decides when the model is built
	opt.AutoCompute = true
	if t.Has("actor_rollout_ref.model.compute_dtype") {
		s, err := t.String("actor_rollout_ref.model.compute_dtype")
		if err != nil {
			return opt, err
		}
		if !strings.EqualFold(s, "auto") {
			opt.AutoCompute = false
			if opt.ComputeDType, err = torch.ParseDType(s); err != nil {
				return opt, fmt.Errorf("actor_rollout_ref.model.compute_dtype: %w (or auto)", err)
			}
			if opt.ComputeDType != opt.DType && opt.ComputeDType != torch.BFloat16 && opt.ComputeDType != torch.Float16 {
				return opt, fmt.Errorf("actor_rollout_ref.model.compute_dtype=%s: mixed precision computes in bfloat16 or float16", s)
			}
		}
	}
	var err error
	opt.GradientCheckpointing, err = checkpointingKey(t, "actor_rollout_ref.model.enable_gradient_checkpointing")
	return opt, err
}

// autoComputeWhy says why llm.AutoComputeDType chose mixed precision.
func autoComputeWhy(o llm.Options) string {
	if o.Device != torch.CPU {
		return "GPU runs compute in bfloat16, as veRL's FSDP does"
	}
	return fmt.Sprintf("this CPU multiplies bfloat16 natively and the model has at least %dM parameters", llm.AutoComputeParams/1_000_000)
}

// checkpointingKey reads an enable_gradient_checkpointing key (absent: off).
func checkpointingKey(t *config.Tree, key string) (bool, error) {
	if !t.Has(key) {
		return false, nil
	}
	return t.Bool(key)
}

// loadModel loads model_path (a Hugging Face folder) with its tokenizer,
// or, when model_path is "tiny", builds a seeded tiny Qwen2-shaped model
// (demo.model) with the byte tokenizer or demo.model.tokenizer's.
func loadModel(t *config.Tree, deviceFlag string) (*llm.Model, tokenizer.Tokenizer, error) {
	return loadModelTok(t, deviceFlag, nil)
}

// loadModelTok is loadModel with the tiny model's tokenizer already loaded
// (by modelConfigFor); nil loads it.
func loadModelTok(t *config.Tree, deviceFlag string, tok tokenizer.Tokenizer) (*llm.Model, tokenizer.Tokenizer, error) {
	initTorch(t)
	opt, err := modelOptions(t, deviceFlag)
	if err != nil {
		return nil, nil, err
	}
	path, err := t.String("model_path")
	if err != nil {
		return nil, nil, err
	}
	if path == "tiny" {
		if tok == nil {
			if tok, err = tinyTokenizer(t); err != nil {
				return nil, nil, err
			}
		}
		cfg, err := tinyModelConfig(t, tok.VocabSize())
		if err != nil {
			return nil, nil, err
		}
		if t.Has("demo.model.seed") {
			s, _ := t.Int("demo.model.seed")
			opt.Seed = uint64(s)
		}
		m, err := llm.New(cfg, opt)
		return m, tok, err
	}
	if err := localModelDir(path); err != nil {
		return nil, nil, err
	}
	m, err := llm.Load(path, opt)
	if err != nil {
		return nil, nil, err
	}
	if tok, err = llm.LoadTokenizer(path); err != nil {
		m.Close()
		return nil, nil, err
	}
	return m, tok, nil
}

// localModelDir checks that model_path is a local Hugging Face folder.
func localModelDir(path string) error {
	if _, err := os.Stat(filepath.Join(path, "config.json")); err != nil {
		return fmt.Errorf("model_path=%q is not a local Hugging Face model folder (no config.json); ragen cannot download weights: point model_path at a folder with config.json, model.safetensors and tokenizer.json, or use model_path=tiny", path)
	}
	return nil
}

// tinyTokenizer is the tiny model's tokenizer: the byte tokenizer, or the
// Hugging Face tokenizer of the folder demo.model.tokenizer names (a real
// tokenizer for a randomly initialised model, e.g. a speed run at a real
// model's shapes whose prompts tokenize as the real model's would).
func tinyTokenizer(t *config.Tree) (tokenizer.Tokenizer, error) {
	var dir string
	r := &reader{t: t}
	r.str("demo.model.tokenizer", &dir) // absent or null: the byte tokenizer
	if err := r.err(); err != nil {
		return nil, err
	}
	if dir == "" {
		return tokenizer.NewByte(), nil
	}
	tok, err := llm.LoadTokenizer(dir)
	if err != nil {
		return nil, fmt.Errorf("demo.model.tokenizer=%q: %w", dir, err)
	}
	return tok, nil
}

// tinyModelConfig builds the model config of demo.model (sizes), defaulting
// to llm.TinyConfig. demo.model.vocab_size may widen the vocabulary past the
// tokenizer's (rows no token uses), so a speed run can take a real model's
// head shape (151,936 rows for Qwen2.5) with the byte tokenizer;
// demo.model.tie_word_embeddings chooses a tied or an untied head.
func tinyModelConfig(t *config.Tree, vocab int) (llm.Config, error) {
	c := llm.TinyConfig(vocab)
	r := &reader{t: t}
	r.int("demo.model.vocab_size", &c.VocabSize)
	if t.Has("demo.model.tie_word_embeddings") {
		b, err := t.Bool("demo.model.tie_word_embeddings")
		if err != nil {
			return c, fmt.Errorf("demo.model.tie_word_embeddings: %w", err)
		}
		c.TieWordEmbeddings = b
	}
	r.int("demo.model.hidden_size", &c.HiddenSize)
	r.int("demo.model.intermediate_size", &c.IntermediateSize)
	r.int("demo.model.num_hidden_layers", &c.NumHiddenLayers)
	r.int("demo.model.num_attention_heads", &c.NumAttentionHeads)
	r.int("demo.model.num_key_value_heads", &c.NumKeyValueHeads)
	r.int("demo.model.max_position_embeddings", &c.MaxPositionEmbeddings)
	if err := r.err(); err != nil {
		return c, err
	}
	if c.VocabSize < vocab {
		return c, fmt.Errorf("demo.model.vocab_size=%d is smaller than the tokenizer's vocabulary (%d)", c.VocabSize, vocab)
	}
	return c, c.Validate()
}

// modelPolicy is the in-process model as a ragen.Policy for eval.
func modelPolicy(t *config.Tree, deviceFlag string) (ragen.Policy, tokenizer.Tokenizer, func(), error) {
	m, tok, err := loadModel(t, deviceFlag)
	if err != nil {
		return nil, nil, nil, err
	}
	seed := 0
	if t.Has("seed.val") {
		seed, _ = t.Int("seed.val")
	}
	return llmpolicy.New(m, tok, llmpolicy.Options{Seed: uint64(seed)}), tok, m.Close, nil
}
