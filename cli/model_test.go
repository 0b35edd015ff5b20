package cli

import (
	"strings"
	"testing"

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
