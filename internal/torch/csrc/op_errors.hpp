// op_errors.hpp - the error convention of the shim's C entry points
// (shim.h: a tt_err is NULL or a malloc'd "op: reason" the caller frees),
// for the files whose entry points share it (shim.cc, shim_llm.cc,
// shim_train.cc).
// Included only from this directory.
#pragma once

#include <c10/util/Exception.h>

#include <cstdlib>
#include <cstring>
#include <exception>

#include "shim.h"

// op_err returns "op: msg" in malloc'd memory.
inline tt_err op_err(const char* op, const char* msg) {
  size_t a = strlen(op), b = strlen(msg);
  char* s = (char*)malloc(a + b + 3);
  memcpy(s, op, a);
  s[a] = ':';
  s[a + 1] = ' ';
  memcpy(s + a + 2, msg, b + 1);
  return s;
}

// OP_TRY opens an entry point's body: it names the op for its errors and
// applies the process-wide thread count on this OS thread (tt_get_num_threads).
// OP_CATCH closes it, turning any C++ exception into the op's tt_err;
// OP_NEED returns the op's error msg unless cond holds.
#define OP_TRY(opname)        \
  const char* tt_op = opname; \
  tt_get_num_threads();       \
  try {
#define OP_CATCH                                                                      \
  }                                                                                   \
  catch (const c10::Error& e) { return op_err(tt_op, e.what_without_backtrace()); }   \
  catch (const std::exception& e) { return op_err(tt_op, e.what()); }                 \
  catch (...) { return op_err(tt_op, "unknown C++ exception"); }                      \
  return nullptr;
#define OP_NEED(cond, msg) \
  if (!(cond)) return op_err(tt_op, msg);
