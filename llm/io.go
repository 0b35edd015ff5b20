package llm

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"ragen/llm/safetensors"
	"ragen/llm/tokenizer"
	"ragen/torch"
)

// File names of a Hugging Face model folder.
const (
	ConfigFile           = "config.json"
	WeightsFile          = "model.safetensors"
	WeightsIndexFile     = "model.safetensors.index.json"
	GenerationConfigFile = "generation_config.json"
)

// DefaultMaxShardBytes is the shard size Save uses (transformers' default, 5 GB).
const DefaultMaxShardBytes = 5_000_000_000

func stDType(d torch.DType) (string, error) {
	switch d {
	case torch.Float32:
		return "F32", nil
	case torch.BFloat16:
		return "BF16", nil
	case torch.Float16:
		return "F16", nil
	case torch.Float64:
		return "F64", nil
	}
	return "", fmt.Errorf("llm: no safetensors dtype for %s", d)
}

func torchDType(st string) (torch.DType, bool) {
	switch st {
	case "F32":
		return torch.Float32, true
	case "BF16":
		return torch.BFloat16, true
	case "F16":
		return torch.Float16, true
	case "F64":
		return torch.Float64, true
	}
	return 0, false
}

func configDType(d torch.DType) string {
	switch d {
	case torch.BFloat16:
		return "bfloat16"
	case torch.Float16:
		return "float16"
	}
	return "float32"
}

// Load reads a Hugging Face model folder: config.json, model.safetensors or
// the shards of model.safetensors.index.json, and generation_config.json if
// present. Weights are converted to opt.DType (a zero Options keeps float32)
// on opt.Device. Missing, truncated or mismatching tensors are errors naming
// the file and the tensor.
func Load(dir string, opt Options) (*Model, error) {
	cfg, err := ReadConfig(dir)
	if err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("llm: %s: %w", filepath.Join(dir, ConfigFile), err)
	}
	// The checkpoint's headers must match config.json before the model's
	// memory is allocated: a vocab_size of 6,000,000 over a 3 MB checkpoint
	// is a shape error, not 6 GB of zeros first.
	if err := checkWeights(dir, cfg); err != nil {
		return nil, err
	}
	m, err := alloc(cfg, opt)
	if err != nil {
		return nil, err
	}
	if err := m.loadWeights(dir); err != nil {
		m.Close()
		return nil, err
	}
	if b, err := os.ReadFile(filepath.Join(dir, GenerationConfigFile)); err == nil {
		var probe map[string]json.RawMessage
		if err := json.Unmarshal(b, &probe); err != nil {
			m.Close()
			return nil, fmt.Errorf("llm: %s: %w", filepath.Join(dir, GenerationConfigFile), err)
		}
		m.genConfig = b
	}
	return m, nil
}

// checkWeights compares the safetensors headers in dir with the tensors,
// float dtypes and shapes that cfg needs, reading headers only.
func checkWeights(dir string, cfg Config) error {
	where, err := sources(dir)
	if err != nil {
		return err
	}
	files := map[string]*safetensors.File{}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for _, p := range cfg.paramShapes() {
		file := WeightsFile
		if where != nil {
			f, ok := where[p.Name]
			if !ok {
				return fmt.Errorf("llm: %s: tensor %q missing from the weight map", filepath.Join(dir, WeightsIndexFile), p.Name)
			}
			file = f
		}
		f, ok := files[file]
		if !ok {
			if f, err = safetensors.Open(filepath.Join(dir, file)); err != nil {
				return fmt.Errorf("llm: %w", err)
			}
			files[file] = f
		}
		info, ok := f.Header.Lookup(p.Name)
		if !ok {
			return fmt.Errorf("llm: %s: tensor %q not found (config.json needs it)", f.Path, p.Name)
		}
		if _, ok := torchDType(info.DType); !ok {
			return fmt.Errorf("llm: %s: tensor %q: dtype %s is not a float type the model can load", f.Path, p.Name, info.DType)
		}
		if !sameShape(p.Shape, info.Shape) {
			return fmt.Errorf("llm: %s: tensor %q: shape %v, %s needs %v", f.Path, p.Name, info.Shape, ConfigFile, p.Shape)
		}
	}
	return nil
}

