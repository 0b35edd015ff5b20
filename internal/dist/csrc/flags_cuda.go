//go:build cuda && !torchshared

package csrc

/*
#cgo CXXFLAGS: -DRAGEN_WITH_CUDA -DUSE_C10D_NCCL
#cgo LDFLAGS: -Wl,--no-as-needed -ltorch_cuda -lc10_cuda -Wl,--as-needed
*/
import "C"
