//go:build torchshared

package csrc

// With the torchshared tag dist.cc is not compiled in: binaries link
// libragen_dist.so (scripts/gpu-bundle.sh builds it next to
// libragen_torch.so, on the GPU machine against its PyTorch).

/*
#cgo LDFLAGS: -lragen_dist -Wl,-rpath,$ORIGIN -Wl,-rpath,$ORIGIN/lib
*/
import "C"