// sources maps each tensor name to the file holding it.
func sources(dir string) (map[string]string, error) {
	single := filepath.Join(dir, WeightsFile)
	if _, err := os.Stat(single); err == nil {
		return nil, nil // nil map: everything in model.safetensors
	}
	ixPath := filepath.Join(dir, WeightsIndexFile)
	if _, err := os.Stat(ixPath); err != nil {
		return nil, fmt.Errorf("llm: %s: neither %s nor %s found", dir, WeightsFile, WeightsIndexFile)
	}
	ix, err := safetensors.ReadIndex(ixPath)
	if err != nil {
		return nil, fmt.Errorf("llm: %w", err)
	}
	return ix.WeightMap, nil
}

func (m *Model) loadWeights(dir string) error {
	where, err := sources(dir)
	if err != nil {
		return err
	}
	files := map[string]*safetensors.File{}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	open := func(name string) (*safetensors.File, error) {
		if f, ok := files[name]; ok {
			return f, nil
		}
		f, err := safetensors.Open(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("llm: %w", err)
		}
		files[name] = f
		return f, nil
	}
	return torch.NoGrad(func() error {
		for _, p := range m.named {
			file := WeightsFile
			if where != nil {
				f, ok := where[p.Name]
				if !ok {
					return fmt.Errorf("llm: %s: tensor %q missing from the weight map", filepath.Join(dir, WeightsIndexFile), p.Name)
				}
				file = f
			}
			f, err := open(file)
			if err != nil {
				return err
			}
			if err := loadInto(f, p); err != nil {
				return err
			}
		}
		return nil
	})
}

func loadInto(f *safetensors.File, p NamedParam) error {
	b, info, err := f.Bytes(p.Name)
	if err != nil {
		return fmt.Errorf("llm: %w", err)
	}
	dt, ok := torchDType(info.DType)
	if !ok {
		return fmt.Errorf("llm: %s: tensor %q: dtype %s is not a float type the model can load", f.Path, p.Name, info.DType)
	}
	if want := p.T.Shape(); !sameShape(want, info.Shape) {
		return fmt.Errorf("llm: %s: tensor %q: shape %v, the config needs %v", f.Path, p.Name, info.Shape, want)
	}
	t, err := torch.FromBytes(b, dt, info.Shape...)
	if err != nil {
		return fmt.Errorf("llm: %s: tensor %q: %w", f.Path, p.Name, err)
	}
	defer t.Free()
	s := torch.NewScope()
	s.CopyInto(p.T, t)
	if err := s.Close(); err != nil {
		return fmt.Errorf("llm: %s: tensor %q: %w", f.Path, p.Name, err)
	}
	return nil
}

// Save writes the model as a Hugging Face folder: config.json,
// model.safetensors (or shards of at most 5 GB with an index) and
// generation_config.json. LoRA adapters are merged into the saved weights.
func (m *Model) Save(dir string) error { return m.SaveSharded(dir, DefaultMaxShardBytes) }

// SaveSharded is Save with a shard size limit in bytes: when the weights
// exceed it they go to model-0000i-of-0000n.safetensors files listed in
// model.safetensors.index.json.
func (m *Model) SaveSharded(dir string, maxShardBytes int64) error {
	return m.save(dir, maxShardBytes, nil, nil)
}

