// Package csrc holds the C++ shim over libtorch (ATen) and its Go face. It
// is the only package in ragen that uses cgo (the only `import "C"`) and the
// only code the C++ compiler sees.
//
// api.go and api_llm.go wrap each C function of shim.h in one thin exported
// Go function over Go types: Tensor and Gen are opaque handles whose zero
// value is NULL, lists are Go slices (a []Tensor has the layout of a C
// tt_tensor array, so it crosses without copying), and a failed call returns
// an *Error carrying the op and libtorch's message. The wrappers add nothing
// to the cgo call but the conversions and, where C takes several arrays of
// one length, a length check; package torch owns the policy (lifetime,
// scopes, validation) on top.
//
// shim.h and tensor_impl.hpp are included only from this directory, so
// cmd/go hashes them into this package's build key (it does not hash headers
// a package includes from another directory); a header edit rebuilds csrc
// and, through it, everything above.
//
// Build modes:
//   - default: Debian's libtorch from /usr/include and /usr/lib (flags_system.go);
//   - tag torchpc: flags from a generated ragen-torch.pc (scripts/gen-torch-pc.sh);
//   - tag cuda: additionally links libtorch_cuda and enables CUDA generators;
//   - tag torchshared: shim.cc is not compiled in; binaries link
//     libragen_torch.so, built from the same shim.cc by scripts/build-shim.sh.
package csrc

/*
#cgo CXXFLAGS: -std=c++17 -g0 -O1 -fPIC -fopenmp -Wno-deprecated-declarations
*/
import "C"
