// Helpers shared by the autodiff tests (see autodiff_test_util.h).
#include "common/error_of.h"
#include "autodiff_test_util.h"

#include <cmath>

#include "support/error.h"

namespace tessera::autodiff::testing {

namespace {

uint64_t splitmix(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

Literal random_f64(const std::vector<int64_t>& shape, uint64_t seed, double lo, double hi, bool dyadic) {
  Literal out(Type(ir::ElementType::f64, shape));
  uint64_t state = seed * 7919 + 17;
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    double u = static_cast<double>(splitmix(state) >> 11) / static_cast<double>(1ull << 53);
    double v = lo + (hi - lo) * u;
    if (lo < 0 && hi > 0 && std::abs(v) < 0.2) v += v < 0 ? -0.2 : 0.2;
    if (dyadic) v = std::round(v * 1024) / 1024;
    out.set_double(i, v);
  }
  return out;
}

Literal ints(Type type, std::vector<int64_t> values) { return Literal::from_ints(std::move(type), values); }

std::string message_of(const std::function<void()>& f) { return tessera::testing::error_of(f); }

double dot(const Literal& a, const Literal& b) {
  double s = 0;
  for (int64_t i = 0; i < a.num_elements(); ++i) s += a.get_double(i) * b.get_double(i);
  return s;
}

std::vector<Tensor> tanh_loop(const Tensor& x) {
  Tensor zero = x.builder().scalar(ir::ElementType::i32, 0);
  return ir::while_loop(
      {zero, x},
      [](ir::Builder& b, const std::vector<Tensor>& v) {
        return ir::compare(v[0], b.scalar(ir::ElementType::i32, 3), ir::ComparisonDirection::LT);
      },
      [](ir::Builder&, const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0] + 1.0, ir::tanh(v[1])}; });
}

namespace {

bool block_contains(const ir::Block& b, OpKind kind) {
  for (const auto& op : b.ops()) {
    if (op->kind() == kind) return true;
    for (const auto& r : op->regions())
      if (block_contains(*r, kind)) return true;
  }
  return false;
}

}  // namespace

bool contains_op(const ir::Function& f, OpKind kind) { return block_contains(f.body(), kind); }

}  // namespace tessera::autodiff::testing
