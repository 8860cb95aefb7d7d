// Reading Shardy's lit test files (other projects' files, read from the conformance folder): the
// file's meshes, its functions one by one (so one that Tessera cannot parse hides no other), the
// axes an op's text names, and a sharding written as Shardy prints one.
#pragma once

#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "ir/module.h"
#include "stablehlo/parser.h"

namespace tessera::shardy_text {

inline std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The file's `sdy.mesh` lines, to put before each function parsed on its own.
inline std::string meshes(const std::string& text) {
  std::istringstream lines(text);
  std::string line, out;
  while (std::getline(lines, line))
    if (line.starts_with("sdy.mesh ")) out += line + "\n";
  return out;
}

// Each top-level function's text: from its `func.func` line to the `}` that closes it.
inline std::vector<std::string> functions(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream lines(text);
  std::string line, current;
  while (std::getline(lines, line)) {
    if (line.starts_with("func.func ")) current.clear();
    current += line + "\n";
    if (line == "}") out.push_back(current);
  }
  return out;
}

// The axes a text names: "x", "z":(2)2 -> AxisRef("x"), AxisRef("z", {2, 2}).
inline std::vector<ir::AxisRef> axes_in(const std::string& text) {
  std::vector<ir::AxisRef> out;
  std::regex axis(R"re("([A-Za-z0-9_]+)"(:\((\d+)\)(\d+))?)re");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), axis); it != std::sregex_iterator(); ++it) {
    const std::smatch& a = *it;
    if (a[2].matched) out.push_back(ir::AxisRef(a[1], ir::SubAxis{std::stoll(a[3]), std::stoll(a[4])}));
    else out.push_back(ir::AxisRef(a[1]));
  }
  return out;
}

// A sharding written as Shardy prints an op's (<@mesh, [...]>), read by our parser as an
// argument's, for a value of `type`.
inline ir::Sharding parse_sharding(const std::string& meshes, const ir::Type& type, const std::string& text) {
  std::string t = ir::to_string(type);
  std::string probe = meshes + "func.func @probe(%arg0: " + t + " {sdy.sharding = #sdy.sharding" + text + "}) -> " + t +
                      " {\n  return %arg0 : " + t + "\n}\n";
  auto m = stablehlo::parse(probe, "<probe>");
  return *m->find_function("probe")->arg_sharding(0);
}

}  // namespace tessera::shardy_text
