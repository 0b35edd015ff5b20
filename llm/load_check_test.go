package llm

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Load compares the checkpoint's headers with config.json before it
// allocates the model: a config whose vocab_size is far larger than the
// checkpoint's embedding (2^40 rows here: 256 TiB to allocate) is a shape
// error naming the tensor, not an allocation first. Missing tensors and
// non-float dtypes are found the same way.
func TestLoadChecksHeadersBeforeAllocating(t *testing.T) {
	m := tinyModel(t, 1, false)
	dir := t.TempDir()
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	m.Close()
	edit := func(t *testing.T, f func(map[string]any)) string {
		t.Helper()
		d := t.TempDir()
		for _, n := range []string{ConfigFile, WeightsFile} {
			b, err := os.ReadFile(filepath.Join(dir, n))
			if err != nil {
				t.Fatal(err)
			}
			if n == ConfigFile {
				var c map[string]any
				if err := json.Unmarshal(b, &c); err != nil {
					t.Fatal(err)
				}
				f(c)
				if b, err = json.Marshal(c); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(d, n), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	for _, tc := range []struct {
		name string
		f    func(map[string]any)
		want string
	}{
		{"vocab", func(c map[string]any) { c["vocab_size"] = 1 << 40 }, `tensor "model.embed_tokens.weight": shape [300 64], config.json needs [1099511627776 64]`},
		{"layers", func(c map[string]any) { c["num_hidden_layers"] = 1000 }, `tensor "model.layers.2.self_attn.q_proj.weight" not found (config.json needs it)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(edit(t, tc.f), DefaultOptions())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
	if m, err := Load(dir, DefaultOptions()); err != nil {
		t.Fatalf("the unedited folder: %v", err)
	} else {
		m.Close()
	}
}
