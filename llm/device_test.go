package llm

import (
	"os"
	"testing"

	"ragen/torch"
)

// testOptions are the model options of device-aware tests: the device named
// by RAGEN_TEST_DEVICE (default cpu). The GPU bundle (make gpu-bundle) runs
// them with RAGEN_TEST_DEVICE=cuda; without CUDA such a run skips.
func testOptions(t *testing.T) Options {
	t.Helper()
	opt := DefaultOptions()
	d, err := torch.ParseDevice(os.Getenv("RAGEN_TEST_DEVICE"))
	if err != nil {
		t.Fatal(err)
	}
	if d.IsCUDA() && !torch.CUDAAvailable() {
		t.Skipf("RAGEN_TEST_DEVICE=%s but this build has no CUDA (%s)", d, torch.BuildInfo())
	}
	opt.Device = d
	return opt
}
