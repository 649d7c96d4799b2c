// training/sort_chunks_by_idx/sort_chunks_by_idx.h: the op's C++ API (torch-free). The Args
// structs are the argument tables' structs (the entry's kit::Def binds each member).
//
// sort_chunks_by_idx:      output = cat(chunk[sorted_idx[0]], chunk[sorted_idx[1]], ...), chunks
//                          of input's rows by split_sizes; permuted_probs likewise from probs
// sort_chunks_by_idx_bwd:  the inverse row moves (grad_input from grad_output)
#pragma once

#include <optional>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct SortChunksByIdxArgs {
  TensorView input;                 // [T, ...], any dtype, contiguous
  TensorView split_sizes;           // [C], int32/int64, Σ = T
  TensorView sorted_idx;            // [C], int32/int64, a permutation of 0..C-1
  std::optional<TensorView> probs;  // [T], floating
};

// output: input's shape and dtype; permuted_probs: probs' (not present without probs).
Status sort_chunks_by_idx(const SortChunksByIdxArgs& a, const TensorView& output,
                          const TensorView* permuted_probs, const Context& ctx = {});

struct SortChunksByIdxBwdArgs {
  TensorView grad_output;                // [T, ...]
  TensorView split_sizes;                // as in the forward
  TensorView sorted_idx;                 // as in the forward
  std::optional<TensorView> grad_probs;  // [T]
};

// grad_input: grad_output's shape and dtype; grad_probs_in: grad_probs' (present with it).
Status sort_chunks_by_idx_bwd(const SortChunksByIdxBwdArgs& a, const TensorView& grad_input,
                              const TensorView* grad_probs_in, const Context& ctx = {});

// Scratch bytes on the tensors' device: (3C + 2) int64 on CUDA, 0 on the CPU.
size_t sort_chunks_by_idx_workspace_bytes(const TensorView& input, const TensorView& split_sizes);

}  // namespace recops
