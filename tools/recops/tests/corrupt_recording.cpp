// tools/recops/tests/corrupt_recording.cpp: copies a `recops record` directory and flips bits in
// the last data byte of one file in the copy, so that `compare` must flag that case.
//   recops_cli_corrupt SRC_DIR DST_DIR FILE
#include <filesystem>
#include <fstream>
#include <iostream>

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  if (argc != 4) {
    std::cerr << "usage: " << argv[0] << " SRC_DIR DST_DIR FILE\n";
    return 2;
  }
  std::error_code ec;
  fs::remove_all(argv[2], ec);
  fs::copy(argv[1], argv[2], fs::copy_options::recursive, ec);
  if (ec) {
    std::cerr << "cannot copy " << argv[1] << " to " << argv[2] << ": " << ec.message() << "\n";
    return 1;
  }
  const fs::path p = fs::path(argv[2]) / argv[3];
  std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(-1, std::ios::end);
  char c = 0;
  if (!f.get(c)) {
    std::cerr << "cannot read the last byte of " << p << "\n";
    return 1;
  }
  f.seekp(-1, std::ios::end);
  f.put(static_cast<char>(c ^ 0x41));  // sign/exponent bits of the last element: a wrong value
  if (!f) {
    std::cerr << "cannot write " << p << "\n";
    return 1;
  }
  std::cout << "corrupted the last byte of " << p.string() << "\n";
  return 0;
}
