// Reference kernels of stablehlo.rng_bit_generator and stablehlo.rng.
//
// rng_bit_generator is XLA's generator bit for bit (prng.h); a float output holds the random bits
// as its bit pattern. rng's numbers are implementation-defined (the spec says so, and XLA defines
// no bits for it either): Tessera draws them from Philox-4x32-10 keyed by the op's source position
// (line << 32 | column; 0 for an op built in C++), with element i taking the 64 bits of counter i
// (and, for NORMAL, a second 64 bits), so an op gives the same numbers each time it runs and
// wherever it runs (a partitioned program keeps each op's position), and two ops at different
// positions draw different numbers. UNIFORM: a + (b - a)·u with u = the top 53 bits / 2^53 in
// [0, 1) for floats (a result that rounds up to b is a), a + bits mod (b - a) for integers (a when
// a >= b, where the spec leaves it undefined); NORMAL: a + b·z with z from the Box-Muller transform.
#include <cmath>
#include <cstring>
#include <numbers>

#include "interp/kernels.h"
#include "interp/prng.h"

namespace tessera::interp {

using ir::Literal;

namespace {

void store_bits(Literal& out, int64_t i, uint64_t v) {
  size_t n = static_cast<size_t>(ir::info(out.element()).bytes);
  std::memcpy(out.bytes().data() + static_cast<size_t>(i) * n, &v, n);  // little-endian: the low bytes
}

}  // namespace

Results eval_RngBitGenerator(const EvalContext& ctx) {
  auto algorithm = ir::rng_algorithm_of(ctx.op.attrs());
  if (!algorithm) ctx.fail("rng_algorithm must be #stablehlo<rng_algorithm DEFAULT|THREE_FRY|PHILOX>");
  const Literal& s = ctx.operand(0);
  std::vector<uint64_t> state(static_cast<size_t>(s.num_elements()));
  for (size_t i = 0; i < state.size(); ++i) state[i] = s.get_uint(static_cast<int64_t>(i));
  const ir::Type& type = ctx.result_type(1);
  prng::Bits bits = prng::generate(*algorithm, state, type.shape, ir::info(type.element).bits);
  Results r;
  r.emplace_back(ctx.result_type(0));
  for (size_t i = 0; i < bits.state.size(); ++i) store_bits(r[0], static_cast<int64_t>(i), bits.state[i]);
  r.emplace_back(type);
  for (size_t i = 0; i < bits.values.size(); ++i) store_bits(r[1], static_cast<int64_t>(i), bits.values[i]);
  return r;
}

Results eval_Rng(const EvalContext& ctx) {
  auto distribution = ir::rng_distribution_of(ctx.op.attrs());
  if (!distribution) ctx.fail("rng_distribution must be #stablehlo<rng_distribution UNIFORM|NORMAL>");
  const ir::Type& type = ctx.result_type();
  const Literal& shape = ctx.operand(2);
  for (int64_t d = 0; d < shape.num_elements(); ++d)
    if (shape.get_int(d) != type.shape[static_cast<size_t>(d)])
      ctx.fail("shape [{}] is not the result's shape {} (C3)", [&] {
        std::string s;
        for (int64_t k = 0; k < shape.num_elements(); ++k) s += (k ? ", " : "") + std::to_string(shape.get_int(k));
        return s;
      }(), ir::to_string(type));
  Literal out(type);
  int64_t n = out.num_elements();
  uint64_t key = (static_cast<uint64_t>(ctx.op.loc.line) << 32) | static_cast<uint32_t>(ctx.op.loc.column);
  bool normal = *distribution == ir::RngDistribution::kNormal;
  std::vector<uint64_t> state = {key, 0, 0};
  prng::Bits bits = prng::generate(ir::RngAlgorithm::kPhilox, state, {normal ? 2 * n : n}, 64);
  auto unit = [&](int64_t i) {  // [0, 1)
    return static_cast<double>(bits.values[static_cast<size_t>(i)] >> 11) * 0x1p-53;
  };
  const Literal &a = ctx.operand(0), &b = ctx.operand(1);
  if (ir::is_float(type.element)) {
    double lo = a.get_double(0), hi = b.get_double(0);
    for (int64_t i = 0; i < n; ++i) {
      if (normal) {
        double z = std::sqrt(-2 * std::log(1 - unit(2 * i))) * std::cos(2 * std::numbers::pi * unit(2 * i + 1));
        out.set_double(i, lo + hi * z);
      } else {
        out.set_double(i, lo + (hi - lo) * unit(i));
        if (lo < hi && out.get_double(i) >= hi) out.set_double(i, lo);
      }
    }
    return one(std::move(out));
  }
  // Integers and booleans: a + bits mod (b - a), in the two's complement of 64 bits.
  bool is_unsigned = ir::info(type.element).kind == ir::ElementKind::Unsigned;
  uint64_t lo = is_unsigned ? a.get_uint(0) : static_cast<uint64_t>(a.get_int(0));
  uint64_t hi = is_unsigned ? b.get_uint(0) : static_cast<uint64_t>(b.get_int(0));
  bool empty = is_unsigned ? lo >= hi : a.get_int(0) >= b.get_int(0);
  uint64_t range = hi - lo;
  for (int64_t i = 0; i < n; ++i) {
    uint64_t v = empty ? lo : lo + bits.values[static_cast<size_t>(i)] % range;
    if (is_unsigned) store_bits(out, i, v);
    else out.set_int(i, static_cast<int64_t>(v));
  }
  return one(std::move(out));
}

}  // namespace tessera::interp
