// tools/recops/safetensors.h: reading and writing the safetensors format (record / compare).
//
// Layout: an 8-byte little-endian header length N, N bytes of JSON
// {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
//  "__metadata__": {"key": "value"}}, then the raw little-endian data; offsets are relative to
// the end of the header. Python's `safetensors` and `torch` (via safetensors.torch) load it.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "recops/status.h"
#include "recops/tensor.h"

namespace recops::cli {

// The format's dtype spelling: F64 F32 F16 BF16 F8_E4M3 I32 I64 U8 BOOL.
const char* safetensors_dtype(DType t);

// Writes named host tensors (any strides; stored contiguous, row-major) in the given order.
Status write_safetensors(const std::string& path,
                         const std::vector<std::pair<std::string, TensorView>>& tensors,
                         const std::map<std::string, std::string>& metadata);

struct SafetensorsFile {
  std::vector<std::pair<std::string, Tensor>> tensors;  // in data order, contiguous host tensors
  std::map<std::string, std::string> metadata;
  const Tensor* find(const std::string& name) const;
};

// Reads a whole file; any malformation is an error naming the file and what is wrong.
Status read_safetensors(const std::string& path, SafetensorsFile* out);

}  // namespace recops::cli
