package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"ragen/torch"
)

func version() string {
	rev := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				rev = s.Value
			}
		}
	}
	return fmt.Sprintf("ragen (rev %s) %s, %s, cuda=%v", rev, runtime.Version(), torch.BuildInfo(), torch.CUDAAvailable())
}
