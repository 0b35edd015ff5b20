package llm

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"ragen/llm/safetensors"
	"ragen/torch"
)

// PEFT adapter folder files.
const (
	AdapterConfigFile  = "adapter_config.json"
	AdapterWeightsFile = "adapter_model.safetensors"
)

// peftPrefix is how PEFT names a causal LM's modules.
const peftPrefix = "base_model.model."

type adapterConfig struct {
	PEFTType      string   `json:"peft_type"`
	TaskType      string   `json:"task_type"`
	R             int      `json:"r"`
	LoRAAlpha     float64  `json:"lora_alpha"`
	LoRADropout   float64  `json:"lora_dropout"`
	TargetModules []string `json:"target_modules"`
	Bias          string   `json:"bias"`
	FanInFanOut   bool     `json:"fan_in_fan_out"`
	UseRSLoRA     bool     `json:"use_rslora"`
}

// LoRAConfig returns the adapter settings and whether LoRA is on.
func (m *Model) LoRAConfig() (LoRAConfig, bool) {
	if m.lora == nil {
		return LoRAConfig{}, false
	}
	return m.lora.cfg, true
}

// SaveLoRA writes the adapters as a PEFT folder (adapter_config.json and
// adapter_model.safetensors, names base_model.model.<module>.lora_A.weight),
// unmerged, so that a LoRA run can resume or be served with the base model.
func (m *Model) SaveLoRA(dir string) error {
	if err := m.alive(); err != nil {
		return err
	}
	if m.lora == nil {
		return fmt.Errorf("llm: save lora: LoRA is not enabled")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("llm: save lora: %w", err)
	}
	sdt, err := stDType(m.opt.DType)
	if err != nil {
		return err
	}
	var ts []safetensors.Tensor
	for _, p := range m.LoRAParams() {
		b, err := torch.Bytes(p.T, m.opt.DType)
		if err != nil {
			return fmt.Errorf("llm: save lora: tensor %q: %w", p.Name, err)
		}
		ts = append(ts, safetensors.Tensor{Name: peftPrefix + p.Name, DType: sdt, Shape: p.T.Shape(), Data: b})
	}
	if err := safetensors.Write(filepath.Join(dir, AdapterWeightsFile), ts, map[string]string{"format": "pt"}); err != nil {
		return fmt.Errorf("llm: save lora: %w", err)
	}
	var targets []string
	for i, on := range m.lora.on {
		if on {
			targets = append(targets, loraTargets[i])
		}
	}
	sort.Strings(targets)
	ac := adapterConfig{PEFTType: "LORA", TaskType: "CAUSAL_LM", R: m.lora.cfg.Rank, LoRAAlpha: m.lora.cfg.Alpha,
		TargetModules: targets, Bias: "none"}
	b, err := json.MarshalIndent(ac, "", "  ")
	if err != nil {
		return fmt.Errorf("llm: save lora: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, AdapterConfigFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("llm: save lora: %w", err)
	}
	return nil
}

// LoadLoRA enables LoRA from a PEFT folder written by SaveLoRA (or by PEFT
// for the supported settings: LORA, no dropout at inference, bias "none",
// no rsLoRA) and loads the adapter weights.
func (m *Model) LoadLoRA(dir string) error {
	p := filepath.Join(dir, AdapterConfigFile)
	b, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("llm: %w", err)
	}
	var ac adapterConfig
	if err := json.Unmarshal(b, &ac); err != nil {
		return fmt.Errorf("llm: %s: %w", p, err)
	}
	switch {
	case ac.PEFTType != "LORA":
		return fmt.Errorf("llm: %s: peft_type %q is not supported (valid: LORA)", p, ac.PEFTType)
	case ac.Bias != "" && ac.Bias != "none":
		return fmt.Errorf("llm: %s: bias %q is not supported (valid: none)", p, ac.Bias)
	case ac.UseRSLoRA || ac.FanInFanOut:
		return fmt.Errorf("llm: %s: use_rslora and fan_in_fan_out are not supported", p)
	}
	if err := m.EnableLoRA(LoRAConfig{Rank: ac.R, Alpha: ac.LoRAAlpha, Targets: ac.TargetModules}); err != nil {
		return fmt.Errorf("llm: %s: %w", p, err)
	}
	wp := filepath.Join(dir, AdapterWeightsFile)
	f, err := safetensors.Open(wp)
	if err != nil {
		return fmt.Errorf("llm: %w", err)
	}
	defer f.Close()
	return torch.NoGrad(func() error {
		for _, q := range m.LoRAParams() {
			name := peftPrefix + q.Name
			if _, ok := f.Header.Lookup(name); !ok {
				// PEFT may also name adapters with the adapter name: lora_A.default.weight
				alt := strings.Replace(name, ".weight", ".default.weight", 1)
				if _, ok := f.Header.Lookup(alt); ok {
					name = alt
				}
			}
			if err := loadInto(f, NamedParam{Name: name, T: q.T}); err != nil {
				return err
			}
		}
		return nil
	})
}
