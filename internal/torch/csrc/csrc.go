// Package csrc holds the C++ shim over libtorch (ATen). It is the only code
// in ragen that the C++ compiler sees; package torch wraps it in Go.
//
// Build modes:
//   - default: Debian's libtorch from /usr/include and /usr/lib (flags_system.go);
//   - tag torchpc: flags from a generated ragen-torch.pc (scripts/gen-torch-pc.sh);
//   - tag cuda: additionally links libtorch_cuda and enables CUDA generators;
//   - tag torchshared: shim.cc is not compiled in; binaries link
//     libragen_torch.so, built from the same shim.cc by scripts/build-shim.sh.
package csrc

/*
#cgo CXXFLAGS: -std=c++17 -g0 -O1 -fPIC -Wno-deprecated-declarations
*/
import "C"
