// Golden files: a test's output compared with a file kept in the repository. Only
// TESSERA_UPDATE_GOLDEN=1 rewrites the file (any other value, 0 included, compares), and a rewrite
// is reported as such, never as a comparison of the file with itself.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace tessera::testing {

inline bool updating_golden() {
  const char* v = std::getenv("TESSERA_UPDATE_GOLDEN");
  return v != nullptr && std::string(v) == "1";
}

// "line N:\n  golden: ...\n  actual: ...\n" for each differing line.
inline std::string line_diff(const std::string& golden, const std::string& actual) {
  auto lines_of = [](const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  };
  std::vector<std::string> e = lines_of(golden), a = lines_of(actual);
  std::string out;
  for (size_t i = 0; i < std::max(e.size(), a.size()); ++i) {
    std::string el = i < e.size() ? e[i] : "<end of file>";
    std::string al = i < a.size() ? a[i] : "<end of file>";
    if (el != al) out += "line " + std::to_string(i + 1) + ":\n  golden: " + el + "\n  actual: " + al + "\n";
  }
  return out;
}

struct Golden {
  bool rewritten = false;  // TESSERA_UPDATE_GOLDEN=1 wrote `actual` to the file: nothing was compared
  std::string mismatch;    // empty when the file holds `actual`; else what differs
};

inline Golden compare_golden(const std::string& path, const std::string& actual) {
  Golden g;
  if (updating_golden()) {
    std::ofstream(path, std::ios::binary) << actual;
    g.rewritten = true;
    return g;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    g.mismatch = "cannot read " + path + " (TESSERA_UPDATE_GOLDEN=1 writes it)";
    return g;
  }
  std::stringstream golden;
  golden << in.rdbuf();
  if (golden.str() != actual) g.mismatch = "differs from " + path + ":\n" + line_diff(golden.str(), actual);
  return g;
}

}  // namespace tessera::testing
