// gemm.hpp - float32 matrix products through oneDNN's sgemm where the
// process has it (shim_gemm.cc), and the linear layer built on them. Included
// only from this directory.
//
// libtorch 1.13 sends float32 CPU matmuls to its BLAS (OpenBLAS on Debian);
// on the shapes of a decoder layer's training step oneDNN's AVX-512 sgemm
// measures 5-15% faster on this project's 2-core machine, most on the
// backward's products. libtorch_cpu already links oneDNN, so its C entry
// point dnnl_sgemm is looked up at run time; where it is absent (a libtorch
// that links oneDNN statically without exporting it, as PyTorch's wheels may)
// or turned off (RAGEN_GEMM=aten), everything here falls back to the ATen op
// it replaces.
#pragma once

#include <ATen/core/Tensor.h>

namespace tt_gemm {

// available says whether the oneDNN path is on.
bool available();

// mm_into sets c = op(a) op(b) + beta c for 2-D float32 CPU tensors with a
// unit last stride (op transposes when ta or tb), c (M,N) contiguous rows:
// oneDNN when available, else at::mm / addmm_ into c.
void mm_into(const at::Tensor& a, bool ta, const at::Tensor& b, bool tb, at::Tensor& c, float beta);

// mm is op(a) op(b) as a new tensor of a's options, by mm_into.
at::Tensor mm(const at::Tensor& a, bool ta, const at::Tensor& b, bool tb);

// linear is at::linear(x, w, b) (b may be undefined); for a float32 CPU x
// and w its forward and backward products take mm_into, as one autograd
// node that saves what at::linear's saves (x and w).
at::Tensor linear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b);

}  // namespace tt_gemm
