// tools/recops/cmd_report.cpp: `recops report RESULTS.json... --out DIR`: a Markdown + HTML
// summary and PNG plots of bench results (performance.md), drawn by bench/plot.py (matplotlib)
// with the interpreter of $RECOPS_PYTHON, else <source>/.venv/bin/python, else python3.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sys/wait.h>

#include "recops/registry.h"
#include "tools/recops/commands.h"
#include "tools/recops/common.h"

namespace recops::cli {

int run_report(const ReportOptions& o) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // A file that is not there or not readable is skipped with one line (bench/plot.py does the same
  // for a file that is not a list of timing records); none left is an error.
  std::vector<std::string> results;
  for (const auto& f : o.results) {
    if (!fs::is_regular_file(f, ec))
      std::cerr << "recops report: skipping " << f << ": no such file\n";
    else if (!std::ifstream(f).good())
      std::cerr << "recops report: skipping " << f << ": cannot read it\n";
    else
      results.push_back(f);
  }
  if (results.empty()) {
    std::cerr << "recops report: no results file to read\n";
    return 2;
  }
  // The source tree: the one holding the case files (src/ops -> its root).
  fs::path root;
  try {
    root = fs::path(ops_dir(o.cases_dir)).parent_path().parent_path();
  } catch (const std::exception& e) {
    std::cerr << "recops report: " << e.what() << "\n";
    return 2;
  }
  const fs::path script = root / "bench" / "plot.py";
  if (!fs::is_regular_file(script, ec)) {
    std::cerr << "recops report: " << script.string() << " not found\n";
    return 2;
  }
  std::string python = "python3";
  if (const char* env = std::getenv("RECOPS_PYTHON"); env && *env)
    python = env;
  else if (fs::exists(root / ".venv" / "bin" / "python", ec))
    python = (root / ".venv" / "bin" / "python").string();
  std::string cmd = shell_word(python);
  cmd.append(" ").append(shell_word(script.string()));
  for (const auto& f : results) cmd.append(" ").append(shell_word(f));
  cmd.append(" --out ").append(shell_word(o.out));
  // The family of each op (the plots' panels).
  std::string families;
  for (const auto& op : list_ops())
    families += (families.empty() ? "" : ",") + op.name + "=" + op.family;
  cmd.append(" --families ").append(shell_word(families));
  const int st = std::system(cmd.c_str());
  if (st == -1 || !WIFEXITED(st)) {
    std::cerr << "recops report: could not run " << cmd << "\n";
    return 2;
  }
  // bench/plot.py exits 3 when matplotlib is missing; other failures say what went wrong.
  if (WEXITSTATUS(st) == 3)
    std::cerr << "recops report: " << python
              << " has no matplotlib: install it there or set RECOPS_PYTHON to an interpreter "
                 "that has it\n";
  else if (WEXITSTATUS(st) != 0)
    std::cerr << "recops report: bench/plot.py exited with " << WEXITSTATUS(st) << "\n";
  return WEXITSTATUS(st) == 0 ? 0 : 1;
}

}  // namespace recops::cli
