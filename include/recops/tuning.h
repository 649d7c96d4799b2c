// recops/tuning.h: tunable configurations of an implementation and the tuned-configuration files.
//
// An implementation with tunable parameters (threads per block, rows per thread, CPU grain sizes)
// lists its candidate configurations in the registry (ImplInfo::candidates). At run time it uses,
// in this order: the configuration forced through Context::tune_config (what `recops tune` does
// for each candidate); the entry of the tuning file for (device name, op, impl, dtype, shape
// bucket); its built-in heuristic. The tuning files are JSON written by `recops tune`
// (tools/recops/README.md describes the format):
//
//   $RECOPS_TUNING_FILE   a file, or a directory whose *.json files are all read;
//                         `none` (or `off`, or empty) turns tuned configurations off;
//   else                  $RECOPS_SOURCE_DIR/tuning, else the tuning/ folder of the source tree
//                         this library was built from (absent: built-in heuristics only).
//
// Files are read once per process (reload_tuning() re-reads them).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "recops/device.h"
#include "recops/dtype.h"

namespace recops {

// One configuration: parameter name -> value, in the implementation's order.
struct TuneConfig {
  std::vector<std::pair<std::string, int64_t>> values;

  // The value of `name`, or `fallback` when the configuration does not set it.
  int64_t get(std::string_view name, int64_t fallback) const;
  bool has(std::string_view name) const;
  void set(std::string_view name, int64_t value);
  // "threads=256,rows_per_thread=4" (empty string for an empty configuration).
  std::string str() const;
  // Parses str()'s form; false (and *error says why) on anything else.
  static bool parse(std::string_view text, TuneConfig* out, std::string* error);
  bool operator==(const TuneConfig& o) const;
};

// What a tunable implementation ran with (Context::tune_used).
struct TuneUsed {
  std::string impl;    // the implementation id
  std::string bucket;  // its shape bucket, e.g. "row_bytes=512,rows=2^20"
  TuneConfig config;
  std::string source;  // "forced" (Context::tune_config), "tuned" (a tuning file) or "default"
};

// One entry of the loaded tuning files.
struct TunedEntry {
  std::string device, op, impl, dtype, bucket;
  TuneConfig config;
  std::string file;  // where it came from
};

// The files the library reads (after resolving $RECOPS_TUNING_FILE); empty when tuning is off or
// nothing is there. `where` (optional) describes the source ("RECOPS_TUNING_FILE=..." or the
// default folder).
std::vector<std::string> tuning_files(std::string* where = nullptr);
// Every loaded entry for `device` (all devices when empty), and the problems met while loading
// (unreadable files, malformed entries: each names the file).
std::vector<TunedEntry> tuned_entries(const std::string& device = "");
std::vector<std::string> tuning_load_errors();
// Re-reads the tuning files (after changing $RECOPS_TUNING_FILE, e.g. in tests).
void reload_tuning();

// The device name tuning files are keyed by: the CUDA device's name, or the CPU model name.
std::string tuning_device_name(DeviceType backend, int device_index = 0);
// A file-name form of a device name: "NVIDIA H200" -> "nvidia-h200".
std::string device_slug(std::string_view device);

}  // namespace recops
