// The NumPy oracle: writes inputs and expressions to a temporary folder, runs one Python script
// over all of them, and reads the results back.
#include "numpy_oracle.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "interp/npy.h"

namespace tessera::interp::testing {
namespace {

namespace fs = std::filesystem;

constexpr const char* kScript = R"PY(
import sys
import numpy as np
folder, count = sys.argv[1], int(sys.argv[2])
np.seterr(all="ignore")
for k in range(count):
    with open(f"{folder}/c{k}.txt") as f:
        n, expr = f.read().split("\n", 1)
    env = {"np": np}
    for i in range(int(n)):
        env[f"a{i}"] = np.load(f"{folder}/c{k}_a{i}.npy")
    try:
        value = np.asarray(eval(expr, env))
    except Exception as e:
        sys.exit(f"expression {k} `{expr}` failed: {type(e).__name__}: {e}")
    np.save(f"{folder}/r{k}.npy", value)
)PY";

std::string read_file(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

fs::path make_temp_folder() {
  std::string pattern = (fs::temp_directory_path() / "tessera-numpy-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot create " + pattern);
  return pattern;
}

}  // namespace

size_t NumPy::add(std::string expr, std::vector<ir::Literal> inputs) {
  jobs_.push_back({std::move(expr), std::move(inputs)});
  return jobs_.size() - 1;
}

std::vector<ir::Literal> NumPy::run() {
  std::vector<Job> jobs = std::move(jobs_);
  jobs_.clear();
  if (jobs.empty()) return {};
  fs::path folder = make_temp_folder();
  for (size_t k = 0; k < jobs.size(); ++k) {
    std::ofstream(folder / fmt::format("c{}.txt", k)) << jobs[k].inputs.size() << "\n" << jobs[k].expr;
    for (size_t i = 0; i < jobs[k].inputs.size(); ++i)
      save_npy(jobs[k].inputs[i], (folder / fmt::format("c{}_a{}.npy", k, i)).string());
  }
  std::ofstream(folder / "oracle.py") << kScript;
  const char* python = std::getenv("PYTHON");
  std::string command = fmt::format("'{}' '{}' '{}' {} 2> '{}'", python && *python ? python : "/usr/bin/python3",
                                    (folder / "oracle.py").string(), folder.string(), jobs.size(),
                                    (folder / "stderr.txt").string());
  int status = std::system(command.c_str());
  std::string errors = read_file(folder / "stderr.txt");
  std::vector<ir::Literal> results;
  try {
    if (status != 0) throw std::runtime_error("NumPy oracle failed (" + command + "): " + errors);
    for (size_t k = 0; k < jobs.size(); ++k)
      results.push_back(load_npy((folder / fmt::format("r{}.npy", k)).string()));
  } catch (...) {
    fs::remove_all(folder);
    throw;
  }
  fs::remove_all(folder);
  return results;
}

std::string numpy_dtype(ir::ElementType e) {
  // The .npy descr names the dtype exactly ('<f4'); NumPy accepts it as np.dtype('<f4').
  std::string npy = to_npy(ir::Literal(ir::Type(e, {})));
  size_t at = npy.find("'descr': '") + 10;
  return "np.dtype('" + npy.substr(at, npy.find('\'', at) - at) + "')";
}

ir::Literal numpy(std::string expr, std::vector<ir::Literal> inputs) {
  NumPy np;
  np.add(std::move(expr), std::move(inputs));
  return np.run().at(0);
}

}  // namespace tessera::interp::testing
