// core/kit/impls.h: the declarations of an op's usual implementations in one line, and the
// macro that names the CUDA one only in builds that have it (for core::standard_impls).
#pragma once

#include "recops/context.h"
#include "recops/status.h"

// `x` in builds with CUDA, nullptr in builds without.
#ifdef RECOPS_WITH_CUDA
#define RECOPS_IF_CUDA(x) x
#else
#define RECOPS_IF_CUDA(x) nullptr
#endif

// Declares `Status f(const Params&, const Context&)` for the fp64 reference, the CPU and the CUDA
// implementation. All three are declared in every build; the CUDA one is defined only in builds
// with CUDA, so name it through RECOPS_IF_CUDA.
#define RECOPS_DECLARE_IMPLS(Params, reference, cpu, cuda)                   \
  ::recops::Status reference(const Params& p, const ::recops::Context& ctx); \
  ::recops::Status cpu(const Params& p, const ::recops::Context& ctx);       \
  ::recops::Status cuda(const Params& p, const ::recops::Context& ctx)
