package config

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readArgs reads a testdata/runs file: one argument per line, # comments.
func readArgs(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var args []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		args = append(args, line)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return args
}

// TestUpstreamRunScripts: every upstream run script's override set composes,
// derives and validates unmodified, and its inert keys are named in the
// start-up notice.
func TestUpstreamRunScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/runs/*.args")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 13 {
		t.Fatalf("%d run scripts in testdata/runs, want upstream's 13", len(files))
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".args"), func(t *testing.T) {
			a, err := ParseArgs(readArgs(t, path))
			if err != nil {
				t.Fatal(err)
			}
			tr, err := a.Load()
			if err != nil {
				t.Fatal(err)
			}
			if err := Derive(tr); err != nil {
				t.Fatal(err)
			}
			if err := Validate(tr); err != nil {
				t.Fatal(err)
			}
			notice := InertNotice(tr, a.Overrides...)
			for _, o := range a.Overrides {
				k, _, _ := strings.Cut(strings.TrimLeft(o, "+~"), "=")
				if _, inert := Inert(k); inert && !strings.Contains(notice, k+"=") {
					t.Errorf("inert override %s not named in the notice:\n%s", k, notice)
				}
			}
		})
	}
}

func TestInertKeys(t *testing.T) {
	for _, tc := range []struct {
		key   string
		inert bool
	}{
		{"ray_kwargs.ray_init.num_cpus", true},
		{"actor_rollout_ref.actor.fsdp_config.param_offload", true},
		{"critic.model.fsdp_config.wrap_policy.min_num_params", true},
		{"actor_rollout_ref.ref.entropy_from_logits_with_chunking", true},
		{"trainer.checkpoint.save_contents", true},
		{"actor_rollout_ref.rollout.gpu_memory_utilization", true},
		{"actor_rollout_ref.rollout.temperature", false},
		{"actor_rollout_ref.actor.entropy_coeff", false},
		{"trainer.total_training_steps", false},
		{"ray", false},
	} {
		if _, got := Inert(tc.key); got != tc.inert {
			t.Errorf("Inert(%s) = %v, want %v", tc.key, got, tc.inert)
		}
	}
	// A key that is neither in the config nor inert is still refused, with a hint.
	if _, err := Load("base", []string{"actor_rollout_ref.actor.entropy_coef=0.1"}); err == nil || !strings.Contains(err.Error(), "entropy_coeff") {
		t.Fatalf("misspelt key: %v", err)
	}
	tr, err := Load("base", []string{"ray_kwargs.ray_init.num_cpus=16", "~trainer.checkpoint.load_contents"})
	if err != nil {
		t.Fatal(err)
	}
	n := InertNotice(tr)
	if !strings.Contains(n, "ray_kwargs.ray_init.num_cpus=16: ragen runs in one process") || strings.Count(n, "ray_kwargs") != 1 {
		t.Fatalf("notice:\n%s", n)
	}
	if !strings.Contains(n, "more upstream keys at their defaults") {
		t.Fatalf("notice does not count the defaults:\n%s", n)
	}
}
