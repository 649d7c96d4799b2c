// tools/recops/safetensors.cpp: the safetensors format (see safetensors.h), written by hand.
#include "tools/recops/safetensors.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <vector>

#include "tools/recops/gen.h"

namespace recops::cli {
namespace {

Status bad(const std::string& path, const std::string& what) {
  return Status(StatusCode::invalid_argument, path + ": " + what);
}

// A header array of non-negative integers up to INT64_MAX, each checked before it is converted:
// nlohmann's get<int64_t>() casts a number such as 3.06e19 or -1.5 as it is, undefined behaviour
// out of range (the fuzzer found it in data_offsets). nullopt names nothing; the caller does.
std::optional<std::vector<int64_t>> counts(const nlohmann::json& j) {
  if (!j.is_array()) return std::nullopt;
  std::vector<int64_t> v;
  for (const auto& x : j) {
    if (!x.is_number_unsigned() || x.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      return std::nullopt;
    v.push_back(static_cast<int64_t>(x.get<uint64_t>()));
  }
  return v;
}

std::optional<DType> dtype_from_safetensors(const std::string& s) {
  for (DType t : kAllDTypes)
    if (s == safetensors_dtype(t)) return t;
  return std::nullopt;
}

}  // namespace

const char* safetensors_dtype(DType t) {
  switch (t) {
    case DType::fp64: return "F64";
    case DType::fp32: return "F32";
    case DType::fp16: return "F16";
    case DType::bf16: return "BF16";
    case DType::fp8_e4m3: return "F8_E4M3";
    case DType::int32: return "I32";
    case DType::int64: return "I64";
    case DType::uint8: return "U8";
    case DType::boolean: return "BOOL";
  }
  return "?";
}

const Tensor* SafetensorsFile::find(const std::string& name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return &t;
  return nullptr;
}

Status write_safetensors(const std::string& path,
                         const std::vector<std::pair<std::string, TensorView>>& tensors,
                         const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  // Each tensor packed contiguous (row-major over its logical shape), back to back.
  std::string data;
  for (const auto& [name, v] : tensors) {
    if (name == "__metadata__" || header.contains(name))
      return bad(path, "tensor name '" + name + "' is reserved or repeated");
    if (!v.device.is_cpu()) return bad(path, "tensor '" + name + "' is not on the host");
    const auto esize = static_cast<size_t>(dtype_size(v.dtype));
    const size_t begin = data.size();
    data.resize(begin + static_cast<size_t>(v.numel()) * esize);
    const char* src = static_cast<const char*>(v.data);
    for_each_element(v, [&](int64_t i, int64_t off) {
      std::memcpy(&data[begin + static_cast<size_t>(i) * esize], src + off * esize, esize);
    });
    nlohmann::json shape = nlohmann::json::array();
    for (int d = 0; d < v.ndim; ++d) shape.push_back(v.sizes[d]);
    header[name] = {{"dtype", safetensors_dtype(v.dtype)},
                    {"shape", shape},
                    {"data_offsets", {begin, data.size()}}};
  }
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');  // the format allows trailing spaces; aligns the data
  uint8_t len[8];
  for (int i = 0; i < 8; ++i)
    len[i] = static_cast<uint8_t>(static_cast<uint64_t>(h.size()) >> (8 * i));
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(len), 8);
  f.write(h.data(), static_cast<std::streamsize>(h.size()));
  f.write(data.data(), static_cast<std::streamsize>(data.size()));
  f.close();
  if (!f) return bad(path, "cannot write");
  return Status::Ok();
}

Status read_safetensors(const std::string& path, SafetensorsFile* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return bad(path, "cannot open");
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (bytes.size() < 8) return bad(path, "shorter than the 8-byte header length");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[i])) << (8 * i);
  if (n > bytes.size() - 8)
    return bad(path, "header length " + std::to_string(n) + " past the end");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.substr(8, n));
  } catch (const std::exception& e) {
    return bad(path, std::string("header is not JSON: ") + e.what());
  }
  if (!header.is_object()) return bad(path, "header is not a JSON object");
  const size_t data_begin = 8 + n, data_size = bytes.size() - data_begin;
  out->tensors.clear();
  out->metadata.clear();
  std::vector<std::pair<uint64_t, std::pair<std::string, Tensor>>> by_offset;
  try {
    for (const auto& [name, e] : header.items()) {
      if (name == "__metadata__") {
        for (const auto& [k, v] : e.items()) out->metadata[k] = v.get<std::string>();
        continue;
      }
      const auto dt = dtype_from_safetensors(e.at("dtype").get<std::string>());
      if (!dt) return bad(path, "tensor '" + name + "': unsupported dtype " + e.at("dtype").dump());
      const auto dims = counts(e.at("shape"));
      if (!dims)
        return bad(path, "tensor '" + name +
                             "': shape must be an array of integers in [0, 2^63), got " +
                             e.at("shape").dump());
      const Shape shape = *dims;
      const auto given = counts(e.at("data_offsets"));
      if (!given || given->size() != 2)
        return bad(path, "tensor '" + name +
                             "': data_offsets must be two integers in [0, 2^63), got " +
                             e.at("data_offsets").dump());
      const uint64_t offs[2] = {static_cast<uint64_t>((*given)[0]),
                                static_cast<uint64_t>((*given)[1])};
      if (offs[0] > offs[1] || offs[1] > data_size)
        return bad(path, "tensor '" + name + "': data_offsets out of the data section");
      // The shape's byte count, overflow-checked, before anything is allocated: a file from
      // elsewhere may claim [2^61 + 2] elements over 16 bytes.
      int64_t need = 0;
      if (Status st = checked_nbytes("tensor '" + name + "'", shape, *dt, &need); !st.ok())
        return bad(path, st.message());
      if (static_cast<uint64_t>(need) != offs[1] - offs[0])
        return bad(path, "tensor '" + name + "': data_offsets span " +
                             std::to_string(offs[1] - offs[0]) + " bytes, its shape needs " +
                             std::to_string(need));
      Tensor t = Tensor::empty(shape, *dt);
      if (t.nbytes() > 0)
        std::memcpy(t.data(), bytes.data() + data_begin + offs[0], static_cast<size_t>(t.nbytes()));
      by_offset.push_back({offs[0], {name, std::move(t)}});
    }
  } catch (const nlohmann::json::exception& e) {
    return bad(path, std::string("malformed header: ") + e.what());
  }
  std::stable_sort(by_offset.begin(), by_offset.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [o, nt] : by_offset) out->tensors.push_back(std::move(nt));
  return Status::Ok();
}

}  // namespace recops::cli
