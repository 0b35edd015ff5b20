// tensor_impl.hpp - C++-only definition of the opaque tensor handle, shared by
// the shims (ops and, later, dist). Keep it tiny and stable: cmd/go does not
// track it as a dependency of other packages.
#pragma once
#include <ATen/core/Tensor.h>

struct tt_tensor_s {
  at::Tensor t;
};

// tt_counted returns a new handle holding t, counted by tt_live (defined in
// shim.cc; every shim file makes its handles with it).
tt_tensor_s* tt_counted(at::Tensor t);
