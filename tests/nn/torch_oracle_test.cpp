// The PyTorch oracle (label `oracle`): Tessera's training step of issue #6's configuration against
// the same model written in PyTorch (torch_oracle.py), which nobody here derived from Tessera's IR.
// This driver writes the initial weights, the batch and Tessera's results (one step's loss and
// gradients, three AdamW steps' losses and state, all from the reference interpreter) as .npy files,
// runs the script on them and passes when it reports every array within the tolerance. Skipped,
// with the reason, when no Python here imports torch (Debian: apt-get install python3-torch).
//
// Two cases: f32 (Tessera's training type; torch in f64 as the exact answer, tolerance 1e-5, and
// AdamW's lr 1e-3 and eps 1e-4 for the reason given in sharded_test.cpp: with eps 1e-8 f32
// rounding of gradients near eps decides the update), and f64 with PyTorch's AdamW defaults but
// lr 1e-2, tolerance 1e-10, which leaves no room for a differing convention (RoPE pairing, the
// norm's epsilon, bias corrections) to hide under rounding.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "interp/interpreter.h"
#include "interp/npy.h"
#include "nn/capture.h"
#include "nn_test_util.h"

namespace tessera::nn {
namespace {

namespace fs = std::filesystem;
using namespace tessera::ir;

constexpr int kAdamWSteps = 3;

struct OracleCase {
  const char* name;
  ElementType dtype;
  AdamW adamw;
  double tolerance;
};

void PrintTo(const OracleCase& c, std::ostream* os) { *os << c.name; }  // for gtest's test names

std::optional<std::string> python_with_torch() {
  std::vector<std::string> candidates;
  if (const char* p = std::getenv("PYTHON"); p != nullptr && *p != 0) candidates.emplace_back(p);
  candidates.emplace_back("/usr/bin/python3");
  for (const std::string& py : candidates)
    if (std::system(("'" + py + "' -c 'import torch, numpy' > /dev/null 2>&1").c_str()) == 0) return py;
  return std::nullopt;
}

std::string read_file(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Writes the case for torch_oracle.py into `dir`.
void write_case(const OracleCase& oc, const fs::path& dir) {
  Config c = testing::acceptance_config();
  c.dtype = oc.dtype;
  Module m("oracle");
  Programs p = capture(m, TrainingStep{CausalLM(c)}.with(oc.adamw));
  std::vector<Literal> params = init_parameters(c, 2024);
  testing::Batch batch = testing::make_batch(c, 11);
  const size_t n = p.num_parameters();
  auto save = [&](const Literal& x, const std::string& stem) { interp::save_npy(x, (dir / (stem + ".npy")).string()); };

  nlohmann::json cfg = {{"vocab", c.vocab}, {"d_model", c.d_model}, {"layers", c.layers}, {"heads", c.heads},
                        {"kv_heads", c.kv_heads}, {"ffn", c.ffn}, {"rope_theta", c.rope_theta},
                        {"norm_eps", c.norm_eps}, {"steps", kAdamWSteps}, {"tolerance", oc.tolerance}};
  cfg["adamw"] = {{"lr", oc.adamw.lr}, {"beta1", oc.adamw.beta1}, {"beta2", oc.adamw.beta2},
                  {"eps", oc.adamw.eps}, {"weight_decay", oc.adamw.weight_decay}};
  cfg["names"] = nlohmann::json::array();
  for (const ParamSpec& s : p.parameters) cfg["names"].push_back(s.name);
  std::ofstream(dir / "config.json") << cfg.dump(1);
  for (size_t i = 0; i < n; ++i) save(params[i], "param." + p.parameters[i].name);
  save(batch.tokens, "tokens");
  save(batch.targets, "targets");

  std::vector<Literal> in = params;
  in.push_back(batch.tokens);
  in.push_back(batch.targets);
  std::vector<Literal> step = interp::evaluate(m, p.step, in);
  save(step[0], "loss");
  for (size_t i = 0; i < n; ++i) save(step[1 + i], "grad." + p.parameters[i].name);

  in = train_step_inputs(p, params, 1, batch.tokens, batch.targets);
  Literal losses(f64({kAdamWSteps}));
  std::vector<Literal> out;
  for (int s = 0; s < kAdamWSteps; ++s) {
    out = interp::evaluate(m, p.train_step, in);
    losses.set_double(s, out[0].get_double(0));
    for (size_t i = 0; i < 3 * n; ++i) in[i] = out[1 + i];
    in[p.step_input()] = Literal::scalar(ElementType::i32, s + 2);
  }
  save(losses, "losses");
  for (size_t i = 0; i < n; ++i) {
    save(out[1 + i], "after." + p.parameters[i].name);
    save(out[1 + n + i], "m." + p.parameters[i].name);
    save(out[1 + 2 * n + i], "v." + p.parameters[i].name);
  }
}

class TorchOracle : public ::testing::TestWithParam<OracleCase> {};

TEST_P(TorchOracle, LossGradientsAndAdamWStepsAgree) {
  std::optional<std::string> python = python_with_torch();
  if (!python) GTEST_SKIP() << "PyTorch cannot be imported by $PYTHON nor /usr/bin/python3 (apt-get install python3-torch)";
  const char* source = std::getenv("TESSERA_SOURCE_DIR");
  ASSERT_NE(source, nullptr) << "TESSERA_SOURCE_DIR is not set (ctest sets it)";
  fs::path script = fs::path(source) / "tests/nn/torch_oracle.py";
  ASSERT_TRUE(fs::exists(script)) << script;

  std::string pattern = (fs::temp_directory_path() / "tessera-torch-XXXXXX").string();
  ASSERT_NE(mkdtemp(pattern.data()), nullptr) << "cannot create " << pattern;
  fs::path dir = pattern;
  write_case(GetParam(), dir);

  std::string command = "'" + *python + "' '" + script.string() + "' '" + dir.string() + "' > '" +
                        (dir / "output.txt").string() + "' 2>&1";
  int status = std::system(command.c_str());
  std::string output = read_file(dir / "output.txt");
  std::cout << output;
  ASSERT_EQ(status, 0) << command << "\n" << output << "(case kept in " << dir.string() << ")";
  EXPECT_NE(output.find("agrees with Tessera"), std::string::npos) << output;
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, TorchOracle,
    ::testing::Values(OracleCase{"f32", ElementType::f32, AdamW{1e-3, 0.9, 0.95, 1e-4, 0.1}, 1e-5},
                      OracleCase{"f64", ElementType::f64, AdamW{1e-2, 0.9, 0.999, 1e-8, 0.01}, 1e-10}),
    [](const ::testing::TestParamInfo<OracleCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace tessera::nn
