// tensor_impl.hpp - C++-only definition of the opaque tensor handle, shared by
// the shims (ops and, later, dist). Keep it tiny and stable: cmd/go does not
// track it as a dependency of other packages.
#pragma once
#include <ATen/core/Tensor.h>

struct tt_tensor_s {
  at::Tensor t;
};
