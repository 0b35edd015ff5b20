package cli

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ragen/torch"
)

// actor_rollout_ref.model.compute_dtype turns on mixed precision (bf16
// compute on float32 master weights); absent or auto, llm.AutoComputeDType
// chooses; a dtype that cannot be a compute dtype is an error naming the key.
func TestModelOptionsComputeDType(t *testing.T) {
	tr, _, err := loadTree([]string{"model_path=tiny", "+actor_rollout_ref.model.compute_dtype=bf16"}, "base")
	if err != nil {
		t.Fatal(err)
	}
	opt, err := modelOptions(tr, "")
	if err != nil {
		t.Fatal(err)
	}
	if opt.DType != torch.Float32 || opt.ComputeDType != torch.BFloat16 {
		t.Fatalf("dtype %v, compute %v; want float32 master weights and bfloat16 compute", opt.DType, opt.ComputeDType)
	}
	for _, v := range []string{"", "+actor_rollout_ref.model.compute_dtype=auto", "+actor_rollout_ref.model.compute_dtype=fp32"} {
		args := []string{"model_path=tiny"}
		if v != "" {
			args = append(args, v)
		}
		tr, _, err := loadTree(args, "base")
		if err != nil {
			t.Fatal(err)
		}
		opt, err := modelOptions(tr, "")
		if err != nil {
			t.Fatal(err)
		}
		// absent and auto leave the choice to llm.AutoComputeDType; a dtype is taken as given
		if wantAuto := !strings.HasSuffix(v, "fp32"); opt.AutoCompute != wantAuto || (!wantAuto && opt.ComputeDType != torch.Float32) {
			t.Fatalf("%q: auto %v, compute %v", v, opt.AutoCompute, opt.ComputeDType)
		}
	}
	tr, _, err = loadTree([]string{"model_path=tiny", "+actor_rollout_ref.model.compute_dtype=int64"}, "base")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := modelOptions(tr, ""); err == nil || !strings.Contains(err.Error(), "compute_dtype") {
		t.Fatalf("compute_dtype=int64: %v", err)
	}
}

// A rule that config.Validate reports (it runs the owning package's check)
// is reported once, not again by that package's Validate.
func TestLibraryConfigsReportOnce(t *testing.T) {
	tr, _, err := loadTree([]string{"model_path=tiny", "es_manager.train.env_groups=2", "es_manager.train.group_size=2"}, "base")
	if err != nil {
		t.Fatal(err)
	}
	_, _, _, _, err = libraryConfigs(tr)
	if err == nil {
		t.Fatal("env_groups=2 with n_groups [8]: no error")
	}
	if n := strings.Count(err.Error(), "sums to 8 but env_groups=2"); n != 1 {
		t.Fatalf("the n_groups problem is reported %d times:\n%v", n, err)
	}
}

// A key deleted with ~ takes upstream's code default, not base.yaml's
// (filter.md §1, collapse.md §1): rollout_filter_value 0.25, empty-stop
// 10, no collapse diagnostics; rollout_filter_type is required.
func TestDeletedKeysTakeCodeDefaults(t *testing.T) {
	tr, _, err := loadTree([]string{"model_path=tiny", "~actor_rollout_ref.rollout.rollout_filter_value",
		"~actor_rollout_ref.rollout.rollout_filter_empty_stop_steps", "~collapse_detection"}, "base")
	if err != nil {
		t.Fatal(err)
	}
	_, _, fc, cc, err := libraryConfigs(tr)
	if err != nil {
		t.Fatal(err)
	}
	if fc.Value != 0.25 || fc.EmptyStopSteps != 10 || cc.FirstTurnEnabled || cc.MultiTurnEnabled {
		t.Errorf("filter value %v, empty-stop %d, collapse families %v/%v", fc.Value, fc.EmptyStopSteps, cc.FirstTurnEnabled, cc.MultiTurnEnabled)
	}
	tr, _, err = loadTree([]string{"model_path=tiny", "~actor_rollout_ref.rollout.rollout_filter_type"}, "base")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, _, err := libraryConfigs(tr); err == nil || !strings.Contains(err.Error(), "rollout_filter_type is missing") {
		t.Errorf("no rollout_filter_type: %v", err)
	}
	// with base.yaml's keys in place, base.yaml's values
	tr, _, _ = loadTree([]string{"model_path=tiny"}, "base")
	if _, _, fc, cc, err := libraryConfigs(tr); err != nil || fc.Value != 1 || fc.EmptyStopSteps != 5 || !cc.FirstTurnEnabled {
		t.Errorf("base: %v %v %v %v", fc.Value, fc.EmptyStopSteps, cc.FirstTurnEnabled, err)
	}
}

// ragen eval's output path follows upstream's output.*: dir, the
// filename's stem, a timestamp when append_timestamp, and .jsonl.
func TestEvalOutputPath(t *testing.T) {
	now := time.Date(2025, 3, 30, 14, 5, 9, 0, time.UTC)
	dir := t.TempDir()
	for _, c := range []struct {
		over []string
		want string
	}{
		{nil, "val_rollouts_20250330_140509.jsonl"},
		{[]string{"output.filename=mine.jsonl", "output.append_timestamp=false"}, "mine.jsonl"},
		{[]string{"output.filename=runA.pkl"}, "runA_20250330_140509.jsonl"},
	} {
		tr, _, err := loadTree(append([]string{"output.dir=" + dir}, c.over...), "eval")
		if err != nil {
			t.Fatal(err)
		}
		got, err := evalOutputPathAt(tr, "", now)
		if err != nil || got != filepath.Join(dir, c.want) {
			t.Errorf("%v: %q %v, want %q", c.over, got, err, c.want)
		}
	}
}
