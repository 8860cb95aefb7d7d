// Helpers of the `tessera check` tests: a check file written to the temporary folder, and one
// run of check_file with its counts and output.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tools/tessera/check.h"

namespace tessera::tools {

inline std::string write_temp(const std::string& name, const std::string& text) {
  std::filesystem::path p = std::filesystem::temp_directory_path() / ("tessera_check_" + name);
  std::ofstream(p) << text;
  return p.string();
}

struct CheckRun {
  CheckCounts counts;
  std::string output;
};

inline CheckRun run(const std::string& path, CheckOptions options = {}) {
  std::ostringstream out;
  CheckRun r;
  r.counts = check_file(path, out, options);
  r.output = out.str();
  return r;
}

// The 1-based line of `needle`'s first occurrence in `text` (-1: none).
inline int line_of(const std::string& text, const std::string& needle) {
  size_t at = text.find(needle);
  return at == std::string::npos ? -1
                                  : 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n'));
}

}  // namespace tessera::tools
