package config

import (
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestGoldenBase pins the resolved key tree of base.yaml + ppo_trainer.yaml (with an empty
// env registry, so the golden file does not depend on envs.yaml) as printed by YAML(), and
// the raw form as printed by RawYAML().
func TestGoldenBase(t *testing.T) {
	m := fstest.MapFS{"envs.yaml": {Data: []byte("custom_envs: {}\n")}}
	for _, name := range []string{"base.yaml", "ppo_trainer.yaml"} {
		data, err := fs.ReadFile(Embedded(), name)
		if err != nil {
			t.Fatal(err)
		}
		m[name] = &fstest.MapFile{Data: data}
	}
	tr := mustLoad(t, "base", nil, WithFS(m))
	for file, got := range map[string]string{"base_resolved.yaml": tr.YAML(), "base_raw.yaml": tr.RawYAML()} {
		path := filepath.Join("testdata", file)
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test -run TestGoldenBase -update)", err)
		}
		if string(want) != got {
			t.Errorf("%s differs from the rendered config; rerun with -update if intended.\ngot:\n%s", path, got)
		}
	}
}