// save writes the folder with extra tensors appended and the config edited.
func (m *Model) save(dir string, maxShardBytes int64, extra []NamedParam, edit func(*Config)) error {
	if err := m.alive(); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("llm: save: %w", err)
	}
	sdt, err := stDType(m.opt.DType)
	if err != nil {
		return err
	}
	var tensors []safetensors.Tensor
	err = torch.NoGrad(func() error {
		s := torch.NewScope()
		defer s.Close()
		merged := m.mergedParams(s)
		if err := s.Err(); err != nil {
			return err
		}
		for _, p := range append(merged, extra...) {
			b, err := torch.Bytes(p.T, m.opt.DType)
			if err != nil {
				return fmt.Errorf("tensor %q: %w", p.Name, err)
			}
			tensors = append(tensors, safetensors.Tensor{Name: p.Name, DType: sdt, Shape: p.T.Shape(), Data: b})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("llm: save: %w", err)
	}
	var total int64
	for _, t := range tensors {
		total += int64(len(t.Data))
	}
	meta := map[string]string{"format": "pt"}
	// remove stale weight files of the other layout
	os.Remove(filepath.Join(dir, WeightsFile))
	os.Remove(filepath.Join(dir, WeightsIndexFile))
	if total <= maxShardBytes {
		if err := safetensors.Write(filepath.Join(dir, WeightsFile), tensors, meta); err != nil {
			return fmt.Errorf("llm: save: %w", err)
		}
	} else {
		var shards [][]safetensors.Tensor
		var cur []safetensors.Tensor
		var size int64
		for _, t := range tensors {
			if len(cur) > 0 && size+int64(len(t.Data)) > maxShardBytes {
				shards = append(shards, cur)
				cur, size = nil, 0
			}
			cur = append(cur, t)
			size += int64(len(t.Data))
		}
		shards = append(shards, cur)
		wm := map[string]string{}
		for i, sh := range shards {
			name := fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, len(shards))
			for _, t := range sh {
				wm[t.Name] = name
			}
			if err := safetensors.Write(filepath.Join(dir, name), sh, meta); err != nil {
				return fmt.Errorf("llm: save: %w", err)
			}
		}
		if err := safetensors.WriteIndex(filepath.Join(dir, WeightsIndexFile), wm, total); err != nil {
			return fmt.Errorf("llm: save: %w", err)
		}
	}
	cfg := m.cfg
	cfg.TorchDType = configDType(m.opt.DType)
	if edit != nil {
		edit(&cfg)
	}
	cb, err := MarshalConfig(cfg)
	if err != nil {
		return fmt.Errorf("llm: save: config: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ConfigFile), cb, 0o644); err != nil {
		return fmt.Errorf("llm: save: %w", err)
	}
	gb := m.genConfig
	if gb == nil {
		g := map[string]any{}
		if cfg.BOSTokenID != nil {
			g["bos_token_id"] = *cfg.BOSTokenID
		}
		if len(cfg.EOSTokenID) > 0 {
			g["eos_token_id"] = cfg.EOSTokenID
		}
		if gb, err = json.MarshalIndent(g, "", "  "); err != nil {
			return fmt.Errorf("llm: save: %w", err)
		}
		gb = append(gb, '\n')
	}
	if err := os.WriteFile(filepath.Join(dir, GenerationConfigFile), gb, 0o644); err != nil {
		return fmt.Errorf("llm: save: %w", err)
	}
	return nil
}

// GenerationEOS returns the eos ids of generation_config.json (or of
// config.json when the model has none).
func (m *Model) GenerationEOS() []int {
	if m.genConfig != nil {
		var g struct {
			EOS IDList `json:"eos_token_id"`
		}
		if json.Unmarshal(m.genConfig, &g) == nil && len(g.EOS) > 0 {
			return append([]int(nil), g.EOS...)
		}
	}
	return append([]int(nil), m.cfg.EOSTokenID...)
}

// LoadTokenizer loads the Hugging Face tokenizer of a model folder
// (tokenizer.json, tokenizer_config.json, generation_config.json).
func LoadTokenizer(dir string) (*tokenizer.HF, error) {
	t, err := tokenizer.LoadHF(dir)
	if err != nil {
		return nil, fmt.Errorf("llm: %w", err)
	}
	return t, nil
}

// HFSaver is a tokenizer that can write its Hugging Face files.
type HFSaver interface {
	Save(dir string) error
}

// SaveHF writes a complete model folder: the model (Save) and, when tok can
// save itself (*tokenizer.HF), its tokenizer files.
//
// A tokenizer that cannot write Hugging Face files is an error before
// anything is written.
func SaveHF(dir string, m *Model, tok tokenizer.Tokenizer) error {
	var sv HFSaver
	if tok != nil {
		var ok bool
		if sv, ok = tok.(HFSaver); !ok {
			return fmt.Errorf("llm: save: tokenizer %T cannot write Hugging Face files (nothing written to %s)", tok, dir)
		}
	}
	if err := m.Save(dir); err != nil {
		return err
	}
	if sv == nil {
		return nil
	}
	if err := sv.Save(dir); err != nil {
		return fmt.Errorf("llm: save tokenizer: %w", err)
	}
	return nil
}

// ListTensors returns the tensor names stored in a model folder, sorted.
func ListTensors(dir string) ([]string, error) {
	where, err := sources(dir)
	if err != nil {
		return nil, err
	}
	if where != nil {
		names := make([]string, 0, len(where))
		for n := range where {
			names = append(names, n)
		}
		sort.Strings(names)
		return names, nil
	}
	f, err := safetensors.Open(filepath.Join(dir, WeightsFile))
	if err != nil {
		return nil, fmt.Errorf("llm: %w", err)
	}
	defer f.Close()
	names := make([]string, 0, len(f.Header.Tensors))
	for _, t := range f.Header.Tensors {
		names = append(names, t.Name)
	}
	sort.Strings(names)
	return names, nil
}
