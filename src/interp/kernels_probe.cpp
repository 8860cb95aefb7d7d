// The probe ops of StableHLO's interpreter tests. interpreter.probe returns its operand and writes
// it as a .npy file `<probe_dir>/<id>_<iteration>.npy` (the id with every character but letters,
// digits, '-', '_' and '.' replaced by '_'; the iteration counts the writes of that id so far, a
// probe in a loop body writing one file per iteration); check.expect_serialized_eq reads the file
// of its id and `iter` (default 0) back and checks that it holds the value, bit for bit.
#include <filesystem>

#include "interp/kernels.h"
#include "interp/npy.h"

namespace tessera::interp {

using ir::Literal;

namespace {

std::string sanitized(std::string id) {
  for (char& c : id)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  return id;
}

std::filesystem::path probe_file(const EvalContext& ctx, int64_t iter) {
  const std::string& dir = ctx.state.options->probe_dir;
  if (dir.empty()) ctx.fail("needs a probe directory (tessera check gives one; interp::Options::probe_dir)");
  return std::filesystem::path(dir) / fmt::format("{}_{}.npy", sanitized(ctx.op.attrs().get<std::string>("probe_id")), iter);
}

}  // namespace

Results eval_Probe(const EvalContext& ctx) {
  int64_t iter = 0;
  while (std::filesystem::exists(probe_file(ctx, iter))) ++iter;
  save_npy(ctx.operand(0), probe_file(ctx, iter).string());
  return one(ctx.operand(0));
}

Results eval_ExpectSerializedEq(const EvalContext& ctx) {
  const Literal& actual = ctx.operand(0);
  int64_t iter = ctx.op.attrs().get_or<int64_t>("iter", 0);
  std::filesystem::path path = probe_file(ctx, iter);
  CheckResult r{ctx.op.loc, std::string(ctx.op.name()), true, 0, ""};
  if (!std::filesystem::exists(path)) {
    r.passed = false;
    r.detail = fmt::format("probe \"{}\" wrote no iteration {} ({} does not exist)",
                           ctx.op.attrs().get<std::string>("probe_id"), iter, path.string());
  } else {
    Literal expected = load_npy(path.string(), actual.element());
    if (!(expected == actual)) {
      r.passed = false;
      r.detail = fmt::format("{} holds {}, not the bits of this {} value", path.string(),
                             ir::to_string(expected.type()), ir::to_string(actual.type()));
    }
  }
  if (CheckLog* log = ctx.state.options->checks) log->add(std::move(r));
  else if (!r.passed) support::fail("{} at line {} failed: {}", r.check, r.loc.line, r.detail);
  return {};
}

}  // namespace tessera::interp
