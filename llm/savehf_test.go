package llm

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ragen/llm/tokenizer"
)

// SaveHF with a tokenizer that cannot write Hugging Face files fails before
// it writes anything.
func TestSaveHFChecksTokenizerFirst(t *testing.T) {
	m := tinyModel(t, 1, true)
	defer m.Close()
	dir := filepath.Join(t.TempDir(), "out")
	err := SaveHF(dir, m, tokenizer.NewByte())
	if err == nil || !strings.Contains(err.Error(), "cannot write Hugging Face files") {
		t.Fatalf("err %v", err)
	}
	if ents, err := os.ReadDir(dir); !os.IsNotExist(err) {
		t.Fatalf("SaveHF wrote %v (%v)", ents, err)
	}
}

// A llama config.json carries rope_scaling's factors as JSON floats, as
// transformers writes them (it warns on every load of integers), and no
// use_sliding_window (a Qwen2/Qwen3 key); qwen2 keeps it.
func TestMarshalConfigLlama(t *testing.T) {
	c, err := TinyConfigFor("llama", 300)
	if err != nil {
		t.Fatal(err)
	}
	b, err := MarshalConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if _, ok := raw["use_sliding_window"]; ok {
		t.Errorf("llama config has use_sliding_window:\n%s", b)
	}
	var rs map[string]json.RawMessage
	if err := json.Unmarshal(raw["rope_scaling"], &rs); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"factor": "32.0", "low_freq_factor": "1.0", "high_freq_factor": "4.0",
		"original_max_position_embeddings": "64", "rope_type": `"llama3"`} {
		if got := string(rs[k]); got != want {
			t.Errorf("rope_scaling.%s = %s, want %s", k, got, want)
		}
	}
	// read back, the same config
	c2, err := ParseConfig(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := c2.Validate(); err != nil {
		t.Fatal(err)
	}
	if b2, _ := MarshalConfig(c2); string(b2) != string(b) {
		t.Errorf("not stable:\n%s\n%s", b, b2)
	}
	q, err := TinyConfigFor("qwen2", 300)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := MarshalConfig(q); !strings.Contains(string(b), `"use_sliding_window": false`) {
		t.Errorf("qwen2 config lost use_sliding_window:\n%s", b)
	}
}
