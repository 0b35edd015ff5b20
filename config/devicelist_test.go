package config

import (
	"strings"
	"testing"
)

// bash strips the quotes of system.CUDA_VISIBLE_DEVICES="0,1": what
// arrives, 0,1, is a device list for a *_VISIBLE_DEVICES key (a single run
// has no sweeps, and such a key holds nothing else), and stays a sweep
// error for any other key.
func TestDeviceListOverride(t *testing.T) {
	for in, want := range map[string]string{
		"system.CUDA_VISIBLE_DEVICES=0,1":                  "0,1",
		"system.CUDA_VISIBLE_DEVICES=0, 1 ,2":              "0, 1 ,2",
		"system.CUDA_VISIBLE_DEVICES='0,1'":                "0,1",
		"++x.HIP_VISIBLE_DEVICES=GPU-ab12-cd,MIG-3:0":      "GPU-ab12-cd,MIG-3:0",
		"system.CUDA_VISIBLE_DEVICES=3":                    "", // an int, as before
		"+system.ROCR_VISIBLE_DEVICES=0,1,2,3,4,5,6,7,8,9": "0,1,2,3,4,5,6,7,8,9",
	} {
		ov, err := ParseOverride(in)
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if got, _ := ov.Value.(string); got != want {
			t.Errorf("%s: value %#v, want %q", in, ov.Value, want)
		}
	}
	for _, in := range []string{"trainer.n_gpus_per_node=0,1", "system.CUDA_VISIBLE_DEVICES=0,[1]", "system.CUDA_VISIBLE_DEVICES=0,'1'",
		"system.CUDA_VISIBLE_DEVICES=0,", "system.CUDA_VISIBLE_DEVICES_X=0,1"} {
		if _, err := ParseOverride(in); err == nil {
			t.Errorf("%s: accepted", in)
		}
	}
	if _, err := ParseOverride("trainer.n_gpus_per_node=0,1"); err == nil || !strings.Contains(err.Error(), "ambiguous value (a sweep)") {
		t.Errorf("another key: %v", err)
	}
	// the README's launch line as bash passes it composes and validates
	tr := mustLoad(t, "base", []string{"trainer.n_gpus_per_node=2", "system.CUDA_VISIBLE_DEVICES=0,1", "ppo_mini_batch_size=32"}, shipped())
	if ps := Check(tr); len(ps) != 0 {
		t.Errorf("%v", ps)
	}
}
