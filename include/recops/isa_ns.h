// recops/isa_ns.h: RECOPS_ISA_NS, the name of an inline namespace that says which ISA flags the
// including file is compiled with (isa_avx512, isa_avx2 or isa_base). Header code that a baseline
// file and a *_avx2.cpp / *_avx512.cpp file (CMakeLists.txt: compiled with those instructions)
// both instantiate goes inside `inline namespace RECOPS_ISA_NS { ... }`: the copies built with
// different flags then have different symbol names and never merge at link time (a merged AVX2
// copy of an inline function or template would run on a CPU without AVX2). recops/dtype.h's
// functions are inside one; so are the CPU kernels' shared headers. Code that only one file
// includes can use an anonymous namespace instead (hstu_attn/cpu/fwd_kernel.h). ctest
// isa_objects (scripts/check_isa_objects.sh) fails if an ISA object still shares AVX code.
#pragma once

#if defined(__AVX512F__)
#define RECOPS_ISA_NS isa_avx512
#elif defined(__AVX2__)
#define RECOPS_ISA_NS isa_avx2
#else
#define RECOPS_ISA_NS isa_base
#endif
